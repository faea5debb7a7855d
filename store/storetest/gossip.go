package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/world/gossip"
)

// gossipEvent is news ann told matty in message msg, queued (or as
// status says).
func gossipEvent(user string, msg int64, status, summary string) gossip.Event {
	return gossip.Event{User: user, UserName: "Ann", SourceBot: "matty", MessageID: msg, Key: fmt.Sprint("web/lobby/", msg),
		Topic: "career", Summary: summary, Status: status, CreatedAt: now()}
}

func addGossip(t *testing.T, s Store, e gossip.Event, due ...string) gossip.Event {
	t.Helper()
	got, created, err := s.AddGossip(context.Background(), e, due)
	if err != nil || !created {
		t.Fatalf("add gossip %q: %v, created %v", e.Summary, err, created)
	}
	return got
}

// memoryNote is the system message a memory of e puts in bot's session.
func memoryNote(e gossip.Event, bot string) chat.Message {
	return chat.Message{Kind: chat.KindSystem, From: chat.Party{Kind: chat.System, ID: e.SourceBot, Name: gossip.NoteFrom},
		UserID: e.User, Bot: bot, Text: gossip.NoteText("Matty Atlas", e), Time: now()}
}

func deliver(t *testing.T, s Store, e gossip.Event, bot string) bool {
	t.Helper()
	done, err := s.DeliverMemory(context.Background(), gossip.Delivery{Event: e, Bot: bot}, memoryNote(e, bot))
	if err != nil {
		t.Fatalf("deliver %d to %s: %v", e.ID, bot, err)
	}
	return done
}

// memoryTexts lists the memories bot has of user.
func memoryTexts(t *testing.T, s Store, bot, user string, limit int) []string {
	t.Helper()
	ms, err := s.Memories(context.Background(), bot, user, limit)
	if err != nil {
		t.Fatalf("memories of %s about %s: %v", bot, user, err)
	}
	out := []string{}
	for _, m := range ms {
		if m.From != "matty" || m.EventID == 0 {
			t.Errorf("memory %+v: want it from matty, with its event", m)
		}
		out = append(out, m.Text)
	}
	return out
}

// sessionNotes lists the system messages of bot's session with user.
func sessionNotes(t *testing.T, s Store, bot, user string) []string {
	t.Helper()
	sess, ok, err := s.FindSession(context.Background(), userKey(bot, user))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	if !ok {
		return out
	}
	msgs, err := s.SessionMessages(context.Background(), sess.ID, chat.KindSystem, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

func gossipOf(t *testing.T, s Store, id int64) gossip.Event {
	t.Helper()
	e, ok := findGossip(t, s, id)
	if !ok {
		t.Fatalf("no gossip event %d", id)
	}
	return e
}

// findGossip finds event id among the newest thousand.
func findGossip(t *testing.T, s Store, id int64) (gossip.Event, bool) {
	t.Helper()
	es, err := s.GossipEvents(context.Background(), gossip.Query{Limit: 1000})
	if err != nil {
		t.Fatalf("gossip events: %v", err)
	}
	for _, e := range es {
		if e.ID == id {
			return e, true
		}
	}
	return gossip.Event{}, false
}

// testGossipEvents: events are stored once per message, listed newest
// first by person and status, with their pending deliveries.
func testGossipEvents(t *testing.T, f Factory) {
	s := f.New(t)
	ctx := context.Background()
	blocked := gossipEvent("ann", 11, gossip.StatusBlocked, "My salary doubled.")
	blocked.Reason = `sensitive topic "salary"`
	b := addGossip(t, s, blocked)
	if b.ID == 0 || b.Status != gossip.StatusBlocked || b.Reason != blocked.Reason || len(b.Pending) != 0 || len(b.Recipients) != 0 {
		t.Errorf("blocked event stored as %+v", b)
	}
	q := addGossip(t, s, gossipEvent("ann", 12, gossip.StatusQueued, "I got a new job at a tech company!"), "priest", "finn")
	if q.ID <= b.ID || !slices.Equal(q.Pending, []string{"finn", "priest"}) || q.Recipients != nil {
		t.Errorf("queued event stored as %+v; want a later ID, finn and priest pending", q)
	}
	other := addGossip(t, s, gossipEvent("bob", 13, gossip.StatusDelivered, "Moving to Lisbon."))

	// The same message again (another bot's copy of it): the first
	// event, unchanged.
	copyOf := gossipEvent("ann", 99, gossip.StatusBlocked, "something else")
	copyOf.Key, copyOf.SourceBot = q.Key, "finn"
	again, created, err := s.AddGossip(ctx, copyOf, []string{"x"})
	if err != nil || created || again.ID != q.ID || again.Summary != q.Summary || again.SourceBot != "matty" || !slices.Equal(again.Pending, q.Pending) {
		t.Errorf("the same message again = %+v, created %v, %v; want event %d as it was", again, created, err, q.ID)
	}
	// Without a key, nothing is taken for the same.
	noKey := gossipEvent("ann", 12, gossip.StatusBlocked, "keyless")
	noKey.Key = ""
	nk := addGossip(t, s, noKey)
	noKey.Summary = "keyless too"
	nk2 := addGossip(t, s, noKey)
	if nk.ID == nk2.ID {
		t.Errorf("two events without a key were taken for one")
	}

	ids := func(query gossip.Query) []int64 {
		t.Helper()
		es, err := s.GossipEvents(ctx, query)
		if err != nil {
			t.Fatalf("gossip events %+v: %v", query, err)
		}
		out := []int64{}
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	for _, tc := range []struct {
		q    gossip.Query
		want []int64
	}{
		{gossip.Query{Limit: 10}, []int64{nk2.ID, nk.ID, other.ID, q.ID, b.ID}},
		{gossip.Query{Limit: 2}, []int64{nk2.ID, nk.ID}},
		{gossip.Query{Users: []string{"bob", "ann"}, Limit: 3}, []int64{nk2.ID, nk.ID, other.ID}},
		{gossip.Query{Users: []string{"web-ann", "bob"}, Limit: 10}, []int64{other.ID}},
		{gossip.Query{Users: []string{"ann"}, Status: gossip.StatusQueued, Limit: 10}, []int64{q.ID}},
		{gossip.Query{Users: []string{"ann"}, Status: gossip.StatusBlocked, Limit: 10}, []int64{nk2.ID, nk.ID, b.ID}},
		{gossip.Query{Users: []string{"nobody"}, Limit: 10}, []int64{}},
	} {
		if got := ids(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("gossip events %+v = %v, want %v", tc.q, got, tc.want)
		}
	}
	got := gossipOf(t, s, q.ID)
	if got.User != "ann" || got.UserName != "Ann" || got.SourceBot != "matty" || got.MessageID != 12 || got.Key != "web/lobby/12" || got.Topic != "career" ||
		got.Summary != "I got a new job at a tech company!" || got.Depth != 0 || !got.CreatedAt.Equal(q.CreatedAt) {
		t.Errorf("stored event = %+v", got)
	}
	if e, ok := findGossip(t, s, other.ID+100); ok {
		t.Errorf("an unknown event: %+v", e)
	}
}

// testGossipDelivery: a delivery stores its memory in the recipient's
// session with the person and is carried out once; the last one settles
// the event; the queue survives a reopen.
func testGossipDelivery(t *testing.T, f Factory) {
	s := f.New(t)
	ctx := context.Background()
	e := addGossip(t, s, gossipEvent("ann", 21, gossip.StatusQueued, "I got a new job."), "finn", "priest", "zed")
	pending, err := s.PendingDeliveries(ctx, 10)
	if err != nil || len(pending) != 3 || pending[0].Bot != "finn" || pending[0].Event.ID != e.ID || pending[0].Event.Summary != e.Summary {
		t.Fatalf("pending = %+v, %v; want finn, priest and zed of event %d", pending, err, e.ID)
	}
	if !deliver(t, s, e, "finn") {
		t.Fatal("the first delivery to finn was not carried out")
	}
	if deliver(t, s, e, "finn") {
		t.Error("a delivery carried out twice")
	}
	want := "[Gossip from Matty Atlas] Ann: I got a new job."
	if got := sessionNotes(t, s, "finn", "ann"); !slices.Equal(got, []string{want}) {
		t.Errorf("finn's session with ann holds %q, want the memory once", got)
	}
	if got := memoryTexts(t, s, "finn", "ann", 5); !slices.Equal(got, []string{"Ann: I got a new job."}) {
		t.Errorf("finn's memories of ann = %q", got)
	}
	if got := memoryTexts(t, s, "priest", "ann", 5); len(got) != 0 {
		t.Errorf("priest remembers %q before its delivery", got)
	}
	if got := gossipOf(t, s, e.ID); got.Status != gossip.StatusQueued || !slices.Equal(got.Recipients, []string{"finn"}) ||
		!slices.Equal(got.Pending, []string{"priest", "zed"}) {
		t.Errorf("after one delivery the event is %+v", got)
	}

	// A restart: the queue holds what is left.
	s = f.Reopen(t, s)
	pending, err = s.PendingDeliveries(ctx, 10)
	if err != nil || len(pending) != 2 || pending[0].Bot != "priest" || pending[1].Bot != "zed" {
		t.Fatalf("pending after a reopen = %+v, %v; want priest and zed", pending, err)
	}
	if err := s.DropDelivery(ctx, pending[1], "zed is no longer configured", now()); err != nil {
		t.Fatal(err)
	}
	if got := gossipOf(t, s, e.ID); got.Status != gossip.StatusQueued {
		t.Errorf("with priest's delivery pending the event is %s", got.Status)
	}
	if !deliver(t, s, pending[0].Event, "priest") {
		t.Fatal("priest's delivery was not carried out")
	}
	got := gossipOf(t, s, e.ID)
	if got.Status != gossip.StatusDelivered || !slices.Equal(got.Recipients, []string{"finn", "priest"}) || len(got.Pending) != 0 ||
		got.Reason != "not delivered to zed: zed is no longer configured" {
		t.Errorf("settled event = %+v", got)
	}
	if pending, err := s.PendingDeliveries(ctx, 10); err != nil || len(pending) != 0 {
		t.Errorf("pending once all are settled = %+v, %v", pending, err)
	}
	if got := sessionNotes(t, s, "finn", "ann"); len(got) != 1 {
		t.Errorf("finn's session after the reopen holds %q", got)
	}
	if err := s.DropDelivery(ctx, pending[0], "late", now()); err != nil {
		t.Errorf("dropping a delivery carried out: %v", err)
	}
	if got := memoryTexts(t, s, "priest", "ann", 5); len(got) != 1 {
		t.Errorf("a drop after delivery took priest's memory: %q", got)
	}
}

// testGossipBlock: blocking an event drops its pending deliveries and
// keeps those made.
func testGossipBlock(t *testing.T, f Factory) {
	s := f.New(t)
	ctx := context.Background()
	e := addGossip(t, s, gossipEvent("ann", 31, gossip.StatusQueued, "Moving to Lisbon."), "finn", "priest")
	deliver(t, s, e, "finn")
	if err := s.BlockGossip(ctx, e.ID, "the person is invisible (invisible: true) before delivery", now()); err != nil {
		t.Fatal(err)
	}
	got := gossipOf(t, s, e.ID)
	if got.Status != gossip.StatusBlocked || !strings.Contains(got.Reason, "invisible") ||
		!slices.Equal(got.Recipients, []string{"finn"}) || len(got.Pending) != 0 {
		t.Errorf("blocked event = %+v", got)
	}
	if deliver(t, s, e, "priest") {
		t.Error("a delivery of a blocked event was carried out")
	}
	if got := memoryTexts(t, s, "priest", "ann", 5); len(got) != 0 {
		t.Errorf("priest remembers %q of a blocked event", got)
	}
}

// testGossipConcurrent: deliveries raced by several writers (gateways
// sharing the database) are each carried out once.
func testGossipConcurrent(t *testing.T, f Factory) {
	s := f.New(t)
	bots := []string{"a", "b", "c", "d"}
	var events []gossip.Event
	for i := range 3 {
		events = append(events, addGossip(t, s, gossipEvent("ann", int64(40+i), gossip.StatusQueued, fmt.Sprintf("News %d.", i)), bots...))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := map[string]int{}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range events {
				for i := range bots {
					bot := bots[(i+w)%len(bots)]
					ok, err := s.DeliverMemory(context.Background(), gossip.Delivery{Event: e, Bot: bot}, memoryNote(e, bot))
					if err != nil {
						t.Errorf("deliver: %v", err)
						return
					}
					if ok {
						mu.Lock()
						done[fmt.Sprint(e.ID, bot)]++
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(done) != len(events)*len(bots) {
		t.Errorf("%d deliveries carried out, want %d", len(done), len(events)*len(bots))
	}
	for k, n := range done {
		if n != 1 {
			t.Errorf("delivery %s carried out %d times", k, n)
		}
	}
	for _, bot := range bots {
		if got := sessionNotes(t, s, bot, "ann"); len(got) != len(events) {
			t.Errorf("%s's session holds %d memories, want %d: %q", bot, len(got), len(events), got)
		}
	}
	for _, e := range events {
		if got := gossipOf(t, s, e.ID); got.Status != gossip.StatusDelivered || len(got.Recipients) != len(bots) {
			t.Errorf("event %d = %s to %v", e.ID, got.Status, got.Recipients)
		}
	}
}

// testMemories: a bot's memories of a person are the newest limit,
// oldest first, its own only, about that person only.
func testMemories(t *testing.T, f Factory) {
	s := f.New(t)
	var last gossip.Event
	for i := range 4 {
		e := addGossip(t, s, gossipEvent("ann", int64(50+i), gossip.StatusQueued, fmt.Sprintf("News %d.", i)), "finn", "priest")
		deliver(t, s, e, "finn")
		last = e
	}
	bob := addGossip(t, s, gossipEvent("bob", 60, gossip.StatusQueued, "Bob's news."), "finn")
	deliver(t, s, bob, "finn")
	deliver(t, s, last, "priest")
	if got := memoryTexts(t, s, "finn", "ann", 2); !slices.Equal(got, []string{"Ann: News 2.", "Ann: News 3."}) {
		t.Errorf("finn's newest 2 memories of ann = %q", got)
	}
	if got := memoryTexts(t, s, "finn", "ann", 10); len(got) != 4 {
		t.Errorf("finn's memories of ann = %q, want 4", got)
	}
	if got := memoryTexts(t, s, "priest", "ann", 10); !slices.Equal(got, []string{"Ann: News 3."}) {
		t.Errorf("priest's memories of ann = %q", got)
	}
	if got := memoryTexts(t, s, "matty", "ann", 10); len(got) != 0 {
		t.Errorf("the bot that was told remembers %q", got)
	}
}

// testMessagesFrom: a bot knows a person by their chat messages in its
// sessions, before a given message, on any platform, in private chats
// and rooms alike; counts stop at their bound.
func testMessagesFrom(t *testing.T, f Factory) {
	s := f.New(t)
	ctx := context.Background()
	// ann to matty: three in private, one in a room; finn answers them.
	for i := range 3 {
		res := appendInbound(t, s, private("ann", "matty", fmt.Sprint("p", i), "hi matty"))
		answer(t, s, res.Turns[0].SessionID, "hello")
	}
	res := appendInbound(t, s, group("lobby", "ann", "g1", "@matty @finn both of you", "matty", "finn"))
	answer(t, s, res.Turns[0].SessionID, "matty here")
	// In the room, unaddressed: no bot's.
	appendInbound(t, s, group("lobby", "ann", "g2", "just chatting"))
	// bob talks to priest a lot.
	for i := range 4 {
		appendInbound(t, s, private("bob", "priest", fmt.Sprint("b", i), "hi priest"))
	}
	last := appendInbound(t, s, private("ann", "matty", "p9", "I got a new job")).Message.ID
	appendInbound(t, s, private("ann", "priest", "late", "after the news"))

	counts, err := s.MessagesFrom(ctx, "ann", []string{"matty", "finn", "priest", "zed"}, last, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"matty": 4, "finn": 1}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("ann's messages before the news = %v, want %v", counts, want)
	}
	if counts, _ := s.MessagesFrom(ctx, "ann", []string{"matty"}, last, 3); counts["matty"] != 3 {
		t.Errorf("count bounded by 3 = %v", counts)
	}
	if counts, _ := s.MessagesFrom(ctx, "ann", []string{"priest"}, last+100, 10); counts["priest"] != 1 {
		t.Errorf("ann's messages to priest, all of them = %v", counts)
	}
	if counts, _ := s.MessagesFrom(ctx, "bob", []string{"priest", "matty"}, last+100, 10); fmt.Sprint(counts) != "map[priest:4]" {
		t.Errorf("bob's = %v", counts)
	}
}

// testGossipRetention: an idle anonymous visitor's gossip goes with
// them; a listed person's stays.
func testGossipRetention(t *testing.T, f Factory) {
	s := f.New(t)
	ctx := context.Background()
	const old = "web-anon-gossipy"
	res := appendInbound(t, s, visitor(old, old, "matty", "v1", "I got a new job"))
	answer(t, s, res.Turns[0].SessionID, "congrats")
	deliverAll(t, s)
	ev := addGossip(t, s, gossipEvent(old, res.Message.ID, gossip.StatusQueued, "I got a new job"), "finn", "priest")
	deliver(t, s, ev, "finn")
	annEv := addGossip(t, s, gossipEvent("ann", 70, gossip.StatusQueued, "Ann's news."), "finn")
	time.Sleep(2 * time.Millisecond)
	if got, err := s.DeleteIdleVisitors(ctx, time.Now(), func(string) bool { return false }); err != nil || got.Visitors != 1 {
		t.Fatalf("retention = %+v, %v; want the visitor deleted", got, err)
	}
	if e, ok := findGossip(t, s, ev.ID); ok {
		t.Errorf("the visitor's event after retention: %+v, want it gone", e)
	}
	if got := memoryTexts(t, s, "finn", old, 5); len(got) != 0 {
		t.Errorf("finn still remembers the deleted visitor: %q", got)
	}
	pending, err := s.PendingDeliveries(ctx, 10)
	if err != nil || len(pending) != 1 || pending[0].Event.ID != annEv.ID {
		t.Errorf("pending after retention = %+v, %v; want ann's only", pending, err)
	}
	if f.Check != nil {
		f.Check(t, s)
	}
}
