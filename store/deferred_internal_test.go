package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

// deferredFixture is a store with ann's session with matty cached, ready
// for instant exchanges.
type deferredFixture struct {
	t    *testing.T
	s    *SQLite
	path string
	in   gateway.Inbound
	sid  string
	n    int
}

func newDeferredFixture(t *testing.T) *deferredFixture {
	t.Helper()
	ctx := context.Background()
	s, path := openWithoutRounds(t)
	f := &deferredFixture{t: t, s: s, path: path, in: gateway.Inbound{
		Event: gateway.Event{Platform: "web", Bot: "matty", ChatID: "web-ann:matty", ChatType: gateway.ChatPrivate,
			MessageID: "0", Sender: gateway.Sender{PlatformID: "web-ann"}, Text: "hello", Time: time.Now()},
		UserID: "user-ann", UserName: "Ann",
		Turns: []gateway.TurnRequest{{Session: gateway.SessionKey{Bot: "matty", Scope: gateway.ScopeUser, ScopeID: "user-ann"}, Text: "hello"}},
	}}
	first, err := s.AppendInbound(ctx, f.in)
	if err != nil {
		t.Fatal(err)
	}
	f.sid = first.Turns[0].SessionID
	d, err := s.LoadTurn(ctx, first.Turns[0].ID, 20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompleteTurn(ctx, gateway.Completion{Turn: d.Ref, Session: f.sid}); err != nil {
		t.Fatal(err)
	}
	return f
}

// exchange stores the next instant exchange and returns its reply's
// outbox entry.
func (f *deferredFixture) exchange() gateway.Outbound {
	f.t.Helper()
	f.n++
	id := fmt.Sprint(f.n)
	in := f.in
	in.Event.MessageID, in.Event.Text = id, "message "+id
	_, latest, ok := f.s.PeekSession(in.Turns[0].Session, 20)
	if !ok {
		f.t.Fatal("session not cached")
	}
	c := gateway.Completion{Session: f.sid, Posts: []gateway.Post{{Session: f.sid, Message: gateway.Message{
		Platform: "web", ChatID: "web-ann:matty", ChatType: gateway.ChatPrivate, Kind: gateway.KindChat,
		From: gateway.Party{Kind: "bot", ID: "matty", Name: "Matty"}, UserID: "user-ann", Bot: "matty",
		Text: "reply " + id, ReplyTo: id, Time: time.Now(),
	}}}}
	res, done, err := f.s.AppendAnswered(context.Background(), in, c, latest)
	if err != nil || len(done.Outbox) != 1 || done.Outbox[0].MessageID != res.Message.ID+1 {
		f.t.Fatalf("exchange %s: %+v, %+v, %v", id, res, done, err)
	}
	return done.Outbox[0]
}

// row is the outbox row of id: its status, or "" when it has none.
func (f *deferredFixture) row(id int64) string {
	f.t.Helper()
	var status string
	err := f.s.queryRow(context.Background(), `SELECT COALESCE((SELECT status FROM outbox WHERE id = ?), '')`, id).Scan(&status)
	if err != nil {
		f.t.Fatal(err)
	}
	return status
}

// flush runs the committer's flush of the deferred entries now, with
// entries of any age due.
func (f *deferredFixture) flush() { f.flushOlderThan(0) }

// flushOlderThan runs the committer's flush now, with the entries older
// than age due.
func (f *deferredFixture) flushOlderThan(age time.Duration) {
	f.t.Helper()
	onCommitter(f.t, f.s, func() { f.s.deferred.age, f.s.deferred.flushRequested = age, true })
	// The flush goes first in the next batch.
	onCommitter(f.t, f.s, func() {})
	onCommitter(f.t, f.s, func() { f.s.deferred.age = deferAge })
}

// watermark is meta's outbox_upto and outbox_id_upto.
func (f *deferredFixture) watermark() (upto, idUpto int64) {
	f.t.Helper()
	if err := f.s.queryRow(context.Background(), `SELECT (SELECT value FROM meta WHERE key = 'outbox_upto'),
		(SELECT value FROM meta WHERE key = 'outbox_id_upto')`).Scan(&upto, &idUpto); err != nil {
		f.t.Fatal(err)
	}
	return upto, idUpto
}

// pendingIDs is the message IDs PendingOutbox lists.
func pendingIDs(t *testing.T, s *SQLite) []int64 {
	t.Helper()
	return pendingOutbox(t, s, func(o gateway.Outbound) int64 { return o.MessageID })
}

// pendingOutbox is an ID of each entry PendingOutbox lists (which commits
// the queued marks first).
func pendingOutbox(t *testing.T, s *SQLite, id func(gateway.Outbound) int64) []int64 {
	t.Helper()
	out, err := s.PendingOutbox(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, o := range out {
		ids = append(ids, id(o))
	}
	return ids
}

// TestDeferredOutboxDelivered: a reply marked sent without a platform ID
// before its entry's row is written never gets one, and the watermark
// passes it; the store reopened has nothing to send.
func TestDeferredOutboxDelivered(t *testing.T) {
	f := newDeferredFixture(t)
	o := f.exchange()
	if st := f.row(o.OutboxID); st != "" {
		t.Fatalf("a reply just stored has an outbox row (%s)", st)
	}
	if err := f.s.MarkSent(context.Background(), o.OutboxID, ""); err != nil {
		t.Fatal(err)
	}
	f.flush()
	if st := f.row(o.OutboxID); st != "" {
		t.Errorf("a delivered reply got an outbox row (%s)", st)
	}
	if upto, idUpto := f.watermark(); upto != o.MessageID || idUpto != o.OutboxID {
		t.Errorf("watermark %d, %d; want %d, %d", upto, idUpto, o.MessageID, o.OutboxID)
	}
	s, _ := crashAndReopen(t, f.s, f.path)
	if ids := pendingIDs(t, s); len(ids) != 0 {
		t.Errorf("pending after reopening: %v; want none", ids)
	}
}

// TestDeferredOutboxUndelivered: a reply not delivered gets its row once
// its entry is old enough, and the watermark stops before it until then;
// marked sent later, the row is.
func TestDeferredOutboxUndelivered(t *testing.T) {
	ctx := context.Background()
	f := newDeferredFixture(t)
	delivered, waiting := f.exchange(), f.exchange()
	if err := f.s.MarkSent(ctx, delivered.OutboxID, ""); err != nil {
		t.Fatal(err)
	}
	// A flush with nothing old enough moves the watermark only up to the
	// waiting entry.
	f.flushOlderThan(time.Hour)
	if st := f.row(waiting.OutboxID); st != "" {
		t.Errorf("a reply younger than deferAge got a row (%s)", st)
	}
	if upto, idUpto := f.watermark(); upto != waiting.MessageID-1 || idUpto != waiting.OutboxID-1 {
		t.Errorf("watermark %d, %d; want %d, %d (before the waiting entry)", upto, idUpto, waiting.MessageID-1, waiting.OutboxID-1)
	}
	f.flush()
	if st := f.row(waiting.OutboxID); st != "pending" {
		t.Fatalf("an undelivered reply's row after a flush: %q, want pending", st)
	}
	if st := f.row(delivered.OutboxID); st != "" {
		t.Errorf("the delivered reply got a row (%s)", st)
	}
	if ids := pendingIDs(t, f.s); !slices.Equal(ids, []int64{waiting.MessageID}) {
		t.Errorf("pending %v; want [%d]", ids, waiting.MessageID)
	}
	if err := f.s.MarkSent(ctx, waiting.OutboxID, ""); err != nil {
		t.Fatal(err)
	}
	if ids := pendingIDs(t, f.s); len(ids) != 0 { // commits the lazy mark
		t.Errorf("pending after the mark: %v", ids)
	}
	if st := f.row(waiting.OutboxID); st != "sent" {
		t.Errorf("the row after the mark: %q, want sent", st)
	}
}

// TestDeferredOutboxMarksWriteTheRow: every mark but a bare MarkSent
// writes the entry's row first and applies to it.
func TestDeferredOutboxMarksWriteTheRow(t *testing.T) {
	ctx := context.Background()
	f := newDeferredFixture(t)
	for _, c := range []struct {
		name   string
		mark   func(id int64) error
		status string
		check  string
	}{
		{"attempt", func(id int64) error { return f.s.MarkAttempt(ctx, id, "timeout") }, "pending",
			`SELECT attempts = 1 AND last_error = 'timeout' FROM outbox WHERE id = ?`},
		{"failed", func(id int64) error { return f.s.MarkFailed(ctx, id, "gone") }, "failed",
			`SELECT attempts = 1 AND last_error = 'gone' FROM outbox WHERE id = ?`},
		{"part", func(id int64) error { return f.s.MarkPart(ctx, id, 1, "p-1") }, "pending",
			`SELECT parts_sent = 1 FROM outbox WHERE id = ?`},
		{"sent with an ID", func(id int64) error { return f.s.MarkSent(ctx, id, "p-2") }, "sent",
			`SELECT o.platform_msg_id = 'p-2' AND p.message_id = o.message_id
				FROM outbox o JOIN platform_ids p ON p.platform_msg_id = 'p-2' WHERE o.id = ?`},
	} {
		o := f.exchange()
		if err := c.mark(o.OutboxID); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if st := f.row(o.OutboxID); st != c.status {
			t.Errorf("%s: row %q, want %q", c.name, st, c.status)
		}
		var ok bool
		if err := f.s.queryRow(ctx, c.check, o.OutboxID).Scan(&ok); err != nil || !ok {
			t.Errorf("%s: %s is false (%v)", c.name, c.check, err)
		}
		if n := f.s.deferred.waiting(); n != 0 {
			t.Errorf("%s: %d entries still deferred", c.name, n)
		}
	}
}

// TestDeferredOutboxAfterCrash: the entries lost with the process are
// written when the store opens, from the exchanges after the watermark:
// the replies not delivered, and those delivered after the watermark was
// last written (sent again: at least once); not those before it.
func TestDeferredOutboxAfterCrash(t *testing.T) {
	ctx := context.Background()
	f := newDeferredFixture(t)
	before := f.exchange()
	if err := f.s.MarkSent(ctx, before.OutboxID, ""); err != nil {
		t.Fatal(err)
	}
	f.flush() // the watermark passes before
	lost, again := f.exchange(), f.exchange()
	if err := f.s.MarkSent(ctx, again.OutboxID, ""); err != nil {
		t.Fatal(err)
	}
	s, _ := crashAndReopen(t, f.s, f.path)
	if ids := pendingIDs(t, s); !slices.Equal(ids, []int64{lost.MessageID, again.MessageID}) {
		t.Errorf("pending after the crash: %v; want [%d %d]", ids, lost.MessageID, again.MessageID)
	}
	// Refiled once: a second reopening finds them in the outbox.
	s, _ = crashAndReopen(t, s, s.path(t))
	if ids := pendingIDs(t, s); len(ids) != 2 {
		t.Errorf("pending after a second reopening: %v; want the two", ids)
	}
	var rows int
	if err := s.queryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&rows); err != nil || rows != 2 {
		t.Errorf("%d outbox rows (%v); want 2", rows, err)
	}
}

// TestDeferredOutboxRefileKeepsRows: after a crash, an exchange whose
// row was written after the watermark keeps that one row; the entry lost
// before it gets a new one, and is listed first, as its message is.
func TestDeferredOutboxRefileKeepsRows(t *testing.T) {
	ctx := context.Background()
	f := newDeferredFixture(t)
	lost, filed := f.exchange(), f.exchange()
	if err := f.s.MarkAttempt(ctx, filed.OutboxID, "timeout"); err != nil {
		t.Fatal(err)
	}
	// The watermark stays before lost, which waits without a row.
	f.flushOlderThan(time.Hour)
	if upto, _ := f.watermark(); upto != lost.MessageID-1 {
		t.Fatalf("watermark %d; want %d", upto, lost.MessageID-1)
	}
	s, _ := crashAndReopen(t, f.s, f.path)
	if ids := pendingIDs(t, s); !slices.Equal(ids, []int64{lost.MessageID, filed.MessageID}) {
		t.Errorf("pending after the crash: %v; want [%d %d], in their messages' order", ids, lost.MessageID, filed.MessageID)
	}
	var rows, attempts int
	if err := s.queryRow(ctx, `SELECT count(*), COALESCE(SUM(attempts), 0) FROM outbox`).Scan(&rows, &attempts); err != nil || rows != 2 || attempts != 1 {
		t.Errorf("%d outbox rows with %d attempts (%v); want 2 rows, the filed one's attempt kept", rows, attempts, err)
	}
}

// TestDeferredOutboxClose: closing writes the rows of the replies not
// delivered, under their IDs.
func TestDeferredOutboxClose(t *testing.T) {
	f := newDeferredFixture(t)
	o := f.exchange()
	if err := f.s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+f.path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	err = db.QueryRow(`SELECT id FROM outbox WHERE message_id = ? AND status = 'pending'`, o.MessageID).Scan(&id)
	db.Close()
	if err != nil || id != o.OutboxID {
		t.Fatalf("after Close the reply's row is %d (%v); want %d", id, err, o.OutboxID)
	}
	s, err := Open(context.Background(), f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ids := pendingIDs(t, s); !slices.Equal(ids, []int64{o.MessageID}) {
		t.Errorf("pending after a clean restart: %v; want [%d]", ids, o.MessageID)
	}
	if upto, _ := f.watermark2(s); upto < o.MessageID {
		t.Errorf("watermark %d after closing; want past %d", upto, o.MessageID)
	}
}

func (f *deferredFixture) watermark2(s *SQLite) (int64, int64) {
	g := *f
	g.s = s
	return g.watermark()
}

// TestDeferredOutboxEntries walks the entries' states: delivered while
// its row is written (marked once written), rolled back (given back, or
// forgotten if delivered meanwhile), added by a transaction that rolls
// back (gone), and the watermark.
func TestDeferredOutboxEntries(t *testing.T) {
	var d deferredOutbox
	d.age = time.Second
	born := time.Now()
	for id := int64(1); id <= 4; id++ {
		d.add(deferredEntry{row: outboxRow{id: id, message: 10 * id}, born: born})
	}
	if upto, idUpto := d.watermark(100, 9); upto != 9 || idUpto != 0 {
		t.Errorf("watermark %d, %d; want 9, 0", upto, idUpto)
	}
	if due := d.due(born.Add(time.Second/2), false); len(due) != 0 {
		t.Errorf("due at 0.5 s: %v", due)
	}
	due := d.due(born.Add(time.Second), false)
	slices.Sort(due)
	if !slices.Equal(due, []int64{1, 2, 3, 4}) {
		t.Errorf("due at 1 s: %v", due)
	}
	d.begin()
	got := d.take([]int64{1, 2, 9})
	if len(got) != 2 || got[0].id != 1 || got[1].id != 2 {
		t.Fatalf("take: %v; want the rows of 1 and 2 (9 has no entry)", got)
	}
	if again := d.take([]int64{1}); len(again) != 0 {
		t.Error("an entry being written was taken twice")
	}
	if upto, idUpto := d.watermark(100, 9); upto != 29 || idUpto != 2 {
		t.Errorf("watermark while 1 and 2 are written: %d, %d; want 29, 2", upto, idUpto)
	}
	if !d.resolve(1) || !d.resolve(3) || d.resolve(9) {
		t.Error("resolve reported wrongly")
	}
	if delivered := d.committed(); !slices.Equal(delivered, []int64{1}) {
		t.Errorf("delivered while written: %v; want [1]", delivered)
	}
	if n := d.waiting(); n != 1 { // 4
		t.Errorf("%d waiting; want 1", n)
	}
	// A transaction that writes 4 and adds 5 rolls back; 4 was delivered
	// meanwhile.
	d.begin()
	d.take([]int64{4})
	d.add(deferredEntry{row: outboxRow{id: 5, message: 50}})
	d.resolve(4)
	d.rolledBack()
	if n := d.waiting(); n != 0 {
		t.Errorf("%d waiting after the rollback; want none", n)
	}
	if upto, idUpto := d.watermark(100, 9); upto != 100 || idUpto != 9 {
		t.Errorf("watermark with nothing deferred: %d, %d; want 100, 9", upto, idUpto)
	}
}

// path is the file of s's database.
func (s *SQLite) path(t *testing.T) string {
	t.Helper()
	var file string
	if err := s.queryRow(context.Background(), "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestDeferredOutboxIdle: with no other writes, the committer's timer
// writes an undelivered reply's row and moves the watermark past it.
func TestDeferredOutboxIdle(t *testing.T) {
	f := newDeferredFixture(t)
	onCommitter(t, f.s, func() { f.s.deferred.age = 0 })
	o := f.exchange()
	deadline := time.Now().Add(10 * time.Second)
	for f.row(o.OutboxID) != "pending" {
		if time.Now().After(deadline) {
			t.Fatal("no row for the undelivered reply 10 s after its exchange, the store idle")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for {
		if upto, idUpto := f.watermark(); upto >= o.MessageID && idUpto >= o.OutboxID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watermark did not pass the reply within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
