package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

// The reply of an instant exchange (exchanges.go) usually leaves the
// process within milliseconds of its commit. Its outbox entry is then
// written only to be marked sent: a row, an entry of the pending index,
// and an update that takes both back — a third of the exchange's writing
// under load. So the entry is deferred: it gets its outbox ID, and lives
// in memory (deferredOutbox) until one of these happens:
//
//   - it is delivered and marked sent without a platform message ID (the
//     widget's case): it is forgotten, and never written;
//   - any other mark (sent with a platform message ID, a part, an
//     attempt, a failure): its row is written first, in the mark's
//     transaction, and the mark applies to it;
//   - it has waited deferAge (the recipient is away, the platform slow):
//     its row is written, pending, by the committer's next flush;
//   - the store closes, or PendingOutbox reads the outbox: every entry
//     still waiting is written.
//
// A crash loses the entries in memory, so the committer keeps a
// watermark in meta, written by a flush about once a second while it
// lags (the committer's idle timer runs one too):
// outbox_upto, a message ID such that every exchange up to it has its
// reply delivered or its outbox row written, and outbox_id_upto, the
// outbox ID such that the rows after it are the only ones that can belong
// to messages after outbox_upto. Open writes a pending row for every
// exchange after the watermark that has none (refile), and those replies
// are sent again: delivery stays at least once, as with the delivery
// marks written lazily (the widget drops a message it already has by
// its ID). PendingOutbox lists entries by message ID, so a refiled reply
// keeps its place in its chat.

// deferAge is how long an entry stays in memory before its row is
// written.
const deferAge = time.Second

// outboxRow is an outbox row as it is first written: pending.
type outboxRow struct {
	id, message         int64
	platform, bot, chat string
	at                  int64 // created_at, in microseconds
}

// insert writes r.
func (r outboxRow) insert(tx *txn) error {
	return tx.c.run(`INSERT INTO outbox (id, message_id, platform, bot, chat_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, r.id, r.message, r.platform, r.bot, r.chat, r.at, r.at)
}

// newOutboxRow is the row of o, a reply stored, at the next outbox ID.
func (s *SQLite) newOutboxRow(o gateway.Outbound, at int64) outboxRow {
	return outboxRow{id: s.nextOutboxID(), message: o.MessageID, platform: o.Platform, bot: o.Bot, chat: o.ChatID, at: at}
}

// nextOutboxID is the ID of a new outbox entry, row or not. The committer
// owns the counter; a rolled-back batch leaves it raised.
func (s *SQLite) nextOutboxID() int64 {
	s.lastOutbox++
	return s.lastOutbox
}

// deferredEntry is an outbox entry without a row yet.
type deferredEntry struct {
	row  outboxRow
	born time.Time // for its age (a monotonic reading)
	// writing is set while the open transaction writes the row;
	// delivered, when it was marked sent meanwhile (its mark is then
	// written once the row is).
	writing, delivered bool
}

// deferredOutbox is the entries without rows, by outbox ID. The committer
// adds, writes and forgets entries; MarkSent forgets them from any
// goroutine, hence the lock.
type deferredOutbox struct {
	mu      sync.Mutex
	entries map[int64]deferredEntry
	// The committer's own: the rows the open transaction writes, the
	// watermark as last written, when the last flush ran, and how old an
	// entry gets before its row is written (deferAge; tests set it).
	staged         []int64
	added          []int64 // by the open transaction
	upto, idUpto   int64
	lastFlush      time.Time
	age            time.Duration
	flushRequested bool
}

// add records e, an entry the open transaction adds (see deferOutbox).
func (d *deferredOutbox) add(e deferredEntry) {
	d.mu.Lock()
	if d.entries == nil {
		d.entries = make(map[int64]deferredEntry)
	}
	d.entries[e.row.id] = e
	d.mu.Unlock()
	d.added = append(d.added, e.row.id)
}

// resolve records the entry of outbox ID id delivered, if it has no row
// (it reports whether it had an entry): it is forgotten, or, while its
// row is being written, marked once the row is.
func (d *deferredOutbox) resolve(id int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.entries[id]
	switch {
	case !ok:
		return false
	case e.writing:
		e.delivered = true
		d.entries[id] = e
	default:
		delete(d.entries, id)
	}
	return true
}

// waiting is how many entries have no row.
func (d *deferredOutbox) waiting() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.entries)
}

// take marks the rows of ids that have entries as written by the open
// transaction and returns them.
func (d *deferredOutbox) take(ids []int64) []outboxRow {
	d.mu.Lock()
	defer d.mu.Unlock()
	var rows []outboxRow
	for _, id := range ids {
		if e, ok := d.entries[id]; ok && !e.writing {
			e.writing = true
			d.entries[id] = e
			d.staged = append(d.staged, id)
			rows = append(rows, e.row)
		}
	}
	return rows
}

// due lists the entries older than d.age at now (all of them with all),
// none of them being written.
func (d *deferredOutbox) due(now time.Time, all bool) []int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ids []int64
	for id, e := range d.entries {
		if !e.writing && (all || now.Sub(e.born) >= d.age) {
			ids = append(ids, id)
		}
	}
	return ids
}

// watermark is where the watermark can move once the open transaction
// commits: before the oldest entry left without a row, or else to the
// last message and outbox ID the committer has written.
func (d *deferredOutbox) watermark(lastMessage, lastOutbox int64) (upto, idUpto int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	upto, idUpto = lastMessage, lastOutbox
	for id, e := range d.entries {
		if !e.writing {
			upto, idUpto = min(upto, e.row.message-1), min(idUpto, id-1)
		}
	}
	return upto, idUpto
}

// committed forgets the entries whose rows the transaction wrote and
// returns those marked delivered meanwhile, whose marks are still to
// write.
func (d *deferredOutbox) committed() (delivered []int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range d.staged {
		if e, ok := d.entries[id]; ok {
			if e.delivered {
				delivered = append(delivered, id)
			}
			delete(d.entries, id)
		}
	}
	d.staged, d.added = d.staged[:0], d.added[:0]
	return delivered
}

// rolledBack forgets the entries the failed transaction added and gives
// those it was writing back (those delivered meanwhile need no row any
// more).
func (d *deferredOutbox) rolledBack() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range d.added {
		delete(d.entries, id)
	}
	d.added = d.added[:0]
	for _, id := range d.staged {
		if e, ok := d.entries[id]; ok {
			if e.delivered {
				delete(d.entries, id)
			} else {
				e.writing = false
				d.entries[id] = e
			}
		}
	}
	d.staged = d.staged[:0]
}

// begin readies the entries for a new transaction.
func (d *deferredOutbox) begin() {
	d.staged, d.added = d.staged[:0], d.added[:0]
}

// deferOutbox gives o, the reply of an exchange stored in the open
// transaction, an outbox ID and an entry without a row (gone again if
// the transaction rolls back). The gateway learns the ID only once it
// commits, so no mark can come first.
func (s *SQLite) deferOutbox(o gateway.Outbound, now int64) int64 {
	r := s.newOutboxRow(o, now)
	s.deferred.add(deferredEntry{row: r, born: time.Now()})
	return r.id
}

// fileDeferred writes the rows of the entries among ids that have none,
// in tx, pending.
func (s *SQLite) fileDeferred(tx *txn, ids ...int64) error {
	for _, r := range s.deferred.take(ids) {
		if err := r.insert(tx); err != nil {
			return err
		}
	}
	return nil
}

// markRow runs fn, a write of outbox entry id's row, after writing the
// row if the entry has none yet: every mark but a bare MarkSent.
func (s *SQLite) markRow(ctx context.Context, id int64, fn func(*txn) error) error {
	return s.tx(ctx, func(tx *txn) error {
		if err := s.fileDeferred(tx, id); err != nil {
			return err
		}
		return fn(tx)
	})
}

// deferredDue reports whether a flush of the deferred entries is due: a
// second after the last while entries wait or the watermark lags. The
// committer asks as it assembles a batch.
func (s *SQLite) deferredDue(now time.Time) bool {
	d := &s.deferred
	if d.flushRequested {
		return true
	}
	return now.Sub(d.lastFlush) >= linkFlushEvery && s.deferredWaiting()
}

// deferredWaiting reports whether entries wait for rows or the watermark
// lags behind what the committer has written.
func (s *SQLite) deferredWaiting() bool {
	d := &s.deferred
	return d.upto != s.lastID || d.idUpto != s.lastOutbox || d.waiting() > 0
}

// flushDeferred writes the rows of the entries older than d.age and moves
// the watermark. It runs first in a batch, on the committer.
func (s *SQLite) flushDeferred(tx *txn) error {
	return s.writeDeferred(tx, false)
}

// flushAllDeferred writes the rows of every entry that waits and moves
// the watermark to the last message.
func (s *SQLite) flushAllDeferred(tx *txn) error {
	return s.writeDeferred(tx, true)
}

func (s *SQLite) writeDeferred(tx *txn, all bool) error {
	d := &s.deferred
	d.lastFlush, d.flushRequested = time.Now(), false
	if err := s.fileDeferred(tx, d.due(time.Now(), all)...); err != nil {
		return err
	}
	upto, idUpto := d.watermark(s.lastID, s.lastOutbox)
	if upto == d.upto && idUpto == d.idUpto {
		return nil
	}
	const q = `UPDATE meta SET value = ? WHERE key = ?`
	if err := tx.c.run(q, upto, "outbox_upto"); err != nil {
		return err
	}
	if err := tx.c.run(q, idUpto, "outbox_id_upto"); err != nil {
		return err
	}
	tx.onStored(func() { d.upto, d.idUpto = upto, idUpto })
	return nil
}

// deferredCommitted finishes the deferred entries' part of a commit: the
// marks of entries delivered while their rows were written are queued
// (even while closing: the committer writes them before it stops).
func (s *SQLite) deferredCommitted() {
	if ids := s.deferred.committed(); len(ids) > 0 {
		s.queueMarks(true, ids...)
	}
}

// refile writes a pending outbox row for every exchange after the
// watermark that has none — replies a crash may have left undelivered —
// and starts the outbox ID counter. It runs while opening, before the
// committer starts.
func (s *SQLite) refile(ctx context.Context) error {
	d := &s.deferred
	err := s.txNow(ctx, func(tx *txn) error {
		var upto, idUpto int64
		if err := tx.QueryRowContext(ctx, `SELECT (SELECT value FROM meta WHERE key = 'outbox_upto'),
			(SELECT value FROM meta WHERE key = 'outbox_id_upto')`).Scan(&upto, &idUpto); err != nil {
			return err
		}
		d.upto, d.idUpto = upto, idUpto
		// IDs given to entries that were never written are not given
		// again (after a clean close they are all at most idUpto).
		if err := tx.QueryRowContext(ctx, `SELECT MAX(COALESCE(MAX(id), 0), ?) FROM outbox`, idUpto).Scan(&s.lastOutbox); err != nil {
			return err
		}
		// The exchanges after the watermark that have rows: theirs are
		// among the rows after its outbox ID (IDs of both grow in commit
		// order).
		filed := make(map[int64]bool)
		rows, err := tx.QueryContext(ctx, `SELECT message_id FROM outbox WHERE id > ?`, idUpto)
		if err != nil {
			return err
		}
		for rows.Next() {
			var m int64
			if err := rows.Scan(&m); err != nil {
				rows.Close()
				return err
			}
			filed[m] = true
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, `SELECT m.id, c.platform, m.bot, c.chat_id, m.reply_at
			FROM messages m JOIN conversations c ON c.id = m.conversation_id
			WHERE m.id > ? AND m.reply_at IS NOT NULL ORDER BY m.id`, upto)
		if err != nil {
			return err
		}
		var lost []outboxRow
		for rows.Next() {
			var r outboxRow
			if err := rows.Scan(&r.message, &r.platform, &r.bot, &r.chat, &r.at); err != nil {
				rows.Close()
				return err
			}
			if !filed[r.message] {
				lost = append(lost, r)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range lost {
			r.id = s.nextOutboxID()
			if err := r.insert(tx); err != nil {
				return err
			}
		}
		if len(lost) > 0 {
			s.logger().Info("replies after a crash queued again", "outbox", len(lost))
		}
		return s.writeDeferred(tx, true)
	})
	if err != nil {
		return fmt.Errorf("store: refile deferred outbox entries: %w", err)
	}
	return nil
}
