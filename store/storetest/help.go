package storetest

import (
	"context"
	"testing"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/sessions"
)

// testHelpFollowUp: a help request is a record of kind help; the
// helper's outcome stores its answer in its own session and, with the
// record done, a note in the asking bot's session that queues a turn on
// it, for the record (SPEC §10.3). The follow-up turn loads with the
// note as its message, the answer as its text and the record.
func testHelpFollowUp(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	res := appendInbound(t, s, private("ann", "matty", "m1", "how do we log in?"))
	asking := nextTurn(t, s, res.Turns[0].SessionID)
	h := handoff("dlg-h", "what's the auth pattern?", &asking)
	h.Record.Kind = delegation.KindHelp
	h.Wrapper = "HELP REQUEST FROM MATTY\nQuestion: what's the auth pattern?"
	turns, err := s.StartDelegations(ctx, []sessions.Handoff{h})
	if err != nil || len(turns) != 1 {
		t.Fatalf("start help request: %v, %v", turns, err)
	}
	// The asking bot's turn goes on meanwhile.
	complete(t, s, reply(asking, "Let me ask around."))

	helper := nextTurn(t, s, turns[0].SessionID)
	if helper.Delegation == nil || helper.Delegation.Kind != delegation.KindHelp || helper.Text != "what's the auth pattern?" {
		t.Fatalf("helper's turn %q, delegation %+v", helper.Text, helper.Delegation)
	}
	answer := "JWT with 24h expiry"
	done := complete(t, s, sessions.Outcome{
		Turn:   helper.Ref,
		Update: &delegation.Update{ID: "dlg-h", Status: delegation.StatusDone, Result: answer},
		Notes: []sessions.Note{
			{Session: helper.Ref.SessionID, Message: chat.Message{Kind: chat.KindSystem,
				From: chat.Party{Kind: chat.Bot, ID: "finn", Name: "finn"}, UserID: "ann", Bot: "finn", Text: answer, Time: now(), DelegationID: "dlg-h"}},
			{Session: asking.Ref.SessionID, FollowUp: answer, Message: chat.Message{Kind: chat.KindSystem,
				From: chat.Party{Kind: chat.System, ID: "finn", Name: "delegation"}, UserID: "ann", Bot: "matty",
				Text: "[Bot @finn answered] Question: what's the auth pattern? Answer: " + answer, Time: now(), DelegationID: "dlg-h"}},
		},
	})
	if len(done.Turns) != 1 || done.Turns[0].SessionID != asking.Ref.SessionID || len(done.Outbox) != 0 {
		t.Fatalf("helper's outcome queued %+v and sent %d, want one turn of the asking session and nothing sent", done.Turns, len(done.Outbox))
	}
	follow := nextTurn(t, s, asking.Ref.SessionID)
	if follow.Ref != done.Turns[0] || follow.Text != answer || follow.Message.Kind != chat.KindSystem ||
		follow.Delegation == nil || follow.Delegation.ID != "dlg-h" || follow.Delegation.Status != delegation.StatusDone ||
		follow.Delegation.Result != answer || follow.Delegation.Origin != asking.Message.Chat() {
		t.Errorf("follow-up turn %+v %q %+v, delegation %+v", follow.Ref, follow.Text, follow.Message, follow.Delegation)
	}
	// The follow-up sees what came before: its own earlier reply.
	if got := texts(follow.History); len(got) < 2 || got[len(got)-1] != "Let me ask around." {
		t.Errorf("follow-up history %q", got)
	}
	noTurn(t, s, helper.Ref.SessionID)
	// Neither the answer nor the note is a chat message of anyone's.
	helperMsgs, err := s.SessionMessages(ctx, helper.Ref.SessionID, chat.KindChat, 10)
	if err != nil || len(helperMsgs) != 0 {
		t.Errorf("helper's chat messages %v, %v", texts(helperMsgs), err)
	}
	if d, err := s.Delegation(ctx, "dlg-h"); err != nil || d.Kind != delegation.KindHelp || d.Status != delegation.StatusDone {
		t.Errorf("record %+v, %v", d, err)
	}
	// Its reply goes to the chat the request came from.
	o := reply(asking, "Finn says JWT.")
	o.Turn = follow.Ref
	complete(t, s, o)
	noTurn(t, s, asking.Ref.SessionID)
}
