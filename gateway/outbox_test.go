package gateway_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

// asyncRecorder is a recorder that also takes messages without waiting
// (gateway.AsyncSender), as the web does: done learns what Send returned,
// after hold on a goroutine of its own, or at once, inside SendAsync,
// when inline is set.
type asyncRecorder struct {
	*recorder
	hold   time.Duration
	inline bool
	calls  atomic.Int32
}

func (a *asyncRecorder) SendAsync(m gateway.Outbound, done func(error)) {
	a.calls.Add(1)
	send := func() {
		_, err := a.Send(context.Background(), m)
		done(err)
	}
	if a.inline {
		send()
		return
	}
	go func() {
		time.Sleep(a.hold)
		send()
	}()
}

func newAsyncHarness(t *testing.T, a *asyncRecorder, bots ...*gateway.Bot) *harness {
	t.Helper()
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "sb.db"), plat: a.recorder, platform: a}
	h.open(bots...)
	return h
}

// waitDelivered waits until the store has no reply pending.
func (h *harness) waitDelivered() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := h.store.PendingOutbox(context.Background())
		if err != nil {
			h.t.Fatal(err)
		}
		if len(p) == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%d replies still pending", len(p))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAsyncSender checks the outbox's hand-off to a platform that takes
// messages without waiting: the first reply of an idle chat goes out
// that way, the replies that queue behind it while it is under way go
// out after it, in order, and every one is marked sent.
func TestAsyncSender(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			a := &asyncRecorder{recorder: newRecorder("web"), hold: 20 * time.Millisecond, inline: inline}
			h := newAsyncHarness(t, a, bot("matty", echo))
			users := []string{"web-ann", "web-bob"}
			const n = 6
			for i := range n {
				for _, u := range users {
					h.deliver(private(u, "matty", fmt.Sprint(i), fmt.Sprint(u, " ", i)))
				}
			}
			next := map[string]int{}
			for range n * len(users) {
				m := h.plat.next(t)
				u, _, _ := gateway.SplitPrivateChatID(m.ChatID)
				if want := fmt.Sprint("matty: ", u, " ", next[u]); m.Text != want {
					t.Fatalf("%s got %q, want %q", u, m.Text, want)
				}
				next[u]++
			}
			if a.calls.Load() == 0 {
				t.Error("no reply was handed over without waiting")
			}
			h.waitDelivered()
			if sent := len(h.plat.all()); sent != n*len(users) {
				t.Errorf("sent %d replies, want %d", sent, n*len(users))
			}
		})
	}
}

// TestAsyncSenderFailure checks that a reply the platform could not take
// without waiting is not lost: the lane's worker tries it the usual way,
// parks it while its recipient is unreachable, and delivers it once
// when they come back.
func TestAsyncSenderFailure(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			a := &asyncRecorder{recorder: newRecorder("web"), inline: inline}
			var online atomic.Bool
			a.fail = func(gateway.Outbound) error {
				if !online.Load() {
					return gateway.ErrUnreachable
				}
				return nil
			}
			h := newAsyncHarness(t, a, bot("matty", echo))
			h.deliver(private("web-ann", "matty", "m1", "are you there"))
			time.Sleep(100 * time.Millisecond)
			if a.calls.Load() != 1 {
				t.Fatalf("SendAsync called %d times, want 1", a.calls.Load())
			}
			if n := len(h.plat.all()); n != 0 {
				t.Fatalf("sent %d while unreachable", n)
			}
			online.Store(true)
			h.gw.Reachable("web", gateway.PrivateChatID("web-ann", "matty"))
			if got := h.plat.next(t).Text; got != "matty: are you there" {
				t.Errorf("reply = %q", got)
			}
			h.waitDelivered()
			if n := len(h.plat.all()); n != 1 {
				t.Errorf("sent %d times, want once", n)
			}
		})
	}
}
