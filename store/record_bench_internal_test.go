package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkExchangeRecord models what SQLite alone spends on the durable
// record of one instant exchange (a web visitor's message and the script
// brain's reply, as the bench's closed loop sends them), on the store's
// own writer connection: the statements the committer runs for it, in
// transactions of 85 exchanges (the bench's batches) over 3,000
// sessions, each reply's delivery mark in the next transaction, and the
// link log's entries sorted and written entryRows to a statement once
// per 9,000 exchanges (about a second of the bench). It leaves out the
// Go side of the store (the committer, its callbacks, the caches), and
// it copies the four statements of a message, a turn and an outbox entry
// rather than calling the functions that run them.
//
// Its variants price the parts of the record: the record as stored and
// without each part, and a record of one row per exchange (message and
// reply together, its dedupe key in the link log), which the store does
// not have: the measure of a redesign, with and without an index of the
// rows by session written with each row. docs/performance.md, round 10,
// has the figures.
func BenchmarkExchangeRecord(b *testing.B) {
	for _, v := range []recordModel{
		{name: "stored"},
		{name: "stored-without-links", noLinks: true},
		{name: "stored-without-turn", noTurn: true},
		{name: "stored-without-outbox", noOutbox: true},
		{name: "one-row", oneRow: true},
		{name: "one-row-indexed", oneRow: true, indexed: true},
	} {
		b.Run(v.name, func(b *testing.B) { v.run(b) })
	}
}

// recordModel is a variant of BenchmarkExchangeRecord.
type recordModel struct {
	name                      string
	noLinks, noTurn, noOutbox bool
	oneRow, indexed           bool
}

const (
	modelSessions   = 3000
	modelBatch      = 85
	modelLinkRounds = 9000
)

// The model's own statements: a message, a turn and an outbox entry as
// appendInbound and post write them, and the redesign's row.
const (
	modelMessage = `INSERT INTO messages (conversation_id, platform_msg_id, kind, from_kind,
		from_id, from_name, user_id, bot, text, mentions, reply_to, created_at, delegation_id, in_group, sessions)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	modelTurn = `INSERT INTO turns (session_id, message_id, text, after_turn, created_at, status, done_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	modelOutbox   = `INSERT INTO outbox (message_id, platform, bot, chat_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`
	modelMark     = `UPDATE outbox SET status = 'sent', platform_msg_id = ?, updated_at = ? WHERE id = ?`
	modelExchange = `INSERT INTO exchanges (session_id, conversation_id, platform_msg_id, from_id, from_name,
		user_id, bot, text, reply, created_at, replied_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

var modelKeys = newEntryInsert("exchange_keys (platform, bot, chat_id, platform_msg_id, message_id)", "(?, ?, ?, ?, ?)")

func (v recordModel) run(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "sb.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	// The writer connection is the model's for the run: the committer
	// has nothing to write meanwhile.
	err = s.withConn(func(c *conn) error {
		if err := v.setUp(c); err != nil {
			return err
		}
		b.ResetTimer()
		start := processCPU()
		err := v.write(c, b.N)
		// The checkpointer's share included: it runs on its own thread.
		b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

// processCPU is the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// setUp stores the visitors' chats and sessions, and the redesign's
// tables.
func (v recordModel) setUp(c *conn) error {
	stmts := []string{`CREATE TABLE exchanges (
			id INTEGER PRIMARY KEY,
			session_id TEXT NOT NULL REFERENCES sessions (id),
			conversation_id INTEGER NOT NULL REFERENCES conversations (id),
			platform_msg_id TEXT NOT NULL, from_id TEXT NOT NULL, from_name TEXT NOT NULL,
			user_id TEXT NOT NULL, bot TEXT NOT NULL, text TEXT NOT NULL, reply TEXT NOT NULL,
			created_at INTEGER NOT NULL, replied_at INTEGER NOT NULL)`,
		`CREATE TABLE exchange_keys (
			platform TEXT NOT NULL, bot TEXT NOT NULL, chat_id TEXT NOT NULL, platform_msg_id TEXT NOT NULL,
			message_id INTEGER NOT NULL REFERENCES exchanges (id),
			PRIMARY KEY (platform, bot, chat_id, platform_msg_id)) WITHOUT ROWID`,
		"BEGIN IMMEDIATE"}
	if v.indexed {
		stmts = append(stmts, `CREATE INDEX exchanges_by_session ON exchanges (session_id, id)`)
	}
	for _, q := range stmts {
		if _, err := c.exec(q); err != nil {
			return err
		}
	}
	now := micros(time.Now())
	for u := range modelSessions {
		if _, err := c.exec(`INSERT INTO conversations (id, platform, chat_id, bot, kind, created_at) VALUES (?, 'web', ?, 'matty', 'private', ?)`,
			u+1, modelChat(u), now); err != nil {
			return err
		}
		if _, err := c.exec(`INSERT INTO sessions (id, bot, scope, scope_id, created_at, updated_at) VALUES (?, 'matty', 'user', ?, ?, ?)`,
			modelSession(u), "user-"+strconv.Itoa(u), now, now); err != nil {
			return err
		}
	}
	_, err := c.exec("COMMIT")
	return err
}

func modelChat(u int) string    { return fmt.Sprintf("web-u%d:matty", u) }
func modelSession(u int) string { return fmt.Sprintf("%08x-5e55-4a00-8000-%012x", u*7919, u) }

// write writes n exchanges' records.
func (v recordModel) write(c *conn, n int) error {
	const text = "please have a look at the deploy notes, item 12345"
	var marks []int64
	var entries []logEntry
	seq := 0
	for seq < n {
		if _, err := c.exec("BEGIN IMMEDIATE"); err != nil {
			return err
		}
		for _, id := range marks {
			if _, err := c.exec(modelMark, "", micros(time.Now()), id); err != nil {
				return err
			}
		}
		marks = marks[:0]
		for i := 0; i < modelBatch && seq < n; i++ {
			seq++
			u := seq * 7 % modelSessions
			chat, session, visitor := modelChat(u), modelSession(u), "web-u"+strconv.Itoa(u)
			id, now := strconv.Itoa(seq), micros(time.Now())
			key := inboundKey{"web", "matty", chat, id}
			if v.oneRow {
				row, err := insertID(&txn{c: c}, modelExchange, session, u+1, id, visitor, "Visitor", visitor, "matty", text, text, now, now)
				if err != nil {
					return err
				}
				entries = append(entries, logEntry{key: key, message: row})
				continue
			}
			in, err := insertID(&txn{c: c}, modelMessage, u+1, id, "chat", "human", visitor, "Visitor", visitor, "matty", text, "", "", now, "", false, session)
			if err != nil {
				return err
			}
			if !v.noTurn {
				if _, err := c.exec(modelTurn, session, in, text, nil, now, "done", now); err != nil {
					return err
				}
			}
			reply, err := insertID(&txn{c: c}, modelMessage, u+1, "", "chat", "bot", "matty", "Matty", "", "matty", text, "", "", now, "", false, session)
			if err != nil {
				return err
			}
			if !v.noOutbox {
				o, err := insertID(&txn{c: c}, modelOutbox, reply, "web", "matty", chat, now, now)
				if err != nil {
					return err
				}
				marks = append(marks, o)
			}
			if !v.noLinks {
				entries = append(entries, logEntry{key: key, message: in},
					logEntry{session: session, message: in}, logEntry{session: session, message: reply})
			}
		}
		if len(entries) >= 3*modelLinkRounds || seq == n && len(entries) > 0 {
			if err := v.writeEntries(c, entries); err != nil {
				return err
			}
			entries = entries[:0]
		}
		if _, err := c.exec("COMMIT"); err != nil {
			return err
		}
	}
	return nil
}

// writeEntries writes a round of the link log, in key order.
func (v recordModel) writeEntries(c *conn, es []logEntry) error {
	slices.SortFunc(es, compareEntries)
	if !v.oneRow {
		return writeEntries(&txn{c: c}, es)
	}
	args := make([]any, 0, entryRows*5)
	for len(es) >= entryRows {
		args = args[:0]
		for _, e := range es[:entryRows] {
			args = append(args, e.key.platform, e.key.bot, e.key.chat, e.key.msgID, e.message)
		}
		if _, err := c.exec(modelKeys.rows, args...); err != nil {
			return err
		}
		es = es[entryRows:]
	}
	for _, e := range es {
		if _, err := c.exec(modelKeys.one, e.key.platform, e.key.bot, e.key.chat, e.key.msgID, e.message); err != nil {
			return err
		}
	}
	return nil
}
