package telegram_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/platforms/telegram"
	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
)

// TestDeliveryRetried fails the first sendMessage of a reply in each way
// Telegram can; the core retries and the reply arrives exactly once.
func TestDeliveryRetried(t *testing.T) {
	// (Send timeouts are far above a loopback call's time even on a loaded
	// machine, and the injected delay far above them: a call that merely
	// ran slow would time out, be retried and count twice.)
	h := newHarness(t, telegram.Options{SendTimeout: 2 * time.Second}, polling("tg1", tok1))
	h.ready(tok1, telegram.ModePolling)
	tests := []struct {
		name   string
		inject func()
	}{
		{"429 with retry_after", func() { h.fake.Fail("sendMessage", 1, http.StatusTooManyRequests, 1) }},
		{"500", func() { h.fake.Fail("sendMessage", 1, http.StatusInternalServerError, 0) }},
		{"502 from a proxy", func() { h.fake.Fail("sendMessage", 1, http.StatusBadGateway, 0) }},
		{"timeout", func() { h.fake.Delay("sendMessage", 1, 8*time.Second) }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			user := telegramtest.User{ID: int64(6000 + i), FirstName: "U" + strconv.Itoa(i)}
			calls := h.fake.Calls(tok1, "sendMessage")
			tt.inject()
			h.fake.Push(tok1, telegramtest.Private(user, "try"))
			h.expect(tok1, user.ID, "tg1 heard: try")
			// A second message proves nothing else was queued behind.
			h.fake.Push(tok1, telegramtest.Private(user, "again"))
			h.expect(tok1, user.ID, "tg1 heard: again")
			h.quiet(tok1)
			if n := h.fake.Calls(tok1, "sendMessage") - calls; n != 3 {
				t.Errorf("%d sendMessage calls, want 3 (one failed, two delivered)", n)
			}
		})
	}
}

// TestSendErrors checks how Send classifies each failure for the outbox.
func TestSendErrors(t *testing.T) {
	fake := telegramtest.New(t)
	fake.AddBot(tok1, 1001, "tg1_bot")
	fake.AddChat(tok1, telegramtest.PrivateChat(alice))
	fake.AddChat(tok1, telegramtest.PrivateChat(bob))
	fake.Block(tok1, bob.ID)
	p := telegram.New(telegram.Options{Limits: testLimits, SendTimeout: time.Second})
	if _, err := p.Send(context.Background(), outbox.Entry{Bot: "tg1", ChatID: "5001", Text: "hi"}); err == nil || errors.Is(err, outbox.ErrPermanent) {
		t.Fatalf("before Configure: %v, want a temporary error", err)
	}
	p.Configure([]telegram.BotConfig{{BotID: "tg1", Token: tok1, APIURL: fake.URL}})

	const (
		retry = iota
		wait
		permanent
	)
	tests := []struct {
		name   string
		inject func()
		bot    string
		chat   int64
		want   int
		after  time.Duration
	}{
		{name: "429", inject: func() { fake.Fail("sendMessage", 1, 429, 7) }, want: wait, after: 7 * time.Second},
		{name: "500", inject: func() { fake.Fail("sendMessage", 1, 500, 0) }, want: retry},
		{name: "503 html", inject: func() { fake.Fail("sendMessage", 1, 503, 0) }, want: retry},
		{name: "timeout", inject: func() { fake.Delay("sendMessage", 1, 5*time.Second) }, want: retry},
		{name: "chat not found", chat: 777, want: permanent},
		{name: "blocked", chat: bob.ID, want: permanent},
		{name: "unknown bot", bot: "nobody", want: permanent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.inject != nil {
				tt.inject()
			}
			bot, chat := "tg1", alice.ID
			if tt.bot != "" {
				bot = tt.bot
			}
			if tt.chat != 0 {
				chat = tt.chat
			}
			_, err := p.Send(context.Background(), outbox.Entry{Bot: bot, ChatID: strconv.FormatInt(chat, 10), Text: "hi"})
			var ra *outbox.RetryAfterError
			switch {
			case err == nil:
				t.Fatal("no error")
			case tt.want == wait && (!errors.As(err, &ra) || ra.After != tt.after):
				t.Fatalf("%v, want retry after %s", err, tt.after)
			case tt.want == permanent && !errors.Is(err, outbox.ErrPermanent):
				t.Fatalf("%v, want permanent", err)
			case tt.want == retry && (errors.Is(err, outbox.ErrPermanent) || errors.As(err, &ra)):
				t.Fatalf("%v, want a plain error", err)
			}
		})
	}

	t.Run("success", func(t *testing.T) {
		id, err := p.Send(context.Background(), outbox.Entry{Bot: "tg1", ChatID: "5001", Text: "hi", ReplyTo: "999"})
		if err != nil {
			t.Fatal(err)
		}
		sent := fake.Sent(tok1)
		if last := sent[len(sent)-1]; strconv.FormatInt(last.MessageID, 10) != id || last.ReplyTo != 0 {
			t.Fatalf("id %s, sent %+v (a reply to a missing message is sent as a plain one)", id, last)
		}
	})
	t.Run("typing", func(t *testing.T) {
		if err := p.Typing(context.Background(), "tg1", "5001"); err != nil {
			t.Fatal(err)
		}
		if a := fake.Actions(tok1); len(a) != 1 || a[0] != (telegramtest.ChatAction{ChatID: alice.ID, Action: "typing"}) {
			t.Fatalf("actions %+v", a)
		}
	})
	t.Run("private chat", func(t *testing.T) {
		for _, tc := range []struct {
			bot, pid, want string
			ok             bool
		}{
			{"tg1", "telegram-5001", "5001", true},
			{"tg1", "discord-5001", "", false},
			{"tg1", "telegram-x", "", false},
			{"nobody", "telegram-5001", "", false},
		} {
			got, err := p.PrivateChat(context.Background(), tc.bot, tc.pid)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("PrivateChat(%s, %s) = %q, %v", tc.bot, tc.pid, got, err)
			}
		}
	})
}

// TestSendIsPaced sends five messages into one chat with a limit of one
// per 100 ms: Send itself waits, so they take at least 400 ms.
func TestSendIsPaced(t *testing.T) {
	fake := telegramtest.New(t)
	fake.AddBot(tok1, 1001, "tg1_bot")
	fake.AddChat(tok1, telegramtest.PrivateChat(alice))
	p := telegram.New(telegram.Options{Limits: telegram.Limits{PerChat: telegram.Rate{N: 1, Per: 100 * time.Millisecond}}})
	p.Configure([]telegram.BotConfig{{BotID: "tg1", Token: tok1, APIURL: fake.URL}})
	start := time.Now()
	for i := range 5 {
		if _, err := p.Send(context.Background(), outbox.Entry{Bot: "tg1", ChatID: "5001", Text: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 390*time.Millisecond {
		t.Fatalf("5 messages in %s", d)
	}
	// Message i leaves no sooner than i×100 ms after the first Send
	// began; it may arrive later (on a loaded machine, a call can take a
	// while), so gaps between arrivals prove nothing.
	sent := fake.Sent(tok1)
	for i, m := range sent {
		if at := m.Date.Sub(start); at < time.Duration(i)*100*time.Millisecond-10*time.Millisecond {
			t.Errorf("message %d arrived %s after the first Send", i, at)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Send(ctx, outbox.Entry{Bot: "tg1", ChatID: "5001", Text: "late"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send with an ended context while paced: %v", err)
	}
}
