package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/internal/pgtest"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/store/postgres"
	"github.com/switchboard-chat/switchboard/world/shared"
)

// TestProgressNotice: a running delegation's progress, set on one
// instance, is announced to the others as a change of the delegation,
// and they read the new progress (SPEC §10.7).
func TestProgressNotice(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, _, _ := member(t, url)
	b, _, _ := member(t, url)
	heard := make(chan gateway.Notice, 10)
	ready := make(chan struct{})
	go b.Listen(ctx, func(n gateway.Notice) { heard <- n }, func(context.Context) {}, ready)
	<-ready

	h := sessions.Handoff{
		Record: delegation.Record{ID: "dlg-1", Kind: delegation.KindHandoff, From: "matty", To: "finn", UserID: "ann",
			Task: "research", Depth: 1, Status: delegation.StatusQueued, Space: "chat:web:lab"},
		Target:      sessions.Key{Bot: "finn", Scope: sessions.ScopeUser, ScopeID: "ann"},
		FromSession: &sessions.Key{Bot: "matty", Scope: sessions.ScopeUser, ScopeID: "ann"},
		Wrapper:     "DELEGATED TASK: research",
	}
	if _, err := a.StartDelegations(ctx, []sessions.Handoff{h}); err != nil {
		t.Fatal(err)
	}
	if err := a.UpdateDelegation(ctx, delegation.Update{ID: "dlg-1", Status: delegation.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	// The notices of the start and the status change first.
	drain := time.After(time.Second)
	for done := false; !done; {
		select {
		case <-heard:
		case <-drain:
			done = true
		}
	}
	p := delegation.Progress{Text: "Step one", Step: 1, Total: 3}
	if err := a.SetDelegationProgress(ctx, "dlg-1", p); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-heard:
		if n.Kind != gateway.NoticeDelegation || n.Delegation != "dlg-1" || n.New {
			t.Fatalf("B heard %+v", n)
		}
		d, err := b.Delegation(ctx, n.Delegation)
		if err != nil || d.Progress == nil || *d.Progress != p || d.Ref().Progress == nil {
			t.Fatalf("the announced record = %+v, %v", d, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("B heard nothing of A's progress")
	}
}

// TestContextNotice: a change of a group's context on one instance is
// announced to the others with its space; a person's private space's is
// not.
func TestContextNotice(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, _, _ := member(t, url)
	b, _, _ := member(t, url)
	heard := make(chan gateway.Notice, 10)
	ready := make(chan struct{})
	go b.Listen(ctx, func(n gateway.Notice) { heard <- n }, func(context.Context) {}, ready)
	<-ready
	if _, err := a.AddEvent(ctx, shared.Event{Space: "user:ann", Bot: "matty", Text: "private"}); err != nil {
		t.Fatal(err)
	}
	for _, add := range []func() error{
		func() error {
			_, err := a.AddEvent(ctx, shared.Event{Space: "chat:web:lab", Bot: "matty", Text: "kickoff"})
			return err
		},
		func() error {
			_, err := a.MergeEntity(ctx, shared.Entity{Space: "chat:web:lab", Name: "x", Attributes: json.RawMessage(`{"a":1}`), UpdatedBy: "matty"})
			return err
		},
		func() error {
			_, err := a.PutFact(ctx, shared.Fact{Space: "chat:web:lab", Subject: "x", Predicate: "p", Object: "o", Confidence: 1, Bot: "matty"})
			return err
		},
	} {
		if err := add(); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-heard:
			if n.Kind != gateway.NoticeContext || n.Space != "chat:web:lab" {
				t.Fatalf("B heard %+v", n)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("B heard nothing of A's change")
		}
	}
}

// TestAttributesWithoutNUL: jsonb holds no NUL character: the store
// makes each one of an entity's attributes U+FFFD, as it does with text,
// rather than refuse them, and a literal backslash-u text stays.
func TestAttributesWithoutNUL(t *testing.T) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, err := s.MergeEntity(ctx, shared.Entity{Space: "chat:web:lab", Name: "x", UpdatedBy: "finn",
		Attributes: json.RawMessage(`{"a\u0000": ["b\u0000c", {"d": "\u0000"}], "lit": "\\u0000"}`)})
	// Go's \uFFFD is the character itself: what the store writes.
	want := "{\"a\uFFFD\":[\"b\uFFFDc\",{\"d\":\"\uFFFD\"}],\"lit\":\"\\\\u0000\"}"
	if err != nil || string(e.Attributes) != want {
		t.Fatalf("merged = %s, %v; want %s", e.Attributes, err, want)
	}
	c, err := s.SharedContext(ctx, "chat:web:lab", shared.Limits{Entities: 1})
	if err != nil || len(c.Entities) != 1 || string(c.Entities[0].Attributes) != want {
		t.Errorf("read back = %+v, %v", c.Entities, err)
	}
}
