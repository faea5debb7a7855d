package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/sessions"
)

// testInbound: a message is stored with its chat, its session and its
// turn, and reads back as it was written.
func testInbound(t *testing.T, f Factory) {
	s := f.New(t)
	in := private("ann", "matty", "m1", "hello @finn")
	in.Message.Mentions = []string{"finn"}
	in.Message.ReplyTo = "m0"
	res := appendInbound(t, s, in)
	if res.Duplicate || res.Message.ID == 0 || len(res.Turns) != 1 || res.Turns[0].ID == 0 {
		t.Fatalf("append = %+v", res)
	}
	turn := nextTurn(t, s, res.Turns[0].SessionID)
	want := in.Message
	want.ID = res.Message.ID
	if !equalMessage(turn.Message, want) {
		t.Errorf("turn's message = %+v, want %+v", turn.Message, want)
	}
	if turn.Ref != res.Turns[0] || turn.Text != "hello @finn" || turn.Session.Key != userKey("matty", "ann") {
		t.Errorf("turn = %+v %q %+v", turn.Ref, turn.Text, turn.Session.Key)
	}
	if turn.After != 0 || turn.WaitsFor != 0 || turn.Delegation != nil || len(turn.History) != 0 {
		t.Errorf("turn of a first message = after %d, waits for %d, delegation %v, history %v", turn.After, turn.WaitsFor, turn.Delegation, turn.History)
	}
	msgs, err := s.SessionMessages(context.Background(), turn.Session.ID, "", 10)
	if err != nil || len(msgs) != 1 || !equalMessage(msgs[0], want) {
		t.Errorf("session messages = %+v, %v", msgs, err)
	}

	// A message that asks for no turn (a group's unaddressed chatter) is
	// stored as the group's history, in no session.
	res = appendInbound(t, s, group("lobby", "ann", "g1", "just chatting"))
	if len(res.Turns) != 0 {
		t.Errorf("unaddressed message queued %d turns", len(res.Turns))
	}
	group, err := s.ChatMessages(context.Background(), "web", "lobby", 10)
	if err != nil || len(group) != 1 || group[0].Text != "just chatting" || group[0].ChatType != chat.Group {
		t.Errorf("room messages = %+v, %v", group, err)
	}
}

// equalMessage compares messages by what a store keeps of them.
func equalMessage(a, b chat.Message) bool {
	return a.ID == b.ID && a.Platform == b.Platform && a.ChatID == b.ChatID && a.ChatType == b.ChatType &&
		a.PlatformMsgID == b.PlatformMsgID && a.Kind == b.Kind && a.From == b.From && a.UserID == b.UserID &&
		a.Bot == b.Bot && a.Text == b.Text && slices.Equal(a.Mentions, b.Mentions) && a.ReplyTo == b.ReplyTo &&
		a.Time.Equal(b.Time) && a.DelegationID == b.DelegationID
}

// testDedupe: a platform message is identified by (platform, bot, chat,
// message ID); a second arrival, even a concurrent one, stores nothing.
func testDedupe(t *testing.T, f Factory) {
	s := f.New(t)
	first := appendInbound(t, s, private("ann", "matty", "m1", "hello"))
	again := appendInbound(t, s, private("ann", "matty", "m1", "hello again"))
	if !again.Duplicate || again.Message.ID != first.Message.ID || again.Message.Text != "hello" || len(again.Turns) != 0 {
		t.Errorf("redelivery = %+v, want the original message %d and no turn", again, first.Message.ID)
	}
	// The same ID in another chat, or to another bot, is another message.
	for _, in := range []struct{ user, bot string }{{"bob", "matty"}, {"ann", "finn"}} {
		if res := appendInbound(t, s, private(in.user, in.bot, "m1", "hi")); res.Duplicate {
			t.Errorf("m1 from %s to %s taken for a duplicate", in.user, in.bot)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored := map[int64]int{}
	for range 8 {
		wg.Go(func() {
			res, err := s.AppendInbound(context.Background(), private("cy", "matty", "race", "once"))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			stored[res.Message.ID]++
			if !res.Duplicate {
				stored[0]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(stored) != 2 || stored[0] != 1 {
		t.Errorf("eight concurrent arrivals of one message: %v (message ID → arrivals, 0 → stored), want one stored", stored)
	}
	depth, err := s.QueueDepth(context.Background())
	if err != nil || depth != 4 {
		t.Errorf("queue depth = %d, %v; want 4 turns", depth, err)
	}
}

// testTurnOrder: a session's turns come in the order their messages were
// stored, also when they were stored concurrently, and only once each is
// done does the next come.
func testTurnOrder(t *testing.T, f Factory) {
	s := f.New(t)
	const n = 30
	var wg sync.WaitGroup
	var mu sync.Mutex
	byTurn := map[int64]int64{} // turn → its message
	for i := range n {
		wg.Go(func() {
			res, err := s.AppendInbound(context.Background(), private("ann", "matty", msgID(i), fmt.Sprint("msg ", i)))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			byTurn[res.Turns[0].ID] = res.Message.ID
			mu.Unlock()
		})
	}
	wg.Wait()
	sess, ok, err := s.FindSession(context.Background(), userKey("matty", "ann"))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	var prevTurn, prevMsg int64
	for range n {
		turn := nextTurn(t, s, sess.ID)
		if turn.Ref.ID <= prevTurn || turn.Message.ID <= prevMsg || byTurn[turn.Ref.ID] != turn.Message.ID {
			t.Fatalf("turn %d (message %d) after turn %d (message %d)", turn.Ref.ID, turn.Message.ID, prevTurn, prevMsg)
		}
		// Until it is done, it stays the next.
		if again := nextTurn(t, s, sess.ID); again.Ref != turn.Ref {
			t.Fatalf("next turn changed to %d before %d was done", again.Ref.ID, turn.Ref.ID)
		}
		complete(t, s, reply(turn, "re "+turn.Text))
		prevTurn, prevMsg = turn.Ref.ID, turn.Message.ID
	}
	noTurn(t, s, sess.ID)
	pending, err := s.PendingSessions(context.Background())
	if err != nil || len(pending) != 0 {
		t.Errorf("pending sessions = %v, %v", pending, err)
	}
}

// testTurnsAfter: a message that addresses several bots queues their
// turns in order, each after the one before, and a turn waits while the
// one it follows is not done.
func testTurnsAfter(t *testing.T, f Factory) {
	s := f.New(t)
	res := appendInbound(t, s, group("lobby", "ann", "g1", "@matty @finn hi", "matty", "finn"))
	if len(res.Turns) != 2 {
		t.Fatalf("turns = %+v", res.Turns)
	}
	first, second := res.Turns[0], res.Turns[1]
	pending, err := s.PendingSessions(context.Background())
	if err != nil || !slices.Equal(pending, []string{first.SessionID, second.SessionID}) {
		t.Errorf("pending sessions = %v, %v; want %v", pending, err, []string{first.SessionID, second.SessionID})
	}
	if turn := nextTurn(t, s, second.SessionID); turn.After != first.ID || turn.WaitsFor != first.ID {
		t.Errorf("second bot's turn: after %d, waits for %d; want %d, %d", turn.After, turn.WaitsFor, first.ID, first.ID)
	}
	complete(t, s, reply(nextTurn(t, s, first.SessionID), "matty here"))
	turn := nextTurn(t, s, second.SessionID)
	if turn.After != first.ID || turn.WaitsFor != 0 {
		t.Errorf("second bot's turn once the first is done: after %d, waits for %d", turn.After, turn.WaitsFor)
	}
	if len(turn.History) != 0 {
		t.Errorf("second bot's history = %q", texts(turn.History))
	}
}

// isNotFound reports whether err wraps target.
func isNotFound(err, target error) bool { return err != nil && errors.Is(err, target) }

// testSessions: sessions are found by key and ID and listed by bot and
// person.
func testSessions(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	appendInbound(t, s, private("ann", "matty", "m1", "a"))
	appendInbound(t, s, private("bob", "matty", "m2", "b"))
	appendInbound(t, s, private("ann", "finn", "m3", "c"))
	if _, ok, err := s.FindSession(ctx, userKey("finn", "bob")); ok || err != nil {
		t.Errorf("find a session never made = %v, %v", ok, err)
	}
	sess, ok, err := s.FindSession(ctx, userKey("matty", "ann"))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got, err := s.GetSession(ctx, sess.ID); err != nil || got.ID != sess.ID || got.Key != sess.Key || got.CreatedAt.IsZero() {
		t.Errorf("get session = %+v, %v", got, err)
	}
	if _, err := s.GetSession(ctx, "no-such-session"); !isNotFound(err, sessions.ErrNotFound) {
		t.Errorf("get a missing session: %v, want ErrNotFound", err)
	}
	for _, tc := range []struct {
		f    sessions.Filter
		want int
	}{
		{sessions.Filter{}, 3},
		{sessions.Filter{Bot: "matty"}, 2},
		{sessions.Filter{ScopeIDs: []string{"ann"}}, 2},
		{sessions.Filter{Bot: "finn", ScopeIDs: []string{"bob", "ann"}}, 1},
		{sessions.Filter{Limit: 1}, 1},
	} {
		list, err := s.ListSessions(ctx, tc.f)
		if err != nil || len(list) != tc.want {
			t.Errorf("list sessions %+v = %d sessions, %v; want %d", tc.f, len(list), err, tc.want)
		}
	}
}

// testSecret: a secret is made once and kept.
func testSecret(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	a, err := s.Secret(ctx, "token", 32)
	if err != nil || len(a) != 32 {
		t.Fatalf("secret = %x, %v", a, err)
	}
	if b, err := s.Secret(ctx, "other", 16); err != nil || len(b) != 16 || string(b) == string(a[:16]) {
		t.Errorf("another secret = %x, %v", b, err)
	}
	s = f.Reopen(t, s)
	if b, err := s.Secret(ctx, "token", 32); err != nil || string(b) != string(a) {
		t.Errorf("secret after reopen = %x, %v; want %x", b, err, a)
	}
}
