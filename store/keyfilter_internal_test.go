package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

func TestKeyFilterNeverForgetsAKey(t *testing.T) {
	f := newKeyFilter(0)
	key := func(i int) inboundKey {
		return inboundKey{"web", "matty", fmt.Sprintf("web-v%d:matty", i%500), fmt.Sprint(i)}
	}
	const added = 200_000
	for i := range added {
		f.add(key(i))
	}
	if !f.mayHave(key(added + 1)) {
		t.Fatal("a filter not yet ready said no")
	}
	f.ready.Store(true)
	for i := range added {
		if !f.mayHave(key(i)) {
			t.Fatalf("key %d was added and the filter says no", i)
		}
	}
	maybe := 0
	for i := added; i < 2*added; i++ {
		if f.mayHave(key(i)) {
			maybe++
		}
	}
	// A fifth of its capacity: far under the 1% of a full filter.
	if rate := float64(maybe) / added; rate > 0.002 {
		t.Errorf("the filter says maybe of %.2f%% of new keys", 100*rate)
	}
	if got := f.spared.Load(); got != int64(added-maybe) {
		t.Errorf("spared = %d, want %d", got, added-maybe)
	}
}

// TestKeyFilterKnowsEarlierRuns stores messages, opens the store again,
// and checks that once the filter has read the stored keys a duplicate
// from the earlier run is still found and a new message is not looked
// up.
func TestKeyFilterKnowsEarlierRuns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sb.db")
	in := func(id string) gateway.Inbound {
		return gateway.Inbound{Event: gateway.Event{
			Platform: "web", Bot: "matty", ChatID: "web-ann:matty", ChatType: gateway.ChatPrivate,
			MessageID: id, Sender: gateway.Sender{PlatformID: "web-ann", Name: "Ann"}, Text: "hi " + id,
			Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		}, UserID: "user-ann", UserName: "Ann"}
	}
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := s.AppendInbound(ctx, in(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for deadline := time.Now().Add(5 * time.Second); !s.keys.ready.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the filter did not read the stored keys")
		}
	}
	for _, id := range []string{"0", "17", "49"} {
		res, err := s.AppendInbound(ctx, in(id))
		if err != nil || !res.Duplicate {
			t.Fatalf("message %s again after a restart: %+v, %v; want a duplicate", id, res, err)
		}
	}
	spared := s.keys.spared.Load()
	res, err := s.AppendInbound(ctx, in("50"))
	if err != nil || res.Duplicate {
		t.Fatalf("a new message: %+v, %v", res, err)
	}
	if s.keys.spared.Load() != spared+1 {
		t.Error("a new message's key was looked up")
	}
	// Its key is known at once, written or not.
	if res, err := s.AppendInbound(ctx, in("50")); err != nil || !res.Duplicate {
		t.Fatalf("message 50 again: %+v, %v; want a duplicate", res, err)
	}
}
