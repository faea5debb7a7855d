package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

// testFocus: a person's focus in a group chat is set, replaced, dated by
// their messages there (never back in time), kept across a reopen and
// ended; it is per person and chat (SPEC §10.3).
func testFocus(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	ann := gateway.FocusKey{Platform: "web", ChatID: "lab", Person: "web-ann"}
	bob := gateway.FocusKey{Platform: "web", ChatID: "lab", Person: "web-bob"}
	elsewhere := gateway.FocusKey{Platform: "telegram", ChatID: "lab", Person: "web-ann"}
	get := func(s Store, k gateway.FocusKey) (gateway.Focus, bool) {
		t.Helper()
		f, ok, err := s.Focus(ctx, k)
		if err != nil {
			t.Fatalf("focus %+v: %v", k, err)
		}
		return f, ok
	}
	set := func(k gateway.FocusKey, bot string, at time.Time) {
		t.Helper()
		if err := s.SetFocus(ctx, k, bot, at); err != nil {
			t.Fatalf("set focus %+v: %v", k, err)
		}
	}
	if _, ok := get(s, ann); ok {
		t.Fatal("a focus before any was set")
	}
	at := now()
	set(ann, "matty", at)
	if f, ok := get(s, ann); !ok || f.Bot != "matty" || !f.Seen.Equal(at) {
		t.Errorf("focus = %+v, %v; want matty at %v", f, ok, at)
	}
	for _, k := range []gateway.FocusKey{bob, elsewhere} {
		if f, ok := get(s, k); ok {
			t.Errorf("focus of %+v = %+v, want none", k, f)
		}
	}
	later := now()
	set(ann, "finn", later)
	if f, _ := get(s, ann); f.Bot != "finn" || !f.Seen.Equal(later) {
		t.Errorf("replaced focus = %+v", f)
	}

	// A message of ann in the chat dates it; one of bob leaves it.
	in := group("lab", "ann", "g1", "and now?")
	in.Focused = &ann
	appendInbound(t, s, in)
	if f, _ := get(s, ann); f.Bot != "finn" || !f.Seen.Equal(in.Message.Time) {
		t.Errorf("focus after ann spoke = %+v, want seen %v", f, in.Message.Time)
	}
	// Redelivered late, or sent with an older clock: never back in time.
	old := group("lab", "ann", "g0", "earlier")
	old.Message.Time = at
	old.Focused = &ann
	appendInbound(t, s, old)
	if f, _ := get(s, ann); !f.Seen.Equal(in.Message.Time) {
		t.Errorf("focus dated back to %v", f.Seen)
	}
	// A focus that is gone stays gone.
	other := group("lab", "bob", "g2", "me too")
	other.Focused = &bob
	appendInbound(t, s, other)
	if _, ok := get(s, bob); ok {
		t.Error("a message made bob a focus")
	}

	s = f.Reopen(t, s)
	if f, ok := get(s, ann); !ok || f.Bot != "finn" {
		t.Errorf("focus after reopen = %+v, %v", f, ok)
	}
	if err := s.SetFocus(ctx, ann, "", now()); err != nil {
		t.Fatal(err)
	}
	if _, ok := get(s, ann); ok {
		t.Error("an ended focus is still there")
	}
	if err := s.SetFocus(ctx, ann, "", now()); err != nil {
		t.Errorf("ending no focus: %v", err)
	}
}
