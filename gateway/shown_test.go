package gateway_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/identity"
)

// A failed brain turn's apology is marked failed and names the message
// it answers, live and in the history; an answer that worked is not.
func TestBrainFailureMarked(t *testing.T) {
	var calls int
	flaky := brainFunc(func(context.Context, brains.Turn) (brains.Reply, error) {
		calls++ // one turn at a time per session
		if calls == 1 {
			return brains.Reply{}, errors.New("model on fire")
		}
		return brains.Reply{Text: "built"}, nil
	})
	h := newHarness(t, bot("finn", flaky))
	first := h.deliver(private("web-ann", "finn", "m1", "build it"))
	apology := h.plat.next(t)
	if !apology.Failed || apology.ReplyToID != first.MessageID {
		t.Errorf("apology: failed %v, reply to %d; want true, %d", apology.Failed, apology.ReplyToID, first.MessageID)
	}
	second := h.deliver(private("web-ann", "finn", "m2", "build it"))
	answer := h.plat.next(t)
	if answer.Failed || answer.ReplyToID != second.MessageID || answer.Text != "built" {
		t.Errorf("answer = %+v; want not failed, replying to %d", answer, second.MessageID)
	}

	msgs, err := h.gw.SessionHistory(context.Background(), "finn", "web-ann", 10)
	if err != nil || len(msgs) != 4 {
		t.Fatalf("history = %+v, %v", msgs, err)
	}
	if !msgs[1].Failed || msgs[1].ReplyToID != first.MessageID || msgs[3].Failed || msgs[0].Failed {
		t.Errorf("history marks: %+v", msgs)
	}
}

// A chat's history carries each hand-off message's delegation, in its
// status now, as the live messages do; a notice keeps the result's lines.
func TestHistoryCarriesDelegations(t *testing.T) {
	finn := scripted(t, "{{if .Delegation}}Done:\n- a form\n- a check\n- a test{{else}}Finn here{{end}}")
	h := newHarness(t,
		dbot("mattyatlas", "Matty Atlas", scripted(t, "Matty heard: {{.Text}}"), "finnshipley"),
		dbot("finnshipley", "Finn Shipley", finn),
	)
	h.gw.SetDirectory(directory(t, identity.User{ID: "user-ann", Name: "Ann", Identities: []string{"web-ann"}}))
	limits := delegation.DefaultLimits
	limits.Cooldown = 0 // two hand-offs from Matty to Finn in a row
	h.gw.SetDelegation(gateway.DelegationSettings{Limits: limits, ContextMessages: 3, Timeout: time.Minute})
	seen := watch(h)
	h.deliver(private("web-ann", "mattyatlas", "1", "Tell Finn Shipley to build the login page."))
	d := seen.until(t, delegation.StatusDone)
	h.waitDelivered()

	ctx := context.Background()
	matty, err := h.gw.SessionHistory(ctx, "mattyatlas", "web-ann", 50)
	if err != nil || len(matty) != 3 {
		t.Fatalf("Matty's history = %+v, %v", matty, err)
	}
	if matty[0].Delegation != nil {
		t.Errorf("the person's message carries a delegation: %+v", matty[0].Delegation)
	}
	for _, m := range matty[1:] {
		if m.Delegation == nil || m.Delegation.ID != d.ID || m.Delegation.Status != delegation.StatusDone ||
			m.Delegation.From != "mattyatlas" || m.Delegation.To != "finnshipley" || m.Delegation.Task != "build the login page" {
			t.Errorf("%q carries %+v; want %s done", m.Text, m.Delegation, d.ID)
		}
	}
	if want := "Finn Shipley finished: Done:\n- a form\n- a check\n- a test"; matty[2].Text != want {
		t.Errorf("notice = %q, want %q", matty[2].Text, want)
	}
	finnMsgs, err := h.gw.SessionHistory(ctx, "finnshipley", "web-ann", 50)
	if err != nil || len(finnMsgs) != 1 || finnMsgs[0].Delegation == nil || finnMsgs[0].Delegation.ID != d.ID {
		t.Errorf("Finn's history = %+v, %v", finnMsgs, err)
	}

	// In a room, the room's history carries it too.
	h.openRoom("lobby")
	h.deliver(roomEvent("web-ann", "r1", "@mattyatlas tell finn to write the docs"))
	d2 := seen.until(t, delegation.StatusDone)
	h.waitDelivered()
	room, err := h.gw.RoomHistory(ctx, "web", "lobby", "web-ann", 50)
	if err != nil {
		t.Fatal(err)
	}
	var tagged int
	for _, m := range room {
		if m.Delegation != nil && m.Delegation.ID == d2.ID && m.Delegation.Status == delegation.StatusDone {
			tagged++
		}
	}
	// Matty's acknowledgement, and Finn's answer (Finn is in the room).
	if tagged != 2 {
		t.Errorf("room history has %d messages of %s: %+v", tagged, d2.ID, room)
	}
}
