package telegram_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/platforms/telegram"
	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
)

// TestConfigureWhileRunning adds a bot, restarts one whose settings
// changed and removes one, each time without disturbing the others.
func TestConfigureWhileRunning(t *testing.T) {
	h := newHarness(t, telegram.Options{}, polling("tg1", tok1))
	h.fake.Push(tok1, telegramtest.Private(alice, "one"))
	h.expect(tok1, alice.ID, "tg1 heard: one")

	t.Run("add", func(t *testing.T) {
		h.t = t
		h.configure(polling("tg1", tok1), polling("tg2", tok2))
		h.fake.Push(tok2, telegramtest.Private(alice, "hi two"))
		h.expect(tok2, alice.ID, "tg2 heard: hi two")
		h.fake.Push(tok1, telegramtest.Private(alice, "two"))
		h.expect(tok1, alice.ID, "tg1 heard: two")
		if n := h.fake.Calls(tok1, "getMe"); n != 1 {
			t.Fatalf("tg1 restarted (%d getMe calls)", n)
		}
	})

	t.Run("restart changed", func(t *testing.T) {
		h.t = t
		h.configure(webhook("tg1", tok1), polling("tg2", tok2))
		h.ready(tok1, telegram.ModeWebhook)
		if n := h.fake.Calls(tok1, "getMe"); n != 2 {
			t.Fatalf("%d getMe calls for tg1, want 2", n)
		}
		if _, status, err := h.fake.DeliverWebhook(tok1, telegramtest.Private(alice, "hooked")); err != nil || status != 200 {
			t.Fatalf("webhook: %d, %v", status, err)
		}
		h.expect(tok1, alice.ID, "tg1 heard: hooked")
		h.fake.Push(tok2, telegramtest.Private(alice, "still there?"))
		h.expect(tok2, alice.ID, "tg2 heard: still there?")
		if n := h.fake.Calls(tok2, "getMe"); n != 1 {
			t.Fatalf("tg2 restarted (%d getMe calls)", n)
		}
	})

	t.Run("remove", func(t *testing.T) {
		h.t = t
		h.configure(webhook("tg1", tok1))
		if !h.fake.WaitFor(waitLong, func() bool { return !h.fake.Polling(tok2) }) {
			t.Fatal("tg2 still polls")
		}
		_, err := h.p.Send(context.Background(), outbox.Entry{Bot: "tg2", ChatID: "5001", Text: "x"})
		if !errors.Is(err, outbox.ErrPermanent) {
			t.Fatalf("send as a removed bot: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
		if h.fake.Polling(tok2) {
			t.Fatal("tg2 polls again")
		}
		h.fake.DeliverWebhook(tok1, telegramtest.Private(alice, "alone"))
		h.expect(tok1, alice.ID, "tg1 heard: alone")
	})
	h.t = t
	h.quiet(tok1)
	h.quiet(tok2)
}

// TestRestartDoesNotRepeatUpdates: a bot restarted by Configure goes on
// from the updates it handled, without seeing them again.
func TestRestartDoesNotRepeatUpdates(t *testing.T) {
	h := newHarness(t, telegram.Options{}, polling("tg1", tok1))
	h.fake.Push(tok1, telegramtest.Private(alice, "before"))
	h.expect(tok1, alice.ID, "tg1 heard: before")

	changed := polling("tg1", tok1)
	changed.APIURL = h.fake.URL + "/" // same server, other settings: a restart
	h.configure(changed)
	if !h.fake.WaitFor(waitLong, func() bool { return h.fake.Calls(tok1, "getMe") == 2 }) {
		t.Fatal("no restart")
	}
	h.ready(tok1, telegram.ModePolling)
	h.fake.Push(tok1, telegramtest.Private(alice, "after"))
	h.expect(tok1, alice.ID, "tg1 heard: after")
	h.quiet(tok1)
}
