package discordtest_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-chat/switchboard/platforms/discord/discordtest"
)

// session is a discordgo REST client whose requests for discord.com go to
// the fake.
func session(t *testing.T, srv *discordtest.Server, token string) *discordgo.Session {
	t.Helper()
	s, err := discordgo.New("Bot " + token)
	if err != nil {
		t.Fatal(err)
	}
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 0
	s.Client = &http.Client{Transport: rewrite{srv.URL()}, Timeout: 5 * time.Second}
	return s
}

// rewrite sends requests for discord.com to the fake.
type rewrite struct{ base string }

func (r rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host = "http", strings.TrimPrefix(r.base, "http://")
	out.Host = ""
	return http.DefaultTransport.RoundTrip(out)
}

func TestREST(t *testing.T) {
	srv := discordtest.New(t)
	srv.AddBot("tok", "9001", "matty")
	s := session(t, srv, "tok")

	me, err := s.User("@me")
	if err != nil || me.ID != "9001" || !me.Bot {
		t.Fatalf("GET /users/@me = %+v, %v", me, err)
	}
	gw, err := s.Gateway()
	if err != nil || gw != srv.GatewayURL()+"/" {
		t.Fatalf("GET /gateway = %q, %v; want %s/", gw, err, srv.GatewayURL())
	}

	// Multipart, with a reference to a message the fake knows.
	first, err := s.ChannelMessageSend("1", "first")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.ChannelMessageSendComplex("1", &discordgo.MessageSend{
		Content:   "with a file",
		Files:     []*discordgo.File{{Name: "a.txt", ContentType: "text/plain", Reader: strings.NewReader("hi")}},
		Reference: first.Reference(),
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := srv.Sent()
	if len(sent) != 2 || !sent[1].Multipart || sent[1].ReplyTo != first.ID || sent[1].Content != "with a file" {
		t.Fatalf("sent %+v", sent)
	}

	// Bad requests.
	badRequest := func(name string, err error) {
		var re *discordgo.RESTError
		if !errors.As(err, &re) || re.Response.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %v, want 400", name, err)
		}
	}
	_, err = s.ChannelMessageSend("2", strings.Repeat("x", 2001))
	badRequest("2001 characters", err)
	_, err = s.ChannelMessageSend("2", " ")
	badRequest("empty", err)
	_, err = s.ChannelMessageSendReply("2", "hi", &discordgo.MessageReference{MessageID: "404"})
	badRequest("unknown reference", err)

	// Unknown token.
	_, err = session(t, srv, "nope").User("@me")
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Response.StatusCode != http.StatusUnauthorized {
		t.Errorf("unknown token: %v, want 401", err)
	}

	// DMs: one channel per (bot, user).
	dm, err := s.UserChannelCreate("111")
	if err != nil || dm.ID != srv.DMChannel("tok", "111") {
		t.Fatalf("DM channel %+v, %v", dm, err)
	}
	if err := s.ChannelTyping(dm.ID); err != nil || srv.Typing(dm.ID) != 1 {
		t.Fatalf("typing: %v, count %d", err, srv.Typing(dm.ID))
	}
}

// TestRateLimit: the sixth message in a channel within the window is a
// 429 with retry_after; the X-RateLimit headers count down before it.
func TestRateLimit(t *testing.T) {
	srv := discordtest.New(t)
	srv.AddBot("tok", "9001", "matty")
	srv.SetRateLimit(5, time.Minute)
	s := session(t, srv, "tok")
	s.Ratelimiter = discordgo.NewRatelimiter()
	for i := range 5 {
		if _, err := s.ChannelMessageSend("1", "x"); err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
	}
	// discordgo's own limiter read Remaining: 0 and would sleep; a fresh
	// one sends and meets the fake's 429.
	s.Ratelimiter = discordgo.NewRatelimiter()
	_, err := s.ChannelMessageSend("1", "x")
	var rl *discordgo.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter <= 50*time.Second {
		t.Fatalf("sixth message: %v, want a rate limit of about a minute", err)
	}
	if _, err := s.ChannelMessageSend("2", "x"); err != nil {
		t.Fatalf("another channel: %v", err)
	}

	srv.Fail(discordtest.RouteCreateMessage, 1, http.StatusTooManyRequests, 0.25)
	_, err = s.ChannelMessageSend("3", "x")
	if !errors.As(err, &rl) || rl.RetryAfter != 250*time.Millisecond {
		t.Fatalf("injected 429: %v, want retry after 250ms", err)
	}
	if n := srv.Requests(discordtest.RouteCreateMessage); n != 8 {
		t.Errorf("%d requests counted, want 8", n)
	}
}
