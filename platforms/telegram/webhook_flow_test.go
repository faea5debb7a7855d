package telegram_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/platforms/telegram"
	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
)

func TestWebhook(t *testing.T) {
	h := newHarness(t, telegram.Options{}, webhook("tg1", tok1))
	h.ready(tok1, telegram.ModeWebhook)
	hook := h.fake.Webhook(tok1)
	if hook.URL != h.hookURL("tg1") || hook.Secret != secret || hook.MaxConnections != 1 {
		t.Fatalf("webhook %+v", hook)
	}
	if h.fake.Calls(tok1, "getUpdates") != 0 {
		t.Fatal("a webhook bot polled")
	}

	t.Run("good secret", func(t *testing.T) {
		h.t = t
		upd, status, err := h.fake.DeliverWebhook(tok1, telegramtest.Private(alice, "via hook"))
		if err != nil || status != http.StatusOK {
			t.Fatalf("status %d, %v", status, err)
		}
		h.expect(tok1, alice.ID, "tg1 heard: via hook")
		// Telegram retries a call it thinks failed: answered once.
		if status, err := h.fake.PostWebhook(hook.URL, secret, upd); err != nil || status != http.StatusOK {
			t.Fatalf("retry: status %d, %v", status, err)
		}
		h.fake.DeliverWebhook(tok1, telegramtest.Private(alice, "next"))
		h.expect(tok1, alice.ID, "tg1 heard: next")
		h.quiet(tok1)
	})

	t.Run("refused", func(t *testing.T) {
		h.t = t
		upd := telegramtest.Private(bob, "sneaky")
		upd.UpdateID, upd.Message.MessageID, upd.Message.Date = 9001, 1, time.Now().Unix()
		for _, tc := range []struct {
			name, url, secret string
			status            int
		}{
			{"wrong secret", hook.URL, "wrong", http.StatusUnauthorized},
			{"no secret", hook.URL, "", http.StatusUnauthorized},
			{"secret with a suffix", hook.URL, secret + "x", http.StatusUnauthorized},
			{"unknown bot", h.hookURL("nobody"), secret, http.StatusNotFound},
		} {
			status, err := h.fake.PostWebhook(tc.url, tc.secret, upd)
			if err != nil || status != tc.status {
				t.Errorf("%s: status %d, %v; want %d", tc.name, status, err, tc.status)
			}
		}
		msgs, err := h.gw.ChatHistory(context.Background(), "telegram", strconv.FormatInt(bob.ID, 10), 10)
		if err != nil || len(msgs) != 0 {
			t.Fatalf("stored %+v, %v", msgs, err)
		}
		h.quiet(tok1)
	})
}

// TestWebhookWithoutSecret: a webhook bot with no secret accepts nothing.
func TestWebhookWithoutSecret(t *testing.T) {
	cfg := webhook("tg1", tok1)
	cfg.WebhookSecret = ""
	h := newHarness(t, telegram.Options{}, cfg)
	h.ready(tok1, telegram.ModeWebhook)
	for _, s := range []string{"", "anything"} {
		upd := telegramtest.Private(alice, "hi")
		upd.UpdateID, upd.Message.MessageID = 1, 1
		if status, err := h.fake.PostWebhook(h.hookURL("tg1"), s, upd); err != nil || status != http.StatusUnauthorized {
			t.Fatalf("secret %q: status %d, %v", s, status, err)
		}
	}
}

// TestPollingBotHasNoWebhook: a polling bot's webhook path is not found.
func TestPollingBotHasNoWebhook(t *testing.T) {
	h := newHarness(t, telegram.Options{}, polling("tg1", tok1))
	upd := telegramtest.Private(alice, "hi")
	upd.UpdateID, upd.Message.MessageID = 1, 1
	if status, err := h.fake.PostWebhook(h.hookURL("tg1"), secret, upd); err != nil || status != http.StatusNotFound {
		t.Fatalf("status %d, %v", status, err)
	}
}
