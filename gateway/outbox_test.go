package gateway_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
)

// TestRepliesInOrderPerChat checks that each chat gets its replies in
// the order they were stored while the platform takes its time, and that
// every one is marked delivered.
func TestRepliesInOrderPerChat(t *testing.T) {
	slow := newRecorder("web")
	slow.fail = func(outbox.Entry) error { time.Sleep(5 * time.Millisecond); return nil }
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "sb.db"), plat: slow}
	h.open(bot("matty", echo))
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
	h.waitDelivered()
	if sent := len(h.plat.all()); sent != n*len(users) {
		t.Errorf("sent %d replies, want %d", sent, n*len(users))
	}
}

// stuckRecorder's Send never delivers: it returns only when its context
// ends, as the web's does when a recipient's socket is stalled at
// shutdown.
type stuckRecorder struct {
	*recorder
	calls atomic.Int32
}

func (s *stuckRecorder) Send(ctx context.Context, _ outbox.Entry) (string, error) {
	s.calls.Add(1)
	<-ctx.Done()
	return "", ctx.Err()
}

// TestSendStuckAtClose checks that a delivery that never ends does not
// hold up the gateway's shutdown, and is not lost: it stays pending, and
// the next start delivers it.
func TestSendStuckAtClose(t *testing.T) {
	s := &stuckRecorder{recorder: newRecorder("web")}
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "sb.db"), plat: s.recorder, platform: s}
	h.open(bot("matty", echo))
	h.deliver(private("web-ann", "matty", "m1", "are you there"))
	deadline := time.Now().Add(10 * time.Second)
	for s.calls.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the reply was never sent")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The flush gives deliveries under way until its deadline, then
	// cancels them.
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
