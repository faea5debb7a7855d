package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

// TestExchangeAfterCrash: an exchange's row whose link and dedupe key
// waited in the link log when the process died is linked when the store
// opens again, from what the row carries; the message delivered again is
// a duplicate of the person's message, and the reply, not yet marked
// sent, is in the outbox with its ID.
func TestExchangeAfterCrash(t *testing.T) {
	ctx := context.Background()
	s, path := openWithoutRounds(t)
	in := gateway.Inbound{
		Event: gateway.Event{Platform: "web", Bot: "matty", ChatID: "web-ann:matty", ChatType: gateway.ChatPrivate,
			MessageID: "1", Sender: gateway.Sender{PlatformID: "web-ann"}, Text: "hello", Time: time.Now()},
		UserID: "user-ann", UserName: "Ann",
		Turns: []gateway.TurnRequest{{Session: gateway.SessionKey{Bot: "matty", Scope: gateway.ScopeUser, ScopeID: "user-ann"}, Text: "hello"}},
	}
	first, err := s.AppendInbound(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	sid := first.Turns[0].SessionID
	d, err := s.LoadTurn(ctx, first.Turns[0].ID, 20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompleteTurn(ctx, gateway.Completion{Turn: d.Ref, Session: sid}); err != nil {
		t.Fatal(err)
	}
	var exchanges []gateway.InboundResult
	for _, id := range []string{"2", "3"} {
		in := in
		in.Event.MessageID, in.Event.Text = id, "message "+id
		_, latest, ok := s.PeekSession(in.Turns[0].Session, 20)
		if !ok {
			t.Fatal("session not cached")
		}
		c := gateway.Completion{Session: sid, Posts: []gateway.Post{{Session: sid, Message: gateway.Message{
			Platform: "web", ChatID: "web-ann:matty", ChatType: gateway.ChatPrivate, Kind: gateway.KindChat,
			From: gateway.Party{Kind: "bot", ID: "matty", Name: "Matty"}, UserID: "user-ann", Bot: "matty",
			Text: "reply " + id, ReplyTo: id, Time: time.Now(),
		}}}}
		res, done, err := s.AppendAnswered(ctx, in, c, latest)
		if err != nil || len(done.Outbox) != 1 || done.Outbox[0].MessageID != res.Message.ID+1 {
			t.Fatalf("exchange %s: %+v, %+v, %v", id, res, done, err)
		}
		exchanges = append(exchanges, res)
	}
	s, waited := crashAndReopen(t, s, path)
	if waited < 2*2 { // each exchange: its link and its key
		t.Fatalf("%d entries waited; want the exchanges'", waited)
	}
	checkIndexes(t, s)
	for i, res := range exchanges {
		in := in
		in.Event.MessageID = res.Message.PlatformMsgID
		again, err := s.AppendInbound(ctx, in)
		if err != nil || !again.Duplicate || again.Message.ID != res.Message.ID || again.Message.Text != res.Message.Text {
			t.Errorf("exchange %d's message again after the crash: %+v, %v; want a duplicate of %d", i, again, err, res.Message.ID)
		}
	}
	out, err := s.PendingOutbox(ctx)
	if err != nil || len(out) != 2 || out[0].MessageID != exchanges[0].Message.ID+1 || out[1].Text != "reply 3" {
		t.Errorf("pending outbox after the crash: %+v, %v", out, err)
	}
	msgs, err := s.SessionMessages(ctx, sid, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.Text)
	}
	if want := []string{"hello", "message 2", "reply 2", "message 3", "reply 3"}; !slices.Equal(got, want) {
		t.Errorf("session after the crash = %q, want %q", got, want)
	}
	if c, found, err := s.LastPrivateChat(ctx, sid); err != nil || !found || c.ChatID != "web-ann:matty" {
		t.Errorf("last private chat = %+v, %v, %v", c, found, err)
	}
}
