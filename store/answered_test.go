package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/store"
)

// answer is the completion of a turn on Ann's session with matty: one
// reply in her private chat.
func answer(session, text string) gateway.Completion {
	m := gateway.Message{
		Platform: "web", ChatID: "web-ann:matty", ChatType: gateway.ChatPrivate, Kind: gateway.KindChat,
		From: gateway.Party{Kind: "bot", ID: "matty", Name: "Matty"}, UserID: "user-ann", Bot: "matty", Text: text,
	}
	return gateway.Completion{Session: session, Posts: []gateway.Post{{Message: m, Session: session}}}
}

// texts are the texts of msgs, in order.
func texts(msgs []gateway.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

// hello stores Ann's first message to matty on the stored path and loads
// its turn, as the gateway does, which puts the session's window in
// memory; the turn stays pending.
func hello(t *testing.T, s *store.SQLite) gateway.TurnRef {
	t.Helper()
	first, err := s.AppendInbound(context.Background(), inbound("1", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadTurn(context.Background(), first.Turns[0].ID, 20); err != nil {
		t.Fatal(err)
	}
	return first.Turns[0]
}

// hiAnn completes turn with matty's reply "hi Ann".
func hiAnn(t *testing.T, s *store.SQLite, turn gateway.TurnRef) {
	t.Helper()
	c := answer(turn.SessionID, "hi Ann")
	c.Turn = turn
	if _, err := s.CompleteTurn(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func TestAppendAnsweredStoresTheExchangeInOneWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sb.db")
	s := open(t, path)
	key := inbound("", "").Turns[0].Session

	if _, _, ok := s.PeekSession(key, 20); ok {
		t.Fatal("PeekSession found a session that does not exist")
	}
	// The stored path first: the session is created, and its window is
	// in memory.
	first := hello(t, s)
	hiAnn(t, s, first)

	data, latest, ok := s.PeekSession(key, 20)
	if !ok || data.Ref.SessionID != first.SessionID || data.Session.Key != key || latest != data.History[1].ID {
		t.Fatalf("PeekSession = %+v, %d, %v", data, latest, ok)
	}
	if got := texts(data.History); !slices.Equal(got, []string{"hello", "hi Ann"}) {
		t.Fatalf("peeked history = %q", got)
	}

	var calls []string
	in := inbound("2", "how are you")
	in.OnStored = func(r gateway.InboundResult) { calls = append(calls, "inbound") }
	c := answer(data.Ref.SessionID, "fine")
	c.OnStored = func(d gateway.Completed) { calls = append(calls, "completion") }
	res, done, err := s.AppendAnswered(ctx, in, c, latest)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicate || res.Message.ID == 0 || len(res.Turns) != 0 || len(done.Outbox) != 1 || done.Outbox[0].Text != "fine" {
		t.Fatalf("AppendAnswered = %+v, %+v", res, done)
	}
	if !slices.Equal(calls, []string{"inbound", "completion"}) {
		t.Errorf("callbacks = %q, want the inbound's before the completion's", calls)
	}
	// The turn was never pending; the reply waits in the outbox.
	if pending, err := s.PendingTurns(ctx); err != nil || len(pending) != 0 {
		t.Errorf("pending turns = %v, %v", pending, err)
	}
	if out, err := s.PendingOutbox(ctx); err != nil || len(out) != 2 || out[1].Text != "fine" || out[1].MessageID <= res.Message.ID {
		t.Errorf("pending outbox = %+v, %v", out, err)
	}
	if data, _, _ := s.PeekSession(key, 20); !slices.Equal(texts(data.History), []string{"hello", "hi Ann", "how are you", "fine"}) {
		t.Errorf("window after the exchange = %q", texts(data.History))
	}
	if data, _, _ := s.PeekSession(key, 3); !slices.Equal(texts(data.History), []string{"hi Ann", "how are you", "fine"}) {
		t.Errorf("last 3 = %q", texts(data.History))
	}

	// A duplicate stores nothing of its answer.
	calls = nil
	_, latest, _ = s.PeekSession(key, 20)
	again, done, err := s.AppendAnswered(ctx, in, answer(data.Ref.SessionID, "fine again"), latest)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Duplicate || again.Message.ID != res.Message.ID || len(done.Outbox) != 0 || !slices.Equal(calls, []string{"inbound"}) {
		t.Fatalf("duplicate = %+v, %+v, callbacks %q", again, done, calls)
	}

	// All of it is in SQLite, as another process opening it sees.
	s.Close()
	s2, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	msgs, err := s2.SessionMessages(ctx, data.Ref.SessionID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(msgs); !slices.Equal(got, []string{"hello", "hi Ann", "how are you", "fine"}) {
		t.Errorf("stored history = %q", got)
	}
	if pending, err := s2.PendingTurns(ctx); err != nil || len(pending) != 0 {
		t.Errorf("pending turns after reopening = %v, %v", pending, err)
	}
}

func TestAppendAnsweredTakesOneTurn(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "sb.db"))
	in := inbound("1", "hi")
	in.Turns = append(in.Turns, in.Turns[0])
	if _, _, err := s.AppendAnswered(context.Background(), in, gateway.Completion{}, 0); err == nil {
		t.Fatal("AppendAnswered stored a message with two turns")
	}
}

// A message that joins the session after the answer was made makes the
// answer stale: nothing of it is stored.
func TestAppendAnsweredRefusesAStaleAnswer(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "sb.db"))
	key := inbound("", "").Turns[0].Session
	first := hello(t, s)
	sid := first.SessionID
	hiAnn(t, s, first)
	// Two answers made on one look: the first is stored, and its
	// exchange makes the second stale.
	_, latest, ok := s.PeekSession(key, 20)
	if !ok {
		t.Fatal("session not cached")
	}
	if _, _, err := s.AppendAnswered(ctx, inbound("2", "how are you"), answer(sid, "fine"), latest); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.AppendAnswered(ctx, inbound("3", "and you?"), answer(sid, "me too"), latest)
	if !errors.Is(err, gateway.ErrStale) {
		t.Fatalf("AppendAnswered on a stale look: %v, want ErrStale", err)
	}
	msgs, err := s.SessionMessages(ctx, sid, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(msgs); !slices.Equal(got, []string{"hello", "hi Ann", "how are you", "fine"}) {
		t.Errorf("stored = %q, want nothing of the stale answer", got)
	}
	// A fresh look answers.
	_, latest, _ = s.PeekSession(key, 20)
	if _, _, err := s.AppendAnswered(ctx, inbound("3", "and you?"), answer(sid, "me too"), latest); err != nil {
		t.Fatal(err)
	}
}

// A session with a pending turn is not peeked: the turn came first, and an
// answer made meanwhile would overtake it.
func TestPeekSessionWaitsForPendingTurns(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "sb.db"))
	key := inbound("", "").Turns[0].Session
	first := hello(t, s)
	if _, _, ok := s.PeekSession(key, 20); ok {
		t.Fatal("PeekSession with the session's turn pending")
	}
	hiAnn(t, s, first)
	_, latest, ok := s.PeekSession(key, 20)
	if !ok {
		t.Fatal("PeekSession refused once the turn was done")
	}
	// A turn stored after the look makes the answer stale even before its
	// message is compared.
	if _, err := s.AppendInbound(ctx, inbound("2", "are you there")); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.AppendAnswered(ctx, inbound("3", "hello?"), answer(first.SessionID, "yes"), latest)
	if !errors.Is(err, gateway.ErrStale) {
		t.Fatalf("AppendAnswered with a turn pending: %v, want ErrStale", err)
	}
}
