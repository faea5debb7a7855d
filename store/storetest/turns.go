package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/sessions"
)

// testCompleteTurn: an outcome's posts are stored in their chats and
// sessions and queued in the outbox in order, with its notes, resume ID
// and retry, all at once.
func testCompleteTurn(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	res := appendInbound(t, s, private("ann", "matty", "m1", "hello"))
	turn := nextTurn(t, s, res.Turns[0].SessionID)
	o := reply(turn, "hi ann")
	second := reply(turn, "anything else?").Posts[0]
	o.Posts = append(o.Posts, second)
	o.ResumeID = "resume-1"
	o.Notes = []sessions.Note{{Session: turn.Ref.SessionID, Message: chat.Message{
		Kind: chat.KindSystem, From: chat.Party{Kind: chat.System, ID: "finn", Name: "delegation"},
		UserID: "ann", Bot: "matty", Text: "a note", Time: now(),
	}}}
	done := complete(t, s, o)
	if len(done.Outbox) != 2 || len(done.Turns) != 0 {
		t.Fatalf("done = %+v", done)
	}
	for i, e := range done.Outbox {
		p := o.Posts[i].Message
		if e.OutboxID == 0 || e.MessageID == 0 || e.Platform != p.Platform || e.ChatID != p.ChatID || e.ChatType != p.ChatType ||
			e.Bot != "matty" || e.From != p.From || e.Text != p.Text || e.ReplyTo != "m1" || !e.Time.Equal(p.Time) || e.Attempt != 0 {
			t.Errorf("outbox entry %d = %+v, want the post %+v", i, e, p)
		}
	}
	if done.Outbox[0].OutboxID >= done.Outbox[1].OutboxID || done.Outbox[0].MessageID >= done.Outbox[1].MessageID {
		t.Errorf("posts stored out of order: %+v", done.Outbox)
	}
	pending, err := s.PendingOutbox(ctx)
	if err != nil || len(pending) != 2 || pending[0].OutboxID != done.Outbox[0].OutboxID || pending[1].Text != "anything else?" {
		t.Errorf("pending outbox = %+v, %v", pending, err)
	}
	noTurn(t, s, turn.Ref.SessionID)
	sess, err := s.GetSession(ctx, turn.Ref.SessionID)
	if err != nil || sess.ResumeID != "resume-1" || !sess.UpdatedAt.After(sess.CreatedAt) && !sess.UpdatedAt.Equal(sess.CreatedAt) {
		t.Errorf("session after the turn = %+v, %v", sess, err)
	}
	all, err := s.SessionMessages(ctx, turn.Ref.SessionID, "", 10)
	if got := texts(all); err != nil || !slices.Equal(got, []string{"hello", "hi ann", "anything else?", "a note"}) {
		t.Errorf("session = %q, %v", got, err)
	}
	chats, err := s.SessionMessages(ctx, turn.Ref.SessionID, chat.KindChat, 10)
	if got := texts(chats); err != nil || !slices.Equal(got, []string{"hello", "hi ann", "anything else?"}) {
		t.Errorf("session's chat messages = %q, %v", got, err)
	}
	if last, err := s.SessionMessages(ctx, turn.Ref.SessionID, "", 2); err != nil || !slices.Equal(texts(last), []string{"anything else?", "a note"}) {
		t.Errorf("session's last two = %q, %v", texts(last), err)
	}

	// A later turn keeps the resume ID unless it gives another.
	res = appendInbound(t, s, private("ann", "matty", "m2", "again"))
	turn = nextTurn(t, s, res.Turns[0].SessionID)
	if turn.Session.ResumeID != "resume-1" {
		t.Errorf("resume ID = %q", turn.Session.ResumeID)
	}
	complete(t, s, reply(turn, "ok"))
	if sess, _ := s.GetSession(ctx, turn.Ref.SessionID); sess.ResumeID != "resume-1" {
		t.Errorf("resume ID after a turn without one = %q", sess.ResumeID)
	}

	// A retry queues the same message again with another text.
	res = appendInbound(t, s, private("ann", "matty", "m3", "try"))
	turn = nextTurn(t, s, res.Turns[0].SessionID)
	done = complete(t, s, sessions.Outcome{Turn: turn.Ref, Retry: "try harder"})
	if len(done.Turns) != 1 || done.Turns[0].SessionID != turn.Ref.SessionID {
		t.Fatalf("retry queued %+v", done.Turns)
	}
	retry := nextTurn(t, s, turn.Ref.SessionID)
	if retry.Ref != done.Turns[0] || retry.Text != "try harder" || retry.Message.ID != turn.Message.ID {
		t.Errorf("retry = %+v %q message %d", retry.Ref, retry.Text, retry.Message.ID)
	}
}

// testCompleteTwice: completing a turn that is done stores nothing more,
// so a turn run twice is answered once; an unknown turn is not found.
func testCompleteTwice(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	res := appendInbound(t, s, private("ann", "matty", "m1", "hello"))
	turn := nextTurn(t, s, res.Turns[0].SessionID)
	complete(t, s, reply(turn, "first answer"))
	done, err := s.CompleteTurn(ctx, reply(turn, "second answer"))
	if err != nil || len(done.Outbox) != 0 || len(done.Turns) != 0 {
		t.Errorf("second completion = %+v, %v; want nothing", done, err)
	}
	msgs, _ := s.SessionMessages(ctx, turn.Ref.SessionID, "", 10)
	if got := texts(msgs); !slices.Equal(got, []string{"hello", "first answer"}) {
		t.Errorf("session = %q", got)
	}
	o := reply(turn, "lost")
	o.Turn.ID += 1000
	if _, err := s.CompleteTurn(ctx, o); !isNotFound(err, sessions.ErrNotFound) {
		t.Errorf("complete an unknown turn: %v, want ErrNotFound", err)
	}
}

// testHistory: a turn sees its session's earlier messages, at most the
// limit, without the message it answers or later people's messages, but
// with the bots' replies stored since.
func testHistory(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	var session string
	for i := range 5 {
		res := appendInbound(t, s, private("ann", "matty", msgID(i), fmt.Sprint("q", i)))
		session = res.Turns[0].SessionID
		complete(t, s, reply(nextTurn(t, s, session), fmt.Sprint("a", i)))
	}
	appendInbound(t, s, private("ann", "matty", "m5", "q5"))
	appendInbound(t, s, private("ann", "matty", "m6", "q6"))
	turn := nextTurn(t, s, session)
	if turn.Text != "q5" {
		t.Fatalf("turn = %q", turn.Text)
	}
	if got := texts(turn.History); !slices.Equal(got, []string{"q0", "a0", "q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4"}) {
		t.Errorf("history = %q", got)
	}
	complete(t, s, reply(turn, "a5"))
	turn = nextTurn(t, s, session)
	if got := texts(turn.History); !slices.Equal(got, []string{"q0", "a0", "q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4", "q5", "a5"}) {
		t.Errorf("history of q6 = %q", got)
	}
	short, ok, err := s.NextTurn(ctx, session, 3)
	if err != nil || !ok || !slices.Equal(texts(short.History), []string{"a4", "q5", "a5"}) {
		t.Errorf("history of 3 = %q, %v", texts(short.History), err)
	}
	none, _, err := s.NextTurn(ctx, session, 0)
	if err != nil || len(none.History) != 0 {
		t.Errorf("history of 0 = %q, %v", texts(none.History), err)
	}
}

// testLastPrivateChat: where a person last spoke in a session, and to
// any bot.
func testLastPrivateChat(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	web := appendInbound(t, s, private("ann", "matty", "m1", "on the web"))
	session := web.Turns[0].SessionID
	if c, ok, err := s.LastPrivateChat(ctx, session); err != nil || !ok || c != (chat.Ref{Platform: "web", ID: "web-ann:matty", Type: chat.Private}) {
		t.Errorf("last private chat = %+v, %v, %v", c, ok, err)
	}
	tg := private("ann", "matty", "t1", "on telegram")
	tg.Message.Platform, tg.Message.ChatID, tg.Message.From.ID = "telegram", "555", "telegram-555"
	appendInbound(t, s, tg)
	if c, _, _ := s.LastPrivateChat(ctx, session); c != (chat.Ref{Platform: "telegram", ID: "555", Type: chat.Private}) {
		t.Errorf("last private chat after telegram = %+v", c)
	}
	// A group message is not a private chat.
	appendInbound(t, s, group("lobby", "ann", "g1", "in a room", "matty"))
	if c, _, _ := s.LastPrivateChat(ctx, session); c.Platform != "telegram" {
		t.Errorf("last private chat after a room = %+v", c)
	}
	appendInbound(t, s, private("ann", "finn", "f1", "to finn"))
	if c, pid, ok, err := s.LastPrivateChatOfUser(ctx, "ann"); err != nil || !ok || c.ID != "web-ann:finn" || pid != "web-ann" {
		t.Errorf("last private chat of ann = %+v %q %v %v", c, pid, ok, err)
	}
	if _, _, ok, err := s.LastPrivateChatOfUser(ctx, "nobody"); ok || err != nil {
		t.Errorf("last private chat of nobody = %v, %v", ok, err)
	}
	other, _ := s.AppendInbound(ctx, private("bob", "matty", "b1", "hi"))
	if _, ok, err := s.LastPrivateChat(ctx, "no-such-session"); ok || err != nil {
		t.Errorf("last private chat of no session = %v, %v (%v)", ok, err, other.Message.ID)
	}
}

// testResumeAfterReopen: turns not answered and entries not delivered
// are still there after a restart.
func testResumeAfterReopen(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	a := appendInbound(t, s, private("ann", "matty", "m1", "first"))
	appendInbound(t, s, private("ann", "matty", "m2", "second"))
	b := appendInbound(t, s, private("bob", "finn", "m1", "hi finn"))
	complete(t, s, reply(nextTurn(t, s, a.Turns[0].SessionID), "answer to first"))

	s = f.Reopen(t, s)
	pending, err := s.PendingSessions(ctx)
	if err != nil || !slices.Equal(pending, []string{a.Turns[0].SessionID, b.Turns[0].SessionID}) {
		t.Errorf("pending sessions after reopen = %v, %v", pending, err)
	}
	if turn := nextTurn(t, s, a.Turns[0].SessionID); turn.Text != "second" || !slices.Equal(texts(turn.History), []string{"first", "answer to first"}) {
		t.Errorf("ann's next turn after reopen = %q with %q", turn.Text, texts(turn.History))
	}
	entries, err := s.PendingOutbox(ctx)
	if err != nil || len(entries) != 1 || entries[0].Text != "answer to first" {
		t.Errorf("pending outbox after reopen = %+v, %v", entries, err)
	}
	if n, err := s.QueueDepth(ctx); err != nil || n != 2 {
		t.Errorf("queue depth after reopen = %d, %v", n, err)
	}
}

// testConcurrentWriters: many sessions written at once, each in order,
// nothing lost.
func testConcurrentWriters(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	const people, messages = 8, 10
	var wg sync.WaitGroup
	for p := range people {
		wg.Go(func() {
			user := fmt.Sprint("user", p)
			for i := range messages {
				res, err := s.AppendInbound(ctx, private(user, "matty", msgID(i), fmt.Sprint(user, " ", i)))
				if err != nil {
					t.Error(err)
					return
				}
				turn, ok, err := s.NextTurn(ctx, res.Turns[0].SessionID, 100)
				if err != nil || !ok || turn.Ref != res.Turns[0] {
					t.Errorf("%s: next turn = %+v, %v, %v; want %+v", user, turn.Ref, ok, err, res.Turns[0])
					return
				}
				done, err := s.CompleteTurn(ctx, reply(turn, fmt.Sprint("re ", turn.Text)))
				if err != nil || len(done.Outbox) != 1 {
					t.Errorf("%s: complete = %+v, %v", user, done, err)
					return
				}
				if err := s.MarkSent(ctx, done.Outbox[0].OutboxID, ""); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for p := range people {
		user := fmt.Sprint("user", p)
		msgs, err := sessions.History(ctx, s, userKey("matty", user), "", 1000)
		if err != nil || len(msgs) != 2*messages {
			t.Fatalf("%s: %d messages, %v", user, len(msgs), err)
		}
		for i, m := range msgs {
			want := fmt.Sprint(user, " ", i/2)
			if i%2 == 1 {
				want = "re " + want
			}
			if m.Text != want {
				t.Errorf("%s: message %d = %q, want %q", user, i, m.Text, want)
			}
		}
	}
	if entries, err := s.PendingOutbox(ctx); err != nil || len(entries) != 0 {
		t.Errorf("pending outbox = %d entries, %v", len(entries), err)
	}
}
