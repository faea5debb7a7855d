package storetest

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world/chains"
)

// stepReply is the outcome of a bot answering turn with text in its chat,
// a reply to the turn's message as the gateway posts it.
func stepReply(turn sessions.Turn, text string) sessions.Outcome {
	o := reply(turn, text)
	o.Posts[0].Message.ReplyToID = turn.Message.ID
	return o
}

// testChains: a group chat's chain State is stored only over the version
// it was read at, with its answers' turns, which are chain steps that
// know their step and the person the chain started from; all of it
// survives a reopen (SPEC §10.6).
func testChains(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)

	// Ann asks Matty in the lab; Matty answers, addressing Finn.
	in := appendInbound(t, s, group("lab", "ann", "g1", "@matty what next?", "matty"))
	person := in.Message.ID
	mattyTurn := nextTurn(t, s, in.Turns[0].SessionID)
	if _, ok, err := s.ChainTurn(ctx, mattyTurn.Ref.ID); err != nil || ok {
		t.Errorf("ChainTurn of a person's turn = %v, %v; want none", ok, err)
	}
	done := complete(t, s, stepReply(mattyTurn, "@finn what do you think?"))
	first := done.Outbox[0].MessageID

	st, before, err := s.ChainState(ctx, "web", "lab", first)
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != 0 || st.Platform != "web" || st.Chat != "lab" || st.Status != chains.None || before != person {
		t.Errorf("ChainState of a new chat = %+v, person before %d (want %d)", st, before, person)
	}
	at := now()
	st.Chain, st.Status, st.Steps, st.StartedAt, st.LastAt, st.Mark = 1, chains.Active, 1, at, at, first
	st.Burst = chains.Burst{Bot: "matty", At: at, First: true, Woke: []string{"finn"}}
	st.Draws = 2
	adv := gateway.ChainAdvance{State: st, Message: first, At: at, Answers: []gateway.ChainAnswer{
		{Session: userKey("finn", "ann"), Text: "what do you think?", Step: 1},
	}}
	turns, ok, err := s.AdvanceChain(ctx, adv)
	if err != nil || !ok || len(turns) != 1 {
		t.Fatalf("AdvanceChain = %+v, %v, %v", turns, ok, err)
	}
	// The same judgement again, or any other over version 0, is refused
	// and stores nothing.
	adv.Answers = append(adv.Answers, gateway.ChainAnswer{Session: userKey("priest", "ann"), Text: "x", Step: 2})
	if again, ok, err := s.AdvanceChain(ctx, adv); err != nil || ok || len(again) != 0 {
		t.Errorf("AdvanceChain over a moved State = %+v, %v, %v; want refused", again, ok, err)
	}
	if _, found, _ := s.FindSession(ctx, userKey("priest", "ann")); found {
		t.Error("a refused judgement made Priest's session")
	}

	got, _, err := s.ChainState(ctx, "web", "lab", first+1)
	if err != nil {
		t.Fatal(err)
	}
	want := st
	want.Version, want.UpdatedAt = 1, at
	if !sameChain(got, want) {
		t.Errorf("stored State = %+v\nwant %+v", got, want)
	}

	// Finn's turn answers Matty's message, as step 1.
	finnTurn := nextTurn(t, s, turns[0].SessionID)
	if finnTurn.Ref != turns[0] || finnTurn.Message.ID != first || finnTurn.Text != "what do you think?" || finnTurn.Message.From.Kind != chat.Bot {
		t.Errorf("Finn's turn = %+v", finnTurn)
	}
	if step, ok, err := s.ChainTurn(ctx, finnTurn.Ref.ID); err != nil || !ok || step != (gateway.ChainStep{Step: 1, Person: "ann"}) {
		t.Errorf("ChainTurn of Finn's turn = %+v, %v, %v", step, ok, err)
	}
	done = complete(t, s, stepReply(finnTurn, "Matty, I'd ship it."))
	second := done.Outbox[0].MessageID

	// Finn's reply wakes Matty and Priest, Priest after Matty; the
	// second step closes the chain.
	st = got
	st.Steps, st.Status, st.Mark = 3, chains.Closed, second
	at2 := now()
	turns, ok, err = s.AdvanceChain(ctx, gateway.ChainAdvance{State: st, Message: second, At: at2, Answers: []gateway.ChainAnswer{
		{Session: userKey("matty", "ann"), Text: "Matty, I'd ship it.", Step: 2},
		{Session: userKey("priest", "ann"), Text: "Matty, I'd ship it.", Step: 3, Closing: true},
	}})
	if err != nil || !ok || len(turns) != 2 {
		t.Fatalf("second AdvanceChain = %+v, %v, %v", turns, ok, err)
	}
	priest := nextTurn(t, s, turns[1].SessionID)
	if priest.After != turns[0].ID || priest.WaitsFor != turns[0].ID {
		t.Errorf("Priest's turn comes after %d (waits for %d), want Matty's %d", priest.After, priest.WaitsFor, turns[0].ID)
	}
	hist, err := s.SessionMessages(ctx, turns[1].SessionID, "", 10)
	if err != nil || !slices.Equal(texts(hist), []string{"Matty, I'd ship it."}) {
		t.Errorf("Priest's session holds %q, %v; want Finn's message", texts(hist), err)
	}

	// A person speaks after Finn's message (the mark): they spoke since
	// the mark before a later message, not before Finn's.
	later := appendInbound(t, s, group("lab", "bob", "g2", "enough, you two"))
	if _, before, _ := s.ChainState(ctx, "web", "lab", second); before != 0 {
		t.Errorf("person since the mark before Finn's message = %d, want none", before)
	}
	if _, before, _ := s.ChainState(ctx, "web", "lab", later.Message.ID+1); before != later.Message.ID {
		t.Errorf("person since the mark before a later message = %d, want %d", before, later.Message.ID)
	}

	// After a restart: the State, the pending steps and their chain.
	s = f.Reopen(t, s)
	got, _, err = s.ChainState(ctx, "web", "lab", second+10)
	want = st
	want.Version, want.UpdatedAt = 2, at2
	if err != nil || !sameChain(got, want) {
		t.Errorf("State after reopen = %+v, %v\nwant %+v", got, err, want)
	}
	mattyStep := nextTurn(t, s, turns[0].SessionID)
	if step, ok, err := s.ChainTurn(ctx, mattyStep.Ref.ID); err != nil || !ok || step != (gateway.ChainStep{Step: 2, Person: "ann"}) {
		t.Errorf("ChainTurn of Matty's step after reopen = %+v, %v, %v", step, ok, err)
	}
	if step, ok, err := s.ChainTurn(ctx, turns[1].ID); err != nil || !ok || step != (gateway.ChainStep{Step: 3, Closing: true, Person: "ann"}) {
		t.Errorf("ChainTurn of Priest's step = %+v, %v, %v", step, ok, err)
	}

	// On Telegram each bot gets its own copy of a person's message: a
	// copy stored after the mark of a message whose first copy came
	// before it is no new message.
	// Each copy has its own message ID (as in Telegram's basic groups),
	// the same author, time and text.
	sent := now()
	copyOf := func(bot, msgID, text string) gateway.InboundResult {
		return appendInbound(t, s, gateway.Inbound{Message: chat.Message{
			Platform: "telegram", ChatID: "-100", ChatType: chat.Group, PlatformMsgID: msgID, Kind: chat.KindChat,
			From: chat.Party{Kind: chat.Human, ID: "telegram-1", Name: "Cy"}, UserID: "telegram-1", Bot: bot, Text: text, Time: sent,
		}})
	}
	msg := copyOf("matty", "5", "hi")
	other := chains.State{Platform: "telegram", Chat: "-100", Chain: 1, Status: chains.Ended, Steps: 1, LastAt: now(), Mark: msg.Message.ID}
	if _, ok, err := s.AdvanceChain(ctx, gateway.ChainAdvance{State: other, Message: msg.Message.ID, At: now()}); err != nil || !ok {
		t.Fatalf("AdvanceChain of another chat = %v, %v", ok, err)
	}
	finnsCopy := copyOf("finn", "6", "hi")
	if _, before, err := s.ChainState(ctx, "telegram", "-100", finnsCopy.Message.ID+1); err != nil || before != 0 {
		t.Errorf("a late copy counts as a new message: %d, %v", before, err)
	}
	copyOf("finn", "7", "and now?")
	fresh := copyOf("matty", "8", "and now?")
	if _, before, err := s.ChainState(ctx, "telegram", "-100", fresh.Message.ID+1); err != nil || before != fresh.Message.ID {
		t.Errorf("person since the mark = %d, %v; want %d (the newest copy of a new message)", before, err, fresh.Message.ID)
	}

	// Another chat has a State of its own; the list is newest first.
	list, err := s.Chains(ctx, 10)
	if err != nil || len(list) != 2 || list[0].Platform != "telegram" || list[1].Chat != "lab" || list[1].ChatName != "lab" {
		t.Errorf("Chains = %+v, %v", list, err)
	}
	if list, err := s.Chains(ctx, 1); err != nil || len(list) != 1 {
		t.Errorf("Chains(1) = %d, %v", len(list), err)
	}
}

// sameChain compares two States to the microsecond a store keeps.
func sameChain(a, b chains.State) bool {
	norm := func(s *chains.State) {
		for _, t := range []*time.Time{&s.StartedAt, &s.LastAt, &s.Burst.At, &s.UpdatedAt} {
			*t = t.Truncate(time.Microsecond).UTC()
		}
		if len(s.Burst.Woke) == 0 {
			s.Burst.Woke = nil
		}
	}
	norm(&a)
	norm(&b)
	return reflect.DeepEqual(a, b)
}
