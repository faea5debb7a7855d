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
// when inline is set. Like the web, it knows messages by their
// Switchboard IDs: Send returns no platform ID.
type asyncRecorder struct {
	*recorder
	hold   time.Duration
	inline bool
	calls  atomic.Int32
}

func (a *asyncRecorder) Send(ctx context.Context, m gateway.Outbound) (string, error) {
	_, err := a.recorder.Send(ctx, m)
	return "", err
}

func (a *asyncRecorder) SendAsync(_ context.Context, m gateway.Outbound, done func(error)) {
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
			var tries atomic.Int32
			unreachable := unreachableUntil(&online)
			a.fail = func(m gateway.Outbound) error {
				tries.Add(1)
				return unreachable(m)
			}
			h := newAsyncHarness(t, a, bot("matty", echo))
			h.deliver(private("web-ann", "matty", "m1", "are you there"))
			// The hand-over failed, then the lane's worker tried with Send
			// and parked the reply.
			deadline := time.Now().Add(10 * time.Second)
			for tries.Load() < 2 {
				if time.Now().After(deadline) {
					t.Fatalf("%d tries; want the hand-over and the worker's", tries.Load())
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // no third try: it is parked
			if a.calls.Load() != 1 || tries.Load() != 2 {
				t.Fatalf("SendAsync called %d times, %d tries; want 1 and 2", a.calls.Load(), tries.Load())
			}
			if n := len(h.plat.all()); n != 0 {
				t.Fatalf("sent %d while unreachable", n)
			}
			h.comeBack(&online, "web-ann", "matty: are you there")
			h.waitDelivered()
			if n := len(h.plat.all()); n != 1 {
				t.Errorf("sent %d times, want once", n)
			}
		})
	}
}

// stuckRecorder takes messages without waiting and never sends them: its
// done hears only of the outbox's context ending, as the web's does when
// a recipient's socket is stalled at shutdown.
type stuckRecorder struct {
	*recorder
	calls atomic.Int32
}

func (s *stuckRecorder) SendAsync(ctx context.Context, _ gateway.Outbound, done func(error)) {
	s.calls.Add(1)
	context.AfterFunc(ctx, func() { done(ctx.Err()) })
}

// TestAsyncSenderStuckAtClose checks that a reply handed over without
// waiting does not hold up the gateway's shutdown, and is not lost: it
// stays pending, and the next start delivers it.
func TestAsyncSenderStuckAtClose(t *testing.T) {
	s := &stuckRecorder{recorder: newRecorder("web")}
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "sb.db"), plat: s.recorder, platform: s}
	h.open(bot("matty", echo))
	h.deliver(private("web-ann", "matty", "m1", "are you there"))
	deadline := time.Now().Add(10 * time.Second)
	for s.calls.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the reply was never handed over")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The flush gives deliveries under way until its deadline, then
	// cancels them: the hand-over ends with the outbox's context.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	h.gw.Flush(ctx)
	cancel()
	h.close()

	h.platform = nil
	h.open(bot("matty", echo))
	if got := h.plat.next(t).Text; got != "matty: are you there" {
		t.Errorf("after restart: %q", got)
	}
	h.waitDelivered()
}
