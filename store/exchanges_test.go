package store_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/store"
)

// reply is matty's reply to in, as the gateway's instant path makes it:
// in the message's chat, replying to it, at at.
func reply(in gateway.Inbound, session, text string, at time.Time) gateway.Completion {
	c := answer(session, text)
	c.Posts[0].Message.ReplyTo = in.Event.MessageID
	c.Posts[0].Message.Time = at
	return c
}

// answerAt stores in with the reply text on the instant path, on the
// session as it is now.
func answerAt(t *testing.T, s *store.SQLite, in gateway.Inbound, c gateway.Completion) (gateway.InboundResult, gateway.Completed) {
	t.Helper()
	_, latest, ok := s.PeekSession(in.Turns[0].Session, 20)
	if !ok {
		t.Fatal("session not cached")
	}
	res, done, err := s.AppendAnswered(context.Background(), in, c, latest)
	if err != nil {
		t.Fatal(err)
	}
	return res, done
}

// An instant exchange is one row: the reply's ID follows the message's,
// every reader serves both (the session's history, the outbox, the
// dedupe lookup), and IDs go on growing after a restart, on either path.
func TestAnsweredExchangeReadsAsTwoMessages(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sb.db")
	s := open(t, path)
	first := hello(t, s)
	sid := first.SessionID
	hiAnn(t, s, first)

	at := time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC)
	in := inbound("2", "how are you")
	in.Event.ReplyTo = "1"
	res, done := answerAt(t, s, in, reply(in, sid, "fine", at))
	if len(done.Outbox) != 1 || done.Outbox[0].MessageID != res.Message.ID+1 {
		t.Fatalf("exchange: message %d, outbox %+v; want the reply at the next ID", res.Message.ID, done.Outbox)
	}
	wantReply := gateway.Message{
		ID: res.Message.ID + 1, Platform: "web", ChatID: "web-ann:matty", ChatType: gateway.ChatPrivate, Kind: gateway.KindChat,
		From: gateway.Party{Kind: "bot", ID: "matty", Name: "Matty"}, UserID: "user-ann", Bot: "matty", Text: "fine",
		ReplyTo: "2", Time: at,
	}
	wantMessage := gateway.Message{
		ID: res.Message.ID, Platform: "web", ChatID: "web-ann:matty", ChatType: gateway.ChatPrivate, PlatformMsgID: "2",
		Kind: gateway.KindChat, From: gateway.Party{Kind: "human", ID: "web-ann", Name: "Ann"}, UserID: "user-ann",
		Bot: "matty", Text: "how are you", Mentions: []string{"matty"}, ReplyTo: "1", Time: in.Event.Time,
	}

	check := func(s *store.SQLite, when string) {
		t.Helper()
		msgs, err := s.SessionMessages(ctx, sid, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 4 || !equalMessage(msgs[2], wantMessage) || !equalMessage(msgs[3], wantReply) {
			t.Errorf("%s: session messages %+v; want ..., %+v, %+v", when, msgs, wantMessage, wantReply)
		}
		if last, err := s.SessionMessages(ctx, sid, 1); err != nil || len(last) != 1 || last[0].ID != wantReply.ID {
			t.Errorf("%s: the last message = %+v, %v; want the reply", when, last, err)
		}
		out, err := s.PendingOutbox(ctx)
		if err != nil || len(out) != 2 {
			t.Fatalf("%s: pending outbox %+v, %v", when, out, err)
		}
		if o := out[1]; o.OutboxID != done.Outbox[0].OutboxID || o.MessageID != wantReply.ID || o.Text != "fine" ||
			o.From != wantReply.From || o.ReplyTo != "2" || !o.Time.Equal(at) || o.ChatID != "web-ann:matty" {
			t.Errorf("%s: the reply's outbox entry = %+v", when, o)
		}
		_, latest, ok := s.PeekSession(in.Turns[0].Session, 20)
		if !ok {
			return // not cached after a restart: the duplicate takes the stored path
		}
		again, redone, err := s.AppendAnswered(ctx, in, reply(in, sid, "fine again", at), latest)
		if err != nil || !again.Duplicate || again.Message.ID != wantMessage.ID || len(redone.Outbox) != 0 {
			t.Errorf("%s: the message again = %+v, %+v, %v; want a duplicate of %d", when, again, redone, err, wantMessage.ID)
		}
	}
	check(s, "at once")
	s.Close()

	s = open(t, path)
	check(s, "after a restart")
	dup, err := s.AppendInbound(ctx, in)
	if err != nil || !dup.Duplicate || !equalMessage(dup.Message, wantMessage) {
		t.Errorf("the message again after a restart = %+v, %v; want a duplicate of %+v", dup, err, wantMessage)
	}
	// The stored path after it: a later ID, with the exchange in its
	// history.
	next, err := s.AppendInbound(ctx, inbound("3", "and you?"))
	if err != nil || next.Message.ID <= wantReply.ID {
		t.Fatalf("a message after the exchange: %+v, %v; want an ID after %d", next, err, wantReply.ID)
	}
	d, err := s.LoadTurn(ctx, next.Turns[0].ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(d.History); !slices.Equal(got, []string{"hi Ann", "how are you", "fine"}) {
		t.Errorf("the next turn's history = %q", got)
	}
	hiAnn(t, s, next.Turns[0])
	// And another exchange after that.
	in4 := inbound("4", "bye")
	res4, done4 := answerAt(t, s, in4, reply(in4, sid, "bye Ann", at))
	if res4.Message.ID <= next.Message.ID+1 || done4.Outbox[0].MessageID != res4.Message.ID+1 {
		t.Errorf("a second exchange: message %d, reply %d, after %d", res4.Message.ID, done4.Outbox[0].MessageID, next.Message.ID)
	}
	msgs, err := s.SessionMessages(ctx, sid, 3)
	if err != nil || !slices.Equal(texts(msgs), []string{"hi Ann", "bye", "bye Ann"}) {
		t.Errorf("the last 3 messages = %q, %v", texts(msgs), err)
	}
}

// equalMessage compares messages, their times as instants.
func equalMessage(a, b gateway.Message) bool {
	ta, tb := a.Time, b.Time
	a.Time, b.Time = time.Time{}, time.Time{}
	return ta.Equal(tb) && slices.Equal(a.Mentions, b.Mentions) && func() bool {
		a.Mentions, b.Mentions = nil, nil
		return a.Platform == b.Platform && a.ID == b.ID && a.ChatID == b.ChatID && a.ChatType == b.ChatType &&
			a.PlatformMsgID == b.PlatformMsgID && a.Kind == b.Kind && a.From == b.From && a.UserID == b.UserID &&
			a.Bot == b.Bot && a.Text == b.Text && a.ReplyTo == b.ReplyTo && a.DelegationID == b.DelegationID
	}()
}

// Only a reply to the person's chat, with nothing else to store, makes
// an exchange's row; any other answer is stored as its messages, with
// its turn.
func TestAnsweredExchangeOnlyForAPlainReply(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC)
	for _, tt := range []struct {
		name string
		edit func(*gateway.Completion)
		row  bool
	}{
		{"a plain reply", func(*gateway.Completion) {}, true},
		{"a resume ID", func(c *gateway.Completion) { c.ResumeID = "r1" }, false},
		{"a note", func(c *gateway.Completion) {
			c.Notes = []gateway.Note{{Session: c.Session, Message: gateway.Message{Kind: gateway.KindSystem,
				From: gateway.Party{Kind: "system", ID: "matty", Name: "note"}, Bot: "matty", Text: "noted"}}}
		}, false},
		{"two replies", func(c *gateway.Completion) { c.Posts = append(c.Posts, c.Posts[0]) }, false},
		{"no reply", func(c *gateway.Completion) { c.Posts = nil }, false},
		{"another chat", func(c *gateway.Completion) { c.Posts[0].Message.ChatID = "web-ann2:matty" }, false},
		{"not replying to it", func(c *gateway.Completion) { c.Posts[0].Message.ReplyTo = "" }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t, filepath.Join(t.TempDir(), "sb.db"))
			first := hello(t, s)
			hiAnn(t, s, first)
			in := inbound("2", "how are you")
			c := reply(in, first.SessionID, "fine", at)
			tt.edit(&c)
			res, _ := answerAt(t, s, in, c)
			pending, err := s.PendingTurns(context.Background())
			if err != nil || len(pending) != 0 {
				t.Fatalf("pending turns %v, %v", pending, err)
			}
			msgs, err := s.SessionMessages(context.Background(), first.SessionID, 10)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, m := range msgs {
				ids = append(ids, m.ID)
			}
			if !slices.Contains(ids, res.Message.ID) {
				t.Fatalf("session messages %v lack the message %d", ids, res.Message.ID)
			}
			if got := store.IsExchangeRow(t, s, res.Message.ID+1); got != tt.row {
				t.Errorf("the row after message %d is an exchange's: %v, want %v", res.Message.ID, got, tt.row)
			}
		})
	}
}
