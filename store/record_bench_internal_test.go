//go:build unix

package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

// BenchmarkExchangeRecord models what SQLite and its driver spend on the
// durable record of one instant exchange (a web visitor's message and the
// script brain's reply, as the bench's closed loop sends them). It runs
// on the store's own writer connection the statements the committer runs
// for an exchange: 85 exchanges to a transaction (the bench's batches)
// over 3,000 sessions, each reply's delivery mark in the next
// transaction, a session's updated_at touched at most every 90,000
// exchanges (10 s at the bench's rate), the link log's entries sorted and
// written entryRows to a statement once per 9,000 exchanges (about a
// second) with the log's watermark, and the checkpointer's passive
// checkpoints and the committer's finishing ones as the store runs them.
// The figure is the process's CPU per exchange: SQLite, the driver's
// cgo calls and the checkpointer's thread, without the Go side of the
// store (the committer, its callbacks, the caches). It copies the
// statements of a message, a turn, an outbox entry and a delivery mark
// rather than calling the functions that run them.
//
// The variants price the parts of the record: the record of two messages
// ("stored": as round 10 stored every exchange, and round 11 still
// stores any answer that is not a plain reply), and without each part;
// "exchange-row", the row round 11 stores a plain reply's exchange as
// (exchanges.go: a row of messages with the reply in it, its dedupe key
// and one session link in the link log, and the reply's outbox entry and
// delivery mark), with the delivery marks written in runs as round 12
// writes them ("exchange-row-single-marks": a statement each, as round 11
// did), without marks, without the outbox entry, and with an undelivered
// flag on the row instead of the entry (round 12 priced these and kept
// the runs: docs/performance.md); and records of one row per exchange in
// a table of its own, which the store does not have:
// "exchange" keeps what the promises need (its session link and dedupe
// key in the link log, and an undelivered flag, indexed while set and
// cleared by the delivery mark), "one-row" is the row and its dedupe key
// alone (an upper bound), and "one-row-indexed" that row indexed by
// session as it is written (why the link log exists). docs/performance.md,
// round 10, has the figures.
func BenchmarkExchangeRecord(b *testing.B) {
	for _, m := range []recordModel{
		{name: "stored"},
		{name: "stored-without-links", noLinks: true},
		{name: "stored-without-turn", noTurn: true},
		{name: "stored-without-outbox", noOutbox: true},
		{name: "exchange-row", exchangeRow: true, rangeMarks: true},
		{name: "exchange-row-single-marks", exchangeRow: true},
		{name: "exchange-row-unmarked", exchangeRow: true, noMark: true},
		{name: "exchange-row-no-outbox", exchangeRow: true, noOutbox: true},
		{name: "exchange-row-flag", exchangeRow: true, flag: true},
		{name: "exchange", row: true, rowLink: true, rowMark: true},
		{name: "one-row", row: true},
		{name: "one-row-indexed", row: true, indexed: true},
	} {
		b.Run(m.name, func(b *testing.B) { m.run(b) })
	}
}

// recordModel is a variant of BenchmarkExchangeRecord.
type recordModel struct {
	name                      string
	noLinks, noTurn, noOutbox bool
	// exchangeRow stores the exchange as the store does (exchanges.go).
	exchangeRow bool
	// rangeMarks writes the delivery marks as the store does since round
	// 12 (writeMarks: a statement per run of consecutive IDs), instead of
	// a statement per mark; noMark leaves the outbox entries pending;
	// flag keeps an undelivered flag on the row, set as it is written and
	// cleared by its mark, instead of an outbox entry.
	noMark, rangeMarks, flag bool
	// row writes one row per exchange; rowLink gives it a session link
	// and rowMark an undelivered flag and a delivery mark; indexed
	// indexes it by session.
	row, rowLink, rowMark, indexed bool
}

const (
	modelSessions = 3000
	modelBatch    = 85
	// modelRound is how many exchanges a round of the link log holds,
	// and modelTouch how many exchanges apart a session is touched.
	modelRound = 9000
	modelTouch = 90000
	modelText  = "please have a look at the deploy notes, item 12345"
)

// The statements of the stored record, as appendInbound, post,
// completeTurn and MarkSent write them, and those of the one-row
// records.
const (
	modelMessage = `INSERT INTO messages (conversation_id, platform_msg_id, kind, from_kind,
		from_id, from_name, user_id, bot, text, mentions, reply_to, created_at, delegation_id, in_group, sessions)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	modelTurn = `INSERT INTO turns (session_id, message_id, text, after_turn, created_at, status, done_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	modelOutbox = `INSERT INTO outbox (message_id, platform, bot, chat_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`
	modelMark   = `UPDATE outbox SET status = 'sent', platform_msg_id = ?, updated_at = ? WHERE id = ?`
	modelTouchQ = `UPDATE sessions SET updated_at = ? WHERE id = ?`
	modelRow    = `INSERT INTO exchanges (session_id, conversation_id, platform_msg_id, from_id, from_name,
		user_id, bot, text, reply, created_at, replied_at, undelivered) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	modelRowMark = `UPDATE exchanges SET undelivered = 0 WHERE id = ?`
	// The row with an undelivered flag, and its mark.
	modelFlagRow = `INSERT INTO messages (id, conversation_id, platform_msg_id, kind, from_kind,
		from_id, from_name, user_id, bot, text, mentions, reply_to, created_at, sessions,
		reply_at, reply_from_id, reply_from_name, reply_text, reply_pending)
		VALUES (?, ?, ?, 'chat', 'human', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`
	modelFlagMark = `UPDATE messages SET reply_pending = 0 WHERE id = ?`
)

var (
	modelKeys  = newEntryInsert("exchange_keys (platform, bot, chat_id, platform_msg_id, exchange_id)", "(?, ?, ?, ?, ?)")
	modelLinks = newEntryInsert("exchange_links (session_id, exchange_id)", "(?, ?)")
)

// modelTables are the one-row records' tables.
var modelTables = []string{
	`CREATE TABLE exchanges (
		id INTEGER PRIMARY KEY,
		session_id TEXT NOT NULL REFERENCES sessions (id),
		conversation_id INTEGER NOT NULL REFERENCES conversations (id),
		platform_msg_id TEXT NOT NULL, from_id TEXT NOT NULL, from_name TEXT NOT NULL,
		user_id TEXT NOT NULL, bot TEXT NOT NULL, text TEXT NOT NULL, reply TEXT NOT NULL,
		created_at INTEGER NOT NULL, replied_at INTEGER NOT NULL, undelivered INTEGER NOT NULL)`,
	`CREATE INDEX exchanges_undelivered ON exchanges (id) WHERE undelivered = 1`,
	`CREATE TABLE exchange_keys (
		platform TEXT NOT NULL, bot TEXT NOT NULL, chat_id TEXT NOT NULL, platform_msg_id TEXT NOT NULL,
		exchange_id INTEGER NOT NULL REFERENCES exchanges (id),
		PRIMARY KEY (platform, bot, chat_id, platform_msg_id)) WITHOUT ROWID`,
	`CREATE TABLE exchange_links (
		session_id TEXT NOT NULL REFERENCES sessions (id),
		exchange_id INTEGER NOT NULL REFERENCES exchanges (id),
		PRIMARY KEY (session_id, exchange_id)) WITHOUT ROWID`,
}

// visitor is one of the model's sessions.
type visitor struct {
	conv                    int
	chat, session, platform string
	touched                 int // the exchange that last touched the session, -modelTouch for none
}

func (m recordModel) run(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "sb.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	// The model has the writer connection to itself while it runs: with
	// nothing written through the store the committer does not use it
	// (and waits for it if it did). The checkpointer runs as it does
	// under load, on its own connection, prompted by the model's commits.
	err = s.withConn(func(c *conn) error {
		vs, err := m.setup(c)
		if err != nil {
			return err
		}
		b.ResetTimer()
		start := processCPU()
		if err := m.write(s, c, vs, b.N); err != nil {
			return err
		}
		// What the WAL still holds is checkpointed inside the figure.
		if _, err := c.c.Exec("PRAGMA wal_checkpoint(PASSIVE)", nil); err != nil {
			return err
		}
		b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		b.StopTimer()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// processCPU is the CPU time the process has used, all threads.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// setup stores the visitors' chats and sessions, and the one-row
// records' tables.
func (m recordModel) setup(c *conn) ([]visitor, error) {
	stmts := append(slices.Clone(modelTables), "BEGIN IMMEDIATE")
	if m.flag {
		stmts = append(stmts, `ALTER TABLE messages ADD COLUMN reply_pending INTEGER NOT NULL DEFAULT 0`,
			`CREATE INDEX messages_reply_pending ON messages (id) WHERE reply_pending = 1`)
	}
	if m.indexed {
		stmts = append(stmts, `CREATE INDEX exchanges_by_session ON exchanges (session_id, id)`)
	}
	for _, q := range stmts {
		if _, err := c.exec(q); err != nil {
			return nil, err
		}
	}
	now := micros(time.Now())
	vs := make([]visitor, modelSessions)
	for u := range vs {
		v := &vs[u]
		v.conv, v.platform = u+1, "web-u"+strconv.Itoa(u)
		v.chat, v.session = v.platform+":matty", fmt.Sprintf("%08x-5e55-4a00-8000-%012x", u*7919, u)
		v.touched = -modelTouch
		if _, err := c.exec(`INSERT INTO conversations (id, platform, chat_id, bot, kind, created_at) VALUES (?, 'web', ?, 'matty', 'private', ?)`,
			v.conv, v.chat, now); err != nil {
			return nil, err
		}
		if _, err := c.exec(`INSERT INTO sessions (id, bot, scope, scope_id, created_at, updated_at) VALUES (?, 'matty', 'user', ?, ?, ?)`,
			v.session, "user-"+strconv.Itoa(u), now, now); err != nil {
			return nil, err
		}
	}
	_, err := c.exec("COMMIT")
	return vs, err
}

// write writes n exchanges' records, and the delivery marks and link-log
// entries they leave.
func (m recordModel) write(s *SQLite, c *conn, vs []visitor, n int) error {
	tx := &txn{c: c, s: s}
	var marks []int64
	var entries []logEntry
	var newest int64
	for seq, inRound := 0, 0; seq < n || len(marks) > 0; {
		if _, err := c.exec("BEGIN IMMEDIATE"); err != nil {
			return err
		}
		now := micros(time.Now())
		if err := m.mark(c, marks, now); err != nil {
			return err
		}
		marks = marks[:0]
		for i := 0; i < modelBatch && seq < n; i++ {
			seq++
			inRound++
			// Consecutive exchanges come from visitors far apart, as the
			// bench's do.
			v := &vs[seq*7%len(vs)]
			es, mk, err := m.exchange(tx, v, strconv.Itoa(seq), now)
			if err != nil {
				return err
			}
			entries = append(entries, es...)
			marks = append(marks, mk...)
			for _, e := range es {
				newest = max(newest, e.message)
			}
			if seq-v.touched >= modelTouch {
				v.touched = seq
				if _, err := c.exec(modelTouchQ, now, v.session); err != nil {
					return err
				}
			}
		}
		if inRound >= modelRound || seq == n && len(entries) > 0 {
			if err := m.writeRound(c, entries, newest); err != nil {
				return err
			}
			entries, inRound = entries[:0], 0
		}
		if _, err := c.exec("COMMIT"); err != nil {
			return err
		}
		s.commits.Add(1)
		if s.finishCheckpoint.Swap(false) {
			if _, err := c.c.Exec("PRAGMA wal_checkpoint(PASSIVE)", nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// mark writes the delivery marks of ids.
func (m recordModel) mark(c *conn, ids []int64, now int64) error {
	q, args := modelMark, func(id int64) []any { return []any{"", now, id} }
	switch {
	case m.flag:
		q, args = modelFlagMark, func(id int64) []any { return []any{id} }
	case m.row:
		q, args = modelRowMark, func(id int64) []any { return []any{id} }
	}
	if m.rangeMarks {
		if m.flag || m.row {
			return errors.New("model: runs of marks are for outbox entries")
		}
		slices.Sort(ids)
		return writeMarks(&txn{c: c}, markRuns(ids))
	}
	for _, id := range ids {
		if _, err := c.exec(q, args(id)...); err != nil {
			return err
		}
	}
	return nil
}

// exchange writes one exchange's rows and returns its link-log entries
// and the IDs its delivery mark will name.
func (m recordModel) exchange(tx *txn, v *visitor, id string, now int64) ([]logEntry, []int64, error) {
	key := inboundKey{"web", "matty", v.chat, id}
	if m.row {
		undelivered := m.rowMark
		row, err := insertID(tx, modelRow, v.session, v.conv, id, v.platform, "Visitor", v.platform, "matty", modelText, modelText, now, now, undelivered)
		if err != nil {
			return nil, nil, err
		}
		es := []logEntry{{key: key, message: row}}
		if m.rowLink {
			es = append(es, logEntry{session: v.session, message: row})
		}
		if m.rowMark {
			return es, []int64{row}, nil
		}
		return es, nil, nil
	}
	if m.exchangeRow {
		msg := gateway.Message{PlatformMsgID: id, From: gateway.Party{Kind: "human", ID: v.platform, Name: "Visitor"},
			UserID: v.platform, Bot: "matty", Text: modelText, Time: fromMicros(now)}
		reply := gateway.Message{From: gateway.Party{Kind: "bot", ID: "matty", Name: "Matty"}, Text: modelText, Time: fromMicros(now)}
		var row int64
		var err error
		if m.flag {
			row = tx.s.lastID + 2
			_, err = tx.c.exec(modelFlagRow, row, v.conv, msg.PlatformMsgID, msg.From.ID, msg.From.Name, msg.UserID, msg.Bot, msg.Text,
				"", "", now, v.session, now, reply.From.ID, reply.From.Name, reply.Text)
			tx.s.lastID = row
		} else {
			row, err = insertExchange(tx, int64(v.conv), msg, reply, v.session)
		}
		if err != nil {
			return nil, nil, err
		}
		es := []logEntry{{key: key, message: row}, {session: v.session, message: row}}
		switch {
		case m.flag:
			return es, []int64{row}, nil
		case m.noOutbox:
			return es, nil, nil
		}
		o, err := insertID(tx, modelOutbox, row, "web", "matty", v.chat, now, now)
		if err != nil || m.noMark {
			return es, nil, err
		}
		return es, []int64{o}, nil
	}
	in, err := insertID(tx, modelMessage, v.conv, id, "chat", "human", v.platform, "Visitor", v.platform, "matty", modelText, "", "", now, "", false, v.session)
	if err != nil {
		return nil, nil, err
	}
	if !m.noTurn {
		if _, err := tx.c.exec(modelTurn, v.session, in, modelText, nil, now, "done", now); err != nil {
			return nil, nil, err
		}
	}
	reply, err := insertID(tx, modelMessage, v.conv, "", "chat", "bot", "matty", "Matty", v.platform, "matty", modelText, "", id, now, "", false, v.session)
	if err != nil {
		return nil, nil, err
	}
	var marks []int64
	if !m.noOutbox {
		o, err := insertID(tx, modelOutbox, reply, "web", "matty", v.chat, now, now)
		if err != nil {
			return nil, nil, err
		}
		marks = []int64{o}
	}
	if m.noLinks {
		return nil, marks, nil
	}
	return []logEntry{{key: key, message: in}, {session: v.session, message: in}, {session: v.session, message: reply}}, marks, nil
}

// writeRound writes a round of the link log in key order, and its
// watermark.
func (m recordModel) writeRound(c *conn, es []logEntry, upto int64) error {
	slices.SortFunc(es, compareEntries)
	keys, links := insertKeys, insertLinks
	if m.row {
		keys, links = modelKeys, modelLinks
	}
	if err := writeEntriesTo(&txn{c: c}, es, keys, links); err != nil {
		return err
	}
	_, err := c.exec(`UPDATE meta SET value = ? WHERE key = 'linked_upto'`, upto)
	return err
}
