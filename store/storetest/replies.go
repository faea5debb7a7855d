package storetest

import (
	"context"
	"testing"

	"github.com/switchboard-chat/switchboard/chat"
)

// testFailedReply: a reply keeps the ID of the message it answers and
// whether it stands for a failed turn, in its outbox entry, in every
// history that reads it and across a reopen.
func testFailedReply(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	res := appendInbound(t, s, private("ann", "matty", "m1", "hello"))
	session := res.Turns[0].SessionID
	o := reply(nextTurn(t, s, session), "Sorry, matty couldn't answer just now.")
	o.Posts[0].Message.ReplyToID, o.Posts[0].Message.Failed = res.Message.ID, true
	done := complete(t, s, o)
	if e := done.Outbox[0]; !e.Failed || e.ReplyToID != res.Message.ID {
		t.Errorf("outbox entry = failed %v, reply to %d; want true, %d", e.Failed, e.ReplyToID, res.Message.ID)
	}
	res2 := appendInbound(t, s, private("ann", "matty", "m2", "again"))
	o = reply(nextTurn(t, s, session), "hi ann")
	o.Posts[0].Message.ReplyToID = res2.Message.ID
	complete(t, s, o)

	check := func(when string, s Store) {
		t.Helper()
		msgs, err := s.SessionMessages(ctx, session, chat.KindChat, 10)
		if err != nil || len(msgs) != 4 {
			t.Fatalf("%s: session = %+v, %v", when, msgs, err)
		}
		for i, want := range []struct {
			replyTo int64
			failed  bool
		}{{0, false}, {res.Message.ID, true}, {0, false}, {res2.Message.ID, false}} {
			if msgs[i].ReplyToID != want.replyTo || msgs[i].Failed != want.failed {
				t.Errorf("%s: message %d %q: reply to %d, failed %v; want %d, %v",
					when, i, msgs[i].Text, msgs[i].ReplyToID, msgs[i].Failed, want.replyTo, want.failed)
			}
		}
		pending, err := s.PendingOutbox(ctx)
		if err != nil || len(pending) != 2 || !pending[0].Failed || pending[0].ReplyToID != res.Message.ID || pending[1].Failed {
			t.Errorf("%s: pending outbox = %+v, %v", when, pending, err)
		}
	}
	check("stored", s)
	s = f.Reopen(t, s)
	check("reopened", s)

	// In a room, the room's history reads it too.
	in := appendInbound(t, s, group("lobby", "ann", "g1", "@matty hi", "matty"))
	o = reply(nextTurn(t, s, in.Turns[0].SessionID), "Sorry, matty couldn't answer just now.")
	o.Posts[0].Message.ReplyToID, o.Posts[0].Message.Failed = in.Message.ID, true
	complete(t, s, o)
	room, err := s.ChatMessages(ctx, "web", "lobby", 10)
	if err != nil || len(room) != 2 || !room[1].Failed || room[1].ReplyToID != in.Message.ID || room[0].Failed {
		t.Errorf("room history = %+v, %v", room, err)
	}
}
