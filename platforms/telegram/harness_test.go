package telegram_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains/script"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/platforms/telegram"
	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/store/sqlite"
)

// Two bots: tg1 is @tg1_bot (user 1001), tg2 is @tg2_bot (user 1002).
const (
	tok1 = "1001:AAtg1-test-token"
	tok2 = "1002:AAtg2-test-token"
	// hook in a BotConfig's WebhookURL stands for the harness's webhook
	// server URL for that bot.
	hook   = "HOOK"
	secret = "s3cret_token-1"
	// waitLong bounds every wait for something that should happen.
	waitLong = 8 * time.Second
)

var (
	alice = telegramtest.User{ID: 5001, FirstName: "Alice", LastName: "Liddell", Username: "alice"}
	bob   = telegramtest.User{ID: 5002, FirstName: "Bob"}
	team  = telegramtest.GroupChat(-100200, "Team")
)

// testLimits keep pacing out of the way of tests that are not about it.
var testLimits = telegram.Limits{PerChat: telegram.Rate{N: -1}, PerGroup: telegram.Rate{N: -1}, PerBot: telegram.Rate{N: -1}}

// harness is the real core (gateway, SQLite store on a temp file, script
// brains) with the Telegram platform, against the fake Bot API.
type harness struct {
	t     *testing.T
	fake  *telegramtest.Server
	store *sqlite.Store
	gw    *gateway.Gateway
	p     *telegram.Platform
	// hook serves p.Handler() on loopback, as gateway.listen would.
	hook *httptest.Server
	// seen counts the sent messages each bot's next has returned.
	seen map[string]int
}

func polling(id, token string) telegram.BotConfig {
	return telegram.BotConfig{BotID: id, Token: token, Mode: telegram.ModePolling}
}

func webhook(id, token string) telegram.BotConfig {
	return telegram.BotConfig{BotID: id, Token: token, Mode: telegram.ModeWebhook, WebhookURL: hook, WebhookSecret: secret}
}

// newHarness starts everything with the bots configured before Run.
// Zero opts fields get test values (no pacing, short waits).
func newHarness(t *testing.T, opts telegram.Options, bots ...telegram.BotConfig) *harness {
	t.Helper()
	return newHarnessHost(t, opts, nil, bots...)
}

// newHarnessHost is newHarness with the platform's Host (the gateway)
// wrapped by wrap, when not nil.
func newHarnessHost(t *testing.T, opts telegram.Options, wrap func(gateway.Host) gateway.Host, bots ...telegram.BotConfig) *harness {
	t.Helper()
	h := &harness{t: t, fake: telegramtest.New(t), seen: make(map[string]int)}
	h.fake.AddBot(tok1, 1001, "tg1_bot")
	h.fake.AddBot(tok2, 1002, "tg2_bot")

	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h.store = st

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	h.gw = gateway.New(gateway.Options{Store: st, Sessions: st, Outbox: st, Logger: logger})
	h.gw.SetRoster(gateway.NewRoster([]*gateway.Bot{testBot(t, "tg1"), testBot(t, "tg2")}))

	opts.Logger = logger
	if opts.Limits == (telegram.Limits{}) {
		opts.Limits = testLimits
	}
	if opts.SendTimeout == 0 {
		opts.SendTimeout = 3 * time.Second
	}
	if opts.RetryWait == 0 {
		opts.RetryWait = 20 * time.Millisecond
	}
	h.p = telegram.New(opts)
	h.hook = httptest.NewServer(h.p.Handler())
	t.Cleanup(h.hook.Close)
	h.p.Configure(h.withHook(bots))
	h.gw.AddPlatform(h.p)
	if err := h.gw.Start(ctx); err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	var host gateway.Host = h.gw
	if wrap != nil {
		host = wrap(h.gw)
	}
	go func() { done <- h.p.Run(runCtx, host) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	t.Cleanup(func() {
		// The core's shutdown order: drain the queues, flush the outbox,
		// then stop the platform (the cleanup above).
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.gw.Drain(ctx)
		h.gw.Flush(ctx)
	})
	return h
}

// withHook points the bots at the fake Bot API (tests never reach the
// real one) and replaces the hook placeholder with the webhook server's
// URL.
func (h *harness) withHook(bots []telegram.BotConfig) []telegram.BotConfig {
	out := append([]telegram.BotConfig(nil), bots...)
	for i := range out {
		if out[i].APIURL == "" {
			out[i].APIURL = h.fake.URL
		}
		if out[i].WebhookURL == hook {
			out[i].WebhookURL = h.hookURL(out[i].BotID)
		}
	}
	return out
}

func (h *harness) hookURL(bot string) string { return h.hook.URL + "/telegram/" + bot }

// configure is Platform.Configure with the hook placeholder resolved.
func (h *harness) configure(bots ...telegram.BotConfig) { h.p.Configure(h.withHook(bots)) }

// testBot is a script bot on Telegram: "long …" is echoed as is,
// "double …" twice, anything else as "<bot> heard: <text>".
func testBot(t *testing.T, id string) *gateway.Bot {
	brain, err := script.New(script.Config{
		Rules: []script.Rule{
			{Match: `^long`, Reply: `{{.Text}}`},
			{Match: `^double`, Reply: "{{.Text}}\n\n{{.Text}}"},
		},
		Default: `{{.Bot.ID}} heard: {{.Text}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &gateway.Bot{ID: id, Name: id, Brain: brain, BrainKind: "script", Platforms: []string{gateway.PlatformTelegram},
		SessionScope: sessions.ScopeUser, Timeout: 5 * time.Second}
}

// next waits for the bot's next sent message.
func (h *harness) next(token string) telegramtest.SentMessage {
	h.t.Helper()
	n := h.seen[token]
	sent, err := h.fake.WaitSent(token, n+1, waitLong)
	if err != nil {
		h.t.Fatalf("%v: %+v", err, sent[n:])
	}
	h.seen[token] = n + 1
	return sent[n]
}

// expect waits for the bot's next message and checks its text and chat.
func (h *harness) expect(token string, chat int64, text string) telegramtest.SentMessage {
	h.t.Helper()
	m := h.next(token)
	if m.Text != text || m.ChatID != chat {
		h.t.Fatalf("sent %q to %d, want %q to %d", m.Text, m.ChatID, text, chat)
	}
	return m
}

// recorded waits until the core knows that message id of chat is a
// bot's reply (what gating a reply to it asks the store): the fake sees the
// message a moment before Send returns its ID to the outbox.
func (h *harness) recorded(chat, id int64) {
	h.t.Helper()
	deadline := time.Now().Add(waitLong)
	for time.Now().Before(deadline) {
		_, ok, err := h.store.BotOfMessage(context.Background(), gateway.PlatformTelegram, strconv.FormatInt(chat, 10), strconv.FormatInt(id, 10))
		if err != nil {
			h.t.Fatal(err)
		}
		if ok {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("message %d of chat %d never recorded as sent", id, chat)
}

// quiet checks that the bot sent nothing beyond what next returned.
func (h *harness) quiet(token string) {
	h.t.Helper()
	time.Sleep(100 * time.Millisecond)
	if sent := h.fake.Sent(token); len(sent) != h.seen[token] {
		h.t.Fatalf("unexpected messages: %+v", sent[h.seen[token]:])
	}
}

// ready waits until the bot polls (polling mode) or has set its webhook.
func (h *harness) ready(token string, mode string) {
	h.t.Helper()
	ok := h.fake.WaitFor(waitLong, func() bool {
		if mode == telegram.ModeWebhook {
			return h.fake.Webhook(token).URL != ""
		}
		return h.fake.Polling(token)
	})
	if !ok {
		h.t.Fatalf("bot %s never became ready in %s mode", token, mode)
	}
}

// testWriter sends log lines to t.Log (with -v).
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
