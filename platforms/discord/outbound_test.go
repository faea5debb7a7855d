package discord_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/platforms/discord"
	"github.com/switchboard-chat/switchboard/platforms/discord/discordtest"
)

func TestLongReplies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discord.Options{}, "matty")

	m := e.srv.DM(mattyToken, alice, "long")
	e.srv.Dispatch(mattyToken, m)
	got := e.expect(m.ChannelID, longReply)
	if n := utf8.RuneCountInString(got.Content); n != discord.MaxMessageLength {
		t.Errorf("long reply has %d characters, want %d", n, discord.MaxMessageLength)
	}

	e.srv.Dispatch(mattyToken, e.srv.DM(mattyToken, alice, "split"))
	first, second := e.next(), e.next()
	for _, p := range []discordtest.SentMessage{first, second} {
		if n := utf8.RuneCountInString(p.Content); n > discord.MaxMessageLength || n == 0 {
			t.Errorf("part of %d characters, want 1..%d", n, discord.MaxMessageLength)
		}
	}
	if joined := first.Content + " " + second.Content; joined != splitReply {
		t.Errorf("parts do not add up to the reply:\n%q\n%q", first.Content, second.Content)
	}
	e.quiet(200 * time.Millisecond)
}

// TestDeliveryRetried: failures of the create-message route are retried
// by the core's outbox, and the reply is posted exactly once.
func TestDeliveryRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		inject func(*discordtest.Server)
		// attempts is the number of create-message requests expected.
		attempts int
	}{
		{"429 then success", func(s *discordtest.Server) {
			s.Fail(discordtest.RouteCreateMessage, 1, http.StatusTooManyRequests, 0.3)
		}, 2},
		{"500 then success", func(s *discordtest.Server) {
			s.Fail(discordtest.RouteCreateMessage, 1, http.StatusInternalServerError, 0)
		}, 2},
		{"502 twice then success", func(s *discordtest.Server) { s.Fail(discordtest.RouteCreateMessage, 2, http.StatusBadGateway, 0) }, 3},
		{"timeout then success", func(s *discordtest.Server) { s.Delay(discordtest.RouteCreateMessage, 1, 3*time.Second) }, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, discord.Options{RequestTimeout: 500 * time.Millisecond}, "matty")
			tt.inject(e.srv)
			m := e.srv.DM(mattyToken, alice, "retry me")
			e.srv.Dispatch(mattyToken, m)
			e.expect(m.ChannelID, "Matty heard: retry me")
			e.quiet(300 * time.Millisecond)
			if n := len(e.srv.Sent()); n != 1 {
				t.Errorf("%d messages posted, want 1", n)
			}
			if n := e.srv.Requests(discordtest.RouteCreateMessage); n != tt.attempts {
				t.Errorf("%d create-message requests, want %d", n, tt.attempts)
			}
		})
	}
}

// TestSendErrors checks how Send classifies failures for the outbox. It
// needs no gateway connection: Send is REST only.
func TestSendErrors(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t)
	srv.AddBot(mattyToken, mattyUser, "matty")
	p := discord.New(discord.Options{Logger: testLogger(), RequestTimeout: 300 * time.Millisecond})
	p.Configure([]discord.BotConfig{{BotID: "matty", Token: mattyToken, APIURL: srv.APIURL()}})

	// A closed port: connection refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/api/v9"
	ln.Close()
	deadP := discord.New(discord.Options{Logger: testLogger()})
	deadP.Configure([]discord.BotConfig{{BotID: "matty", Token: mattyToken, APIURL: dead}})

	const (
		ok = iota
		retry
		retryAfter
		permanent
	)
	tests := []struct {
		name    string
		p       *discord.Platform
		bot     string
		inject  func()
		want    int
		wantDur time.Duration
	}{
		{name: "success", p: p, bot: "matty", want: ok},
		{name: "429 with retry_after", p: p, bot: "matty", inject: func() { srv.Fail(discordtest.RouteCreateMessage, 1, 429, 1.5) }, want: retryAfter, wantDur: 1500 * time.Millisecond},
		{name: "500", p: p, bot: "matty", inject: func() { srv.Fail(discordtest.RouteCreateMessage, 1, 500, 0) }, want: retry},
		{name: "502", p: p, bot: "matty", inject: func() { srv.Fail(discordtest.RouteCreateMessage, 1, 502, 0) }, want: retry},
		{name: "503", p: p, bot: "matty", inject: func() { srv.Fail(discordtest.RouteCreateMessage, 1, 503, 0) }, want: retry},
		{name: "timeout", p: p, bot: "matty", inject: func() { srv.Delay(discordtest.RouteCreateMessage, 1, 2*time.Second) }, want: retry},
		{name: "connection refused", p: deadP, bot: "matty", want: retry},
		{name: "400", p: p, bot: "matty", inject: func() { srv.Fail(discordtest.RouteCreateMessage, 1, 400, 0) }, want: permanent},
		{name: "403", p: p, bot: "matty", inject: func() { srv.Fail(discordtest.RouteCreateMessage, 1, 403, 0) }, want: permanent},
		{name: "404", p: p, bot: "matty", inject: func() { srv.Fail(discordtest.RouteCreateMessage, 1, 404, 0) }, want: permanent},
		{name: "unknown bot", p: p, bot: "nobody", want: permanent},
	}
	// One at a time: injected failures apply to the next request.
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.inject != nil {
				tt.inject()
			}
			channel := fmt.Sprint(7000 + i)
			id, err := tt.p.Send(context.Background(), outbox.Entry{Bot: tt.bot, ChatID: channel, Text: "hi"})
			var ra *outbox.RetryAfterError
			switch tt.want {
			case ok:
				if err != nil || id == "" {
					t.Fatalf("Send = %q, %v; want a message ID", id, err)
				}
			case retryAfter:
				if !errors.As(err, &ra) || ra.After != tt.wantDur {
					t.Fatalf("Send error = %v; want RetryAfterError after %s", err, tt.wantDur)
				}
			case retry:
				if err == nil || errors.As(err, &ra) || errors.Is(err, outbox.ErrPermanent) {
					t.Fatalf("Send error = %v; want a plain, retryable error", err)
				}
			case permanent:
				if !errors.Is(err, outbox.ErrPermanent) {
					t.Fatalf("Send error = %v; want ErrPermanent", err)
				}
			}
		})
	}
}

// TestRetryAfterFromHeaders: a 429 whose body is not JSON still waits what
// its headers say.
func TestRetryAfterFromHeaders(t *testing.T) {
	t.Parallel()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.Header().Set("X-RateLimit-Reset-After", "2.5")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte("slow down"))
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	p := discord.New(discord.Options{Logger: testLogger()})
	p.Configure([]discord.BotConfig{{BotID: "matty", Token: "t", APIURL: "http://" + ln.Addr().String()}})
	_, err = p.Send(context.Background(), outbox.Entry{Bot: "matty", ChatID: "1", Text: "hi"})
	var ra *outbox.RetryAfterError
	if !errors.As(err, &ra) || ra.After != 2500*time.Millisecond {
		t.Fatalf("Send error = %v; want RetryAfterError after 2.5s", err)
	}
}

func TestPrivateChat(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t)
	srv.AddBot(mattyToken, mattyUser, "matty")
	p := discord.New(discord.Options{Logger: testLogger()})
	p.Configure([]discord.BotConfig{{BotID: "matty", Token: mattyToken, APIURL: srv.APIURL()}})
	ctx := context.Background()

	ch, err := p.PrivateChat(ctx, "matty", "discord-777")
	if err != nil {
		t.Fatal(err)
	}
	if want := srv.DMChannel(mattyToken, "777"); ch != want {
		t.Errorf("DM channel %q, want %q", ch, want)
	}
	again, err := p.PrivateChat(ctx, "matty", "discord-777")
	if err != nil || again != ch {
		t.Errorf("second PrivateChat = %q, %v; want %q", again, err, ch)
	}
	if n := srv.Requests(discordtest.RouteCreateDM); n != 1 {
		t.Errorf("%d DM channels opened, want 1 (cached)", n)
	}
	// The bot can write first.
	if _, err := p.Send(ctx, outbox.Entry{Bot: "matty", ChatID: ch, Text: "hello from matty"}); err != nil {
		t.Fatal(err)
	}
	if sent := srv.Sent(); len(sent) != 1 || sent[0].ChannelID != ch {
		t.Errorf("sent %+v, want one message in %s", sent, ch)
	}

	for _, pid := range []string{"telegram-777", "discord-", "discord-abc", "web-777"} {
		if _, err := p.PrivateChat(ctx, "matty", pid); err == nil {
			t.Errorf("PrivateChat(%q) succeeded, want an error", pid)
		}
	}
	if _, err := p.PrivateChat(ctx, "nobody", "discord-777"); !errors.Is(err, outbox.ErrPermanent) {
		t.Errorf("PrivateChat for an unknown bot: %v, want ErrPermanent", err)
	}
}

// TestSendPacesPerChannel: with a pace of 2 per 400 ms, a third message in
// one channel waits, another channel does not, and a cancelled wait
// returns the context's error.
func TestSendPacesPerChannel(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t)
	srv.AddBot(mattyToken, mattyUser, "matty")
	srv.SetRateLimit(100, time.Second)
	p := discord.New(discord.Options{Logger: testLogger(), Pace: discord.Pace{Messages: 2, Per: 400 * time.Millisecond}})
	p.Configure([]discord.BotConfig{{BotID: "matty", Token: mattyToken, APIURL: srv.APIURL()}})
	ctx := context.Background()
	send := func(ctx context.Context, ch string) error {
		_, err := p.Send(ctx, outbox.Entry{Bot: "matty", ChatID: ch, Text: "x"})
		return err
	}
	start := time.Now()
	for range 2 {
		if err := send(ctx, "1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := send(ctx, "2"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 150*time.Millisecond {
		t.Errorf("first sends took %s; they should not wait", d)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := send(short, "1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("paced send with a short deadline: %v, want DeadlineExceeded", err)
	}
	if err := send(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("third send in one channel after %s; it should wait for the pace", d)
	}
	if n := len(srv.Sent()); n != 4 {
		t.Errorf("%d messages posted, want 4", n)
	}
}

// TestTypingSkippedWhenLimited: once the channel's typing bucket is
// spent, Typing returns at once instead of sleeping in discordgo's limiter.
func TestTypingSkippedWhenLimited(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t)
	srv.AddBot(mattyToken, mattyUser, "matty")
	srv.SetRateLimit(1, time.Minute)
	p := discord.New(discord.Options{Logger: testLogger()})
	p.Configure([]discord.BotConfig{{BotID: "matty", Token: mattyToken, APIURL: srv.APIURL()}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for range 3 {
		if err := p.Typing(ctx, "matty", "1"); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Typing("1"); n != 1 {
		t.Errorf("%d typing requests reached Discord, want 1", n)
	}
}
