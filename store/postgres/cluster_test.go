package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/internal/pgtest"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/store/postgres"
)

// member opens a store on url as a new instance and joins it; the
// membership runs until the test ends. kill ends its coordination
// connection from the server's side and stops the membership before it
// reconnects, as the death of its process does (the store's pool stays
// usable, for the test to look at what the dead instance left).
func member(t *testing.T, url string) (s *postgres.Store, m *postgres.Member, kill func()) {
	t.Helper()
	ctx := context.Background()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m, err = s.Join(ctx, "host-"+s.Instance()+":8080")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { m.Run(runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	kill = func() {
		t.Helper()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, `SELECT COUNT(pg_terminate_backend(l.pid, 5000)) FROM pg_locks l JOIN instances i
			ON l.locktype = 'advisory' AND l.classid = ((i.lock_key >> 32) & 4294967295)::oid
			AND l.objid = (i.lock_key & 4294967295)::oid AND l.objsubid = 1
			WHERE i.id = $1`, s.Instance()).Scan(&n); err != nil || n != 1 {
			t.Fatalf("terminating %s: %d backends, %v", s.Instance(), n, err)
		}
		stop()
		<-done
	}
	return s, m, kill
}

// TestSessionLease: a session's turns run in one instance at a time. The
// lease is taken by the first NextTurn, refused to another instance
// while its holder lives, given back when the session has no turn left,
// and taken over once the holder died.
func TestSessionLease(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	a, _, killA := member(t, url)
	b, _, _ := member(t, url)

	res, err := a.AppendInbound(ctx, inbound("ann", "m1", "one"))
	if err != nil {
		t.Fatal(err)
	}
	session := res.Turns[0].SessionID
	turn, ok, err := a.NextTurn(ctx, session, 20)
	if err != nil || !ok {
		t.Fatalf("A's next turn: %v %v", ok, err)
	}
	if _, ok, err := b.NextTurn(ctx, session, 20); err != nil || ok {
		t.Fatalf("B ran a turn of a session A holds: %v %v", ok, err)
	}
	if ids, err := b.PendingSessions(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("B's pending sessions while A holds it = %v, %v; want none", ids, err)
	}
	if _, err := a.CompleteTurn(ctx, sessions.Outcome{Turn: turn.Ref}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.NextTurn(ctx, session, 20); err != nil || ok {
		t.Fatalf("A's next turn after the last: %v %v", ok, err)
	}

	// Given back: B takes the next turn, and holds it.
	if _, err := a.AppendInbound(ctx, inbound("ann", "m2", "two")); err != nil {
		t.Fatal(err)
	}
	if turn, ok, err = b.NextTurn(ctx, session, 20); err != nil || !ok || turn.Text != "two" {
		t.Fatalf("B's next turn: %+v %v %v", turn.Ref, ok, err)
	}
	if _, ok, _ := a.NextTurn(ctx, session, 20); ok {
		t.Fatal("A ran a turn of a session B holds")
	}

	// A holding it dies: B takes it over.
	if _, err := b.CompleteTurn(ctx, sessions.Outcome{Turn: turn.Ref}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.NextTurn(ctx, session, 20); ok {
		t.Fatal("a turn left")
	}
	if _, err := a.AppendInbound(ctx, inbound("ann", "m3", "three")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.NextTurn(ctx, session, 20); err != nil || !ok {
		t.Fatalf("A's turn three: %v %v", ok, err)
	}
	if _, ok, _ := b.NextTurn(ctx, session, 20); ok {
		t.Fatal("B ran a turn of a session A holds")
	}
	killA()
	if ids, err := b.PendingSessions(ctx); err != nil || len(ids) != 1 || ids[0] != session {
		t.Fatalf("B's pending sessions after A died = %v, %v", ids, err)
	}
	if turn, ok, err := b.NextTurn(ctx, session, 20); err != nil || !ok || turn.Text != "three" {
		t.Fatalf("B's take-over: %+v %v %v", turn.Ref, ok, err)
	}
}

// TestOutboxOwners: an instance's pending outbox is its own; the entries
// of one that died are taken over once, by one instance.
func TestOutboxOwners(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	a, _, killA := member(t, url)
	b, _, _ := member(t, url)
	c, _, _ := member(t, url)
	res, err := a.AppendInbound(ctx, inbound("ann", "m1", "one"))
	if err != nil {
		t.Fatal(err)
	}
	turn, _, err := a.NextTurn(ctx, res.Turns[0].SessionID, 20)
	if err != nil {
		t.Fatal(err)
	}
	m := turn.Message
	done, err := a.CompleteTurn(ctx, sessions.Outcome{Turn: turn.Ref, Posts: []sessions.Post{{Session: turn.Ref.SessionID, Message: chat.Message{
		Platform: m.Platform, ChatID: m.ChatID, ChatType: m.ChatType, Kind: chat.KindChat,
		From: chat.Party{Kind: chat.Bot, ID: "matty", Name: "Matty"}, UserID: m.UserID, Bot: "matty", Text: "hi", Time: time.Now(),
	}}}})
	if err != nil || len(done.Outbox) != 1 {
		t.Fatalf("complete: %+v %v", done, err)
	}
	for name, s := range map[string]*postgres.Store{"B": b, "C": c} {
		if got, err := s.OrphanedOutbox(ctx); err != nil || len(got) != 0 {
			t.Fatalf("%s took over a live instance's entries: %v %v", name, got, err)
		}
	}
	if got, err := a.PendingOutbox(ctx); err != nil || len(got) != 1 {
		t.Fatalf("A's pending outbox = %v, %v", got, err)
	}
	killA()
	gotB, err := b.OrphanedOutbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gotC, err := c.OrphanedOutbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(gotB)+len(gotC) != 1 {
		t.Fatalf("the dead instance's entry was taken over %d times (B %d, C %d), want once", len(gotB)+len(gotC), len(gotB), len(gotC))
	}
	// Delivered elsewhere, an entry is never marked failed.
	if err := c.MarkSent(ctx, done.Outbox[0].OutboxID, ""); err != nil {
		t.Fatal(err)
	}
	if err := b.MarkFailed(ctx, done.Outbox[0].OutboxID, "parked too long"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.OutboxEntries(ctx, []int64{done.Outbox[0].OutboxID}); err != nil || len(got) != 1 || got[0].Text != "hi" {
		t.Fatalf("entry by ID = %v, %v", got, err)
	}
	if got, err := b.PendingEntries(ctx, "web", []string{m.ChatID}); err != nil || len(got) != 0 {
		t.Fatalf("pending entries of the chat after delivery = %v, %v", got, err)
	}
}

// TestLead: a bot's lead is held by one instance; when it dies another
// takes it within a few seconds. The instances list shows who leads.
func TestLead(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, ma, killA := member(t, url)
	b, mb, _ := member(t, url)

	leadA, err := ma.Lead(ctx, "telegram", "matty")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan context.Context, 1)
	go func() {
		l, err := mb.Lead(ctx, "telegram", "matty")
		if err == nil {
			got <- l
		}
	}()
	select {
	case <-got:
		t.Fatal("B leads a bot A leads")
	case <-time.After(2500 * time.Millisecond):
	}
	// Another bot is B's at once.
	if _, err := mb.Lead(ctx, "discord", "matty"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		list, err := b.Instances(ctx)
		return err == nil && len(list) == 2 && len(list[0].Leads)+len(list[1].Leads) == 2
	})

	killA()
	killed := time.Now()
	select {
	case <-got:
		t.Logf("B took the lead %v after A died", time.Since(killed).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("B did not take the lead within 10 s of A's death")
	}
	select {
	case <-leadA.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("A's lead did not end when its connection did")
	}
	list, err := b.Instances(ctx)
	if err != nil || len(list) != 1 || list[0].ID != b.Instance() {
		t.Fatalf("instances after A died = %+v, %v", list, err)
	}
}

// TestListen: what one instance stores for a widget chat, a room
// message, and a delegation change are announced to the others, never
// to itself.
func TestListen(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, _, _ := member(t, url)
	b, _, _ := member(t, url)
	heard := map[string]chan gateway.Notice{"A": make(chan gateway.Notice, 10), "B": make(chan gateway.Notice, 10)}
	for name, s := range map[string]*postgres.Store{"A": a, "B": b} {
		ready := make(chan struct{})
		go s.Listen(ctx, func(n gateway.Notice) { heard[name] <- n }, func(context.Context) {}, ready)
		<-ready
	}
	room := inbound("ann", "r1", "@matty hi")
	room.Message.ChatID, room.Message.ChatType, room.Message.Bot, room.ChatName = "den", chat.Group, "", "den"
	if _, err := a.AppendInbound(ctx, room); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-heard["B"]:
		if n.Kind != gateway.NoticeMessage || n.Platform != "web" || n.ChatID != "den" || n.ID == 0 {
			t.Fatalf("B heard %+v", n)
		}
		m, err := b.Message(ctx, n.ID)
		if err != nil || m.Text != "@matty hi" || m.ChatType != chat.Group {
			t.Fatalf("the announced message = %+v, %v", m, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("B heard nothing of A's room message")
	}
	select {
	case n := <-heard["A"]:
		t.Fatalf("A heard its own notice %+v", n)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := b.Message(ctx, 1<<40); err == nil {
		t.Fatal("an unknown message was found")
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
