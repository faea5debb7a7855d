package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/retention"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world/findings"
	"github.com/switchboard-chat/switchboard/world/insights"
)

// visitor is a message from the person with platform ID pid and user ID
// user (an anonymous visitor's user ID is their platform ID) to bot in
// their private web chat, asking for bot's answer.
func visitor(pid, user, bot, msgID, text string) gateway.Inbound {
	in := private("x", bot, msgID, text)
	in.Message.ChatID = pid + ":" + bot
	in.Message.From.ID, in.Message.From.Name, in.Message.UserID = pid, pid, user
	in.Turns[0].Session = userKey(bot, user)
	return in
}

// inRoom is a message from pid (user ID user) in a web room, asking for
// the answers of bots.
func inRoom(room, pid, user, msgID, text string, bots ...string) gateway.Inbound {
	in := group(room, "x", msgID, text, bots...)
	in.Message.From.ID, in.Message.From.Name, in.Message.UserID = pid, pid, user
	for i := range in.Turns {
		in.Turns[i].Session = userKey(bots[i], user)
	}
	return in
}

// answer stores bot's reply to the session's next turn, with the
// artifacts, and returns what completing it stored.
func answer(t *testing.T, s Store, session, text string, arts ...chat.Artifact) sessions.Done {
	t.Helper()
	o := reply(nextTurn(t, s, session), text)
	o.Artifacts = arts
	return complete(t, s, o)
}

// answerHandoff stores finn's answer to the hand-off waiting in session:
// its wrapper is in no chat, so the answer goes to the private chat of
// pid with finn. A non-empty status settles the delegation.
func answerHandoff(t *testing.T, s Store, session, pid string, status string, arts ...chat.Artifact) {
	t.Helper()
	turn := nextTurn(t, s, session)
	o := reply(turn, "looked")
	post := &o.Posts[0].Message
	post.Platform, post.ChatID, post.ChatType, post.DelegationID = "web", pid+":finn", chat.Private, turn.Delegation.ID
	o.Artifacts = arts
	if status != "" {
		o.Update = &delegation.Update{ID: turn.Delegation.ID, Status: status, Result: "looked"}
	}
	complete(t, s, o)
}

// deliverAll marks every reply waiting in the outbox sent.
func deliverAll(t *testing.T, s Store) {
	t.Helper()
	pending, err := s.PendingOutbox(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range pending {
		if err := s.MarkSent(context.Background(), e.OutboxID, fmt.Sprint("sent-", i, "-", e.OutboxID)); err != nil {
			t.Fatal(err)
		}
	}
}

func artifact(id, producer string) chat.Artifact {
	return chat.Artifact{ID: id, Name: id + ".txt", MediaType: "text/plain", Size: 2,
		SHA256: "a1fce4363854ff888cff4b8e7875d600c2682390412a8cf79b37d0b11148b0fa", Producer: producer, Content: []byte("hi")}
}

// visitorHandoff is a queued hand-off from matty to finn for the person
// with user ID user, asked in turn.
func visitorHandoff(id, user string, turn sessions.Turn, inputs ...string) sessions.Handoff {
	h := handoff(id, "look "+id, &turn)
	h.Record.UserID, h.Record.UserName, h.Record.Inputs = user, user, inputs
	h.Target = userKey("finn", user)
	return h
}

// listed lists ann's identities and an anonymous-looking one that
// users.yaml gives to lee.
func listed(pid string) bool { return pid == "web-ann" || pid == "web-anon-lee" }

// testRetentionVisitors: an idle anonymous visitor loses everything —
// private chats, room messages and the replies to them, sessions, turns,
// outbox entries, delegations, artifacts, rooms left empty — while
// listed people, active visitors and busy ones (a turn or a reply still
// pending) lose nothing; an artifact someone else's delegation takes as
// input stays; and the visitor can come back afterwards as a new one.
func testRetentionVisitors(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	const (
		old  = "web-anon-old"
		busy = "web-anon-busy"
		lee  = "web-anon-lee" // anonymous-looking, but listed: user lee
	)
	// The old visitor: a private exchange (its reply sent), a room
	// message and its reply (not sent yet), a hand-off with an artifact.
	res := appendInbound(t, s, visitor(old, old, "matty", "o1", "hello"))
	oldMatty := res.Turns[0].SessionID
	done := answer(t, s, oldMatty, "hi there", artifact("art-old", "matty"))
	if err := s.MarkSent(ctx, done.Outbox[0].OutboxID, "p-1"); err != nil {
		t.Fatal(err)
	}
	// The room it made, open, where ann comes too; a closed one it alone
	// is a member of.
	if _, err := s.JoinRoom(ctx, "web", "lobby", person(old), gateway.NewRoom{Bots: []string{"finn"}, Open: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JoinRoom(ctx, "web", "den", person(old), gateway.NewRoom{Bots: []string{"matty"}}); err != nil {
		t.Fatal(err)
	}
	res = appendInbound(t, s, inRoom("lobby", old, old, "o2", "finn, hi", "finn"))
	oldFinn := res.Turns[0].SessionID
	answer(t, s, oldFinn, "hello from finn")
	res = appendInbound(t, s, visitor(old, old, "matty", "o3", "tell finn to look"))
	turn := nextTurn(t, s, res.Turns[0].SessionID)
	o := reply(turn, "asking finn")
	o.Handoffs = []sessions.Handoff{visitorHandoff("dlg-old", old, turn)}
	done = complete(t, s, o)
	answerHandoff(t, s, done.Turns[0].SessionID, old, delegation.StatusDone, artifact("art-dlg", "finn"))
	if d, err := s.Delegation(ctx, "dlg-old"); err != nil || len(d.Artifacts) != 1 {
		t.Fatalf("old visitor's delegation = %+v, %v", d, err)
	}
	deliverAll(t, s)
	// Busy visitors, as quiet: a turn of one is pending, a reply to the
	// other still to deliver.
	busyRes := appendInbound(t, s, visitor(busy, busy, "matty", "b1", "slow one"))
	res = appendInbound(t, s, visitor("web-anon-unsent", "web-anon-unsent", "matty", "u1", "are you there"))
	answer(t, s, res.Turns[0].SessionID, "yes, but you left")

	// Listed people, as quiet as the old visitor: ann, in the room and
	// in private, with a hand-off that takes the old visitor's artifact
	// as input; lee, whose ID looks anonymous.
	annP := gateway.Person{ID: "ann", Identities: []string{"web-ann"}}
	if _, err := s.JoinRoom(ctx, "web", "lobby", annP, gateway.NewRoom{}); err != nil {
		t.Fatal(err)
	}
	appendInbound(t, s, inRoom("lobby", "web-ann", "ann", "a1", "hi all"))
	res = appendInbound(t, s, visitor("web-ann", "ann", "matty", "a2", "tell finn to compare"))
	turn = nextTurn(t, s, res.Turns[0].SessionID)
	o = reply(turn, "asking finn")
	o.Handoffs = []sessions.Handoff{visitorHandoff("dlg-ann", "ann", turn, "art-old")}
	complete(t, s, o)
	res = appendInbound(t, s, visitor(lee, "lee", "matty", "l1", "hi"))
	leeMatty := res.Turns[0].SessionID
	answer(t, s, leeMatty, "hi lee")
	res = appendInbound(t, s, visitor(lee, lee, "matty", "l2", "as a public bot sees me"))
	answer(t, s, res.Turns[0].SessionID, "hi stranger")

	// Focus in the lobby: the old visitor's and ann's.
	for _, pid := range []string{old, "web-ann"} {
		if err := s.SetFocus(ctx, gateway.FocusKey{Platform: "web", ChatID: "lobby", Person: pid}, "finn", now()); err != nil {
			t.Fatal(err)
		}
	}
	// The findings board of the old visitor's private space, and of
	// ann's.
	addFinding(t, s, finding("user:"+old, "matty", "the old visitor's"))
	if _, err := s.StartStage(ctx, findings.StageStart{Space: "user:" + old, Name: "diverge", Isolated: true, At: now()}); err != nil {
		t.Fatal(err)
	}
	addFinding(t, s, finding("user:"+old, "finn", "hidden in their stage"))
	addFinding(t, s, finding("user:ann", "matty", "ann's"))
	// What bots noticed about the old visitor, and about ann.
	addInsight(t, s, insight(old, "matty", "the old visitor likes trains", 0.9))
	addInsight(t, s, insight("ann", "matty", "ann likes trains", 0.9))
	// The shared context of the old visitor's private space, and of
	// ann's.
	for _, space := range []string{"user:" + old, "user:ann"} {
		addEvent(t, s, space, "matty", "an event of "+space)
		mergeEntity(t, s, space, "trip", "matty", `{"to":"Oslo"}`)
		putFact(t, s, space, "trip", "booked", "yes", 0.9, "matty")
	}

	// The cutoff is the real time: the store dates joins by its own
	// clock. An active visitor, seen after it.
	cutoff := time.Now()
	newcomer := visitor("web-anon-new", "web-anon-new", "matty", "n1", "new here")
	newcomer.Message.Time = cutoff.Add(time.Hour).UTC().Truncate(time.Microsecond)
	res = appendInbound(t, s, newcomer)
	answer(t, s, res.Turns[0].SessionID, "welcome")

	got, err := s.DeleteIdleVisitors(ctx, cutoff, listed)
	if err != nil {
		t.Fatal(err)
	}
	// The old visitor's messages: 3 of theirs, 3 replies, the hand-off's
	// wrapper and finn's answer to it. Their sessions: with matty, with
	// finn (the room and the hand-off). Their turns: 4. Outbox: the 4
	// replies. Artifacts: the delegation's (the other is ann's input).
	// Chats: their two private chats (with matty; with finn, where the
	// hand-off's answer went) and the closed room only they were in.
	want := retention.Counts{Visitors: 1, Skipped: 2, Messages: 8, Sessions: 2, Turns: 4, Outbox: 4, Artifacts: 1, Delegations: 1, Chats: 3}
	if got != want {
		t.Errorf("deleted %+v\nwant    %+v", got, want)
	}
	if f.Check != nil {
		f.Check(t, s)
	}

	// Nothing of the old visitor is left.
	for _, bot := range []string{"matty", "finn"} {
		if _, ok, err := s.FindSession(ctx, userKey(bot, old)); err != nil || ok {
			t.Errorf("old visitor's session with %s: found %v, %v", bot, ok, err)
		}
	}
	if list, _ := s.ListSessions(ctx, sessions.Filter{ScopeIDs: []string{old}}); len(list) != 0 {
		t.Errorf("old visitor's sessions listed: %+v", list)
	}
	if _, err := s.Delegation(ctx, "dlg-old"); !isNotFound(err, delegation.ErrNotFound) {
		t.Errorf("old visitor's delegation: %v, want ErrNotFound", err)
	}
	if _, err := s.Artifacts(ctx, []string{"art-dlg"}); !isNotFound(err, delegation.ErrNotFound) {
		t.Errorf("old visitor's delegation's artifact: %v, want ErrNotFound", err)
	}
	if _, _, ok, err := s.LastPrivateChatOfUser(ctx, old); err != nil || ok {
		t.Errorf("old visitor's last private chat: %v, %v", ok, err)
	}
	msgs, err := s.ChatMessages(ctx, "web", "lobby", 10)
	if got := texts(msgs); err != nil || !slices.Equal(got, []string{"hi all"}) {
		t.Errorf("lobby = %q, %v; want only ann's message", got, err)
	}
	if r, err := s.Room(ctx, "web", "lobby", person(old)); err != nil || r.Member {
		t.Errorf("lobby as the old visitor sees it = %+v, %v; want them no longer a member", r, err)
	}
	if r, err := s.Room(ctx, "web", "lobby", annP); err != nil || !r.Member || !slices.Equal(r.Bots, []string{"finn"}) {
		t.Errorf("lobby as ann sees it = %+v, %v", r, err)
	}
	if _, err := s.Room(ctx, "web", "den", annP); !errors.Is(err, gateway.ErrUnknownChat) {
		t.Errorf("the old visitor's own room: %v, want it gone (ErrUnknownChat)", err)
	}
	if f, ok, err := s.Focus(ctx, gateway.FocusKey{Platform: "web", ChatID: "lobby", Person: old}); err != nil || ok {
		t.Errorf("old visitor's focus = %+v, %v, %v; want none", f, ok, err)
	}
	if f, ok, err := s.Focus(ctx, gateway.FocusKey{Platform: "web", ChatID: "lobby", Person: "web-ann"}); err != nil || !ok || f.Bot != "finn" {
		t.Errorf("ann's focus = %+v, %v, %v", f, ok, err)
	}
	pending, err := s.PendingOutbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range pending {
		if e.ChatID == "lobby" || e.ChatID == old+":matty" || e.ChatID == old+":finn" {
			t.Errorf("old visitor's reply still in the outbox: %+v", e)
		}
	}

	// What others keep: ann's records with the old visitor's artifact as
	// input, lee's chats, the busy visitor's turn, the new visitor.
	if d, err := s.Delegation(ctx, "dlg-ann"); err != nil || !slices.Equal(d.Inputs, []string{"art-old"}) {
		t.Errorf("ann's delegation = %+v, %v", d, err)
	}
	if arts, err := s.Artifacts(ctx, []string{"art-old"}); err != nil || len(arts) != 1 || string(arts[0].Content) != "hi" {
		t.Errorf("ann's input = %+v, %v", arts, err)
	}
	for _, key := range []sessions.Key{userKey("matty", "lee"), userKey("matty", lee), userKey("matty", "ann"),
		userKey("finn", "ann"), userKey("matty", "web-anon-new")} {
		sess, ok, err := s.FindSession(ctx, key)
		if err != nil || !ok {
			t.Errorf("session %+v: found %v, %v", key, ok, err)
			continue
		}
		if msgs, err := s.SessionMessages(ctx, sess.ID, "", 10); err != nil || len(msgs) == 0 {
			t.Errorf("session %+v lost its history: %v, %v", key, texts(msgs), err)
		}
	}
	if got := findingTexts(t, s, findings.Query{Space: "user:" + old, Hidden: true, Limit: 10}); len(got) != 0 {
		t.Errorf("old visitor's findings kept: %q", got)
	}
	if _, running, err := s.RunningStage(ctx, "user:"+old); err != nil || running {
		t.Errorf("old visitor's stage kept: %v, %v", running, err)
	}
	if got := findingTexts(t, s, findings.Query{Space: "user:ann", Limit: 10}); !slices.Equal(got, []string{"ann's"}) {
		t.Errorf("ann's findings = %q", got)
	}
	if got := insightTexts(t, s, insights.Query{Users: []string{old}, Limit: 10}); len(got) != 0 {
		t.Errorf("insights about the old visitor kept: %q", got)
	}
	if got := searchTexts(t, s, old, "finn", "trains", 0, 10); len(got) != 0 {
		t.Errorf("insights about the old visitor still found: %q", got)
	}
	if got := searchTexts(t, s, "ann", "finn", "trains", 0, 10); !slices.Equal(got, []string{"ann likes trains"}) {
		t.Errorf("insights about ann = %q", got)
	}
	if c := sharedContext(t, s, "user:"+old, all); !c.Empty() {
		t.Errorf("old visitor's shared context kept: %+v", c)
	}
	if c := sharedContext(t, s, "user:ann", all); len(c.Events) != 1 || len(c.Entities) != 1 || len(c.Facts) != 1 {
		t.Errorf("ann's shared context = %+v", c)
	}
	turn = nextTurn(t, s, busyRes.Turns[0].SessionID)
	if turn.Message.Text != "slow one" {
		t.Errorf("busy visitor's turn = %q", turn.Message.Text)
	}

	// Once more: nothing new to delete; the busy visitors are still busy.
	if again, err := s.DeleteIdleVisitors(ctx, cutoff, listed); err != nil || again != (retention.Counts{Skipped: 2}) {
		t.Errorf("second pass = %+v, %v; want only the busy visitors skipped", again, err)
	}

	// The old visitor comes back (with their old token): a new visitor
	// as far as the store knows, in new chats and sessions.
	res = appendInbound(t, s, visitor(old, old, "matty", "o1", "hello again"))
	if res.Duplicate {
		t.Errorf("a message of a deleted visitor was taken for the deleted one")
	}
	if res.Turns[0].SessionID == oldMatty {
		t.Errorf("the returning visitor got their deleted session back")
	}
	answer(t, s, res.Turns[0].SessionID, "hi again")
	if r, err := s.JoinRoom(ctx, "web", "lobby", person(old), gateway.NewRoom{}); err != nil || !r.Member {
		t.Fatalf("the returning visitor joins the open lobby: %+v, %v", r, err)
	}
	res2 := appendInbound(t, s, inRoom("lobby", old, old, "o2", "finn, again", "finn"))
	if res2.Turns[0].SessionID == oldFinn {
		t.Errorf("the returning visitor got their deleted session back")
	}
	answer(t, s, res2.Turns[0].SessionID, "again")
	msgs, _ = s.SessionMessages(ctx, res.Turns[0].SessionID, "", 10)
	if got := texts(msgs); !slices.Equal(got, []string{"hello again", "hi again"}) {
		t.Errorf("returning visitor's history = %q", got)
	}

	// Later everyone anonymous is idle: all of them go, and a room that
	// only a visitor had joined goes with its bots; lee's and ann's stay.
	complete(t, s, reply(turn, "done at last"))
	deliverAll(t, s)
	if _, err := s.JoinRoom(ctx, "web", "hall", person("web-anon-joiner"), gateway.NewRoom{Bots: []string{"matty"}}); err != nil {
		t.Fatal(err)
	}
	got, err = s.DeleteIdleVisitors(ctx, time.Now().Add(time.Hour), listed)
	if err != nil || got.Visitors != 5 || got.Skipped != 0 {
		t.Errorf("deleting every idle visitor = %+v, %v; want 5 visitors", got, err)
	}
	if f.Check != nil {
		f.Check(t, s)
	}
	if _, err := s.Room(ctx, "web", "hall", person("web-anon-joiner")); !errors.Is(err, gateway.ErrUnknownChat) {
		t.Errorf("the room only a visitor had joined: %v, want it gone (ErrUnknownChat)", err)
	}
	if r, err := s.Room(ctx, "web", "lobby", annP); err != nil || !r.Member || !slices.Equal(r.Bots, []string{"finn"}) {
		t.Errorf("lobby as ann sees it = %+v, %v", r, err)
	}
	msgs, _ = s.ChatMessages(ctx, "web", "lobby", 10)
	if got := texts(msgs); !slices.Equal(got, []string{"hi all"}) {
		t.Errorf("lobby = %q; want only ann's message", got)
	}
	for _, key := range []sessions.Key{userKey("matty", "lee"), userKey("matty", lee), userKey("matty", "ann")} {
		if _, ok, err := s.FindSession(ctx, key); err != nil || !ok {
			t.Errorf("listed person's session %+v: found %v, %v", key, ok, err)
		}
	}
	if depth, err := s.QueueDepth(ctx); err != nil || depth != 1 {
		t.Errorf("queue depth = %d, %v; want ann's hand-off's turn", depth, err)
	}
}

// testRetentionMessages: messages older than the cutoff go, with their
// turns, outbox entries, links and own artifacts; sessions, chats,
// delegation records and their artifacts stay, and so do a message whose
// turn is still pending and a reply still to deliver.
func testRetentionMessages(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	res := appendInbound(t, s, private("ann", "matty", "m1", "first"))
	session := res.Turns[0].SessionID
	done := answer(t, s, session, "first reply", artifact("art-reply", "matty"))
	if err := s.MarkSent(ctx, done.Outbox[0].OutboxID, "p-1"); err != nil {
		t.Fatal(err)
	}
	res = appendInbound(t, s, private("ann", "matty", "m2", "tell finn to look"))
	turn := nextTurn(t, s, res.Turns[0].SessionID)
	o := reply(turn, "asking finn")
	o.Handoffs = []sessions.Handoff{visitorHandoff("dlg-1", "ann", turn)}
	done = complete(t, s, o)
	answerHandoff(t, s, done.Turns[0].SessionID, "web-ann", "", artifact("art-dlg", "finn"))
	appendInbound(t, s, group("lobby", "bob", "g1", "old room talk"))
	deliverAll(t, s)
	pendingRes := appendInbound(t, s, private("bob", "matty", "b1", "still waiting"))
	res = appendInbound(t, s, private("carl", "matty", "c1", "answered, not delivered"))
	unsent := answer(t, s, res.Turns[0].SessionID, "undelivered")
	// The cutoff is the real time: the store dates the rows it makes
	// itself (a hand-off's wrapper) by its own clock.
	cutoff := time.Now()
	recent := private("ann", "matty", "m3", "recent")
	recent.Message.Time = cutoff.Add(time.Hour).UTC().Truncate(time.Microsecond)
	appendInbound(t, s, recent)

	got, err := s.DeleteMessagesBefore(ctx, cutoff)
	if err != nil {
		t.Fatal(err)
	}
	// Messages: ann's 2 and their 2 replies, the wrapper and finn's
	// answer, the room message, carl's (not its undelivered reply). Turns:
	// ann's 2, finn's, carl's. Outbox: the 3 replies delivered.
	// Artifacts: the first reply's (the delegation keeps its).
	want := retention.Counts{Messages: 8, Turns: 4, Outbox: 3, Artifacts: 1}
	if got != want {
		t.Errorf("deleted %+v\nwant    %+v", got, want)
	}
	if f.Check != nil {
		f.Check(t, s)
	}
	msgs, err := s.SessionMessages(ctx, session, "", 10)
	if got := texts(msgs); err != nil || !slices.Equal(got, []string{"recent"}) {
		t.Errorf("ann's history = %q, %v; want only the recent message", got, err)
	}
	if msgs, _ := s.ChatMessages(ctx, "web", "lobby", 10); len(msgs) != 0 {
		t.Errorf("lobby = %q; want nothing", texts(msgs))
	}
	d, err := s.Delegation(ctx, "dlg-1")
	if err != nil || d.Status != delegation.StatusQueued || len(d.Artifacts) != 1 || d.Artifacts[0].ID != "art-dlg" {
		t.Errorf("delegation = %+v, %v; want it kept with its artifact", d, err)
	}
	if turn := nextTurn(t, s, pendingRes.Turns[0].SessionID); turn.Message.Text != "still waiting" {
		t.Errorf("pending turn's message = %q", turn.Message.Text)
	}
	if pending, err := s.PendingOutbox(ctx); err != nil || len(pending) != 1 || pending[0].OutboxID != unsent.Outbox[0].OutboxID {
		t.Errorf("outbox = %+v, %v; want the undelivered reply", pending, err)
	}
	// The session goes on.
	res = appendInbound(t, s, private("ann", "matty", "m4", "more"))
	if res.Turns[0].SessionID != session {
		t.Errorf("ann's session changed")
	}
}
