package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

// Two indexes of messages are keyed by something other than time: a
// session's history (session_messages, by session) and the dedupe keys of
// inbound messages (inbound_keys, by chat and platform message ID).
// Written with each message, every entry lands on its own page under load
// (sessions and chats are many and their messages interleave), and every
// such page goes to the WAL with each commit. So their entries are
// written in bulk instead, about once a second and in key order, which
// lets a busy session's or chat's entries share a page write (migration
// 0007).
//
// Until then a message carries what they need itself (messages.sessions,
// and its chat and platform message ID), and meta's linked_upto is the
// last message ID whose entries are all written: Open writes those of the
// messages after it, which a crash may have left out. Readers of
// session_messages call linked first, which flushes whatever waits; the
// dedupe lookup checks the entries that wait (pendingKey) before the
// table.

// Bounds of the link log.
const (
	// linkFlushEvery is how often a round of flushing starts while
	// entries wait.
	linkFlushEvery = time.Second
	// maxUnlinked starts a round sooner when this many entries wait.
	maxUnlinked = 1 << 15
	// flushChunk is the fewest entries a batch writes of a round. A round
	// is spread over at least flushSpread batches and, when batches are
	// many, over half as many as were committed per linkFlushEvery since
	// the last round began (chunks of flushChunk entries at least), so
	// that no batch waits long behind it: at 2,000 messages/s, a round
	// written over 16 of the second's 1,200 batches made each of them
	// 2–9 ms longer, and every write queued behind them, for 90 ms of
	// each second. Spread thin, a round still writes each page of the
	// two indexes about once (its entries are in key order), plus a page
	// where each chunk ends. A round still under way after
	// linkFlushEvery (batches grew rare) writes at least a flushSpread-th
	// of what is left per batch, so it ends within a few dozen batches.
	flushChunk  = 32
	flushSpread = 16
)

// inboundKey is an inbound message's dedupe key.
type inboundKey struct{ platform, bot, chat, msgID string }

// logEntry is a row of session_messages (a link: session is set) or of
// inbound_keys (a key).
type logEntry struct {
	session string
	key     inboundKey
	message int64
}

// compareEntries orders entries as their tables do: keys, then links.
// (Written out: cmp.Or would compare every field of every pair the sort
// looks at.)
func compareEntries(a, b logEntry) int {
	if c := strings.Compare(a.session, b.session); c != 0 {
		return c
	}
	if a.session == "" {
		if c := compareKeys(a.key, b.key); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.message, b.message)
}

// compareKeys orders dedupe keys as inbound_keys's primary key does.
func compareKeys(a, b inboundKey) int {
	if c := strings.Compare(a.platform, b.platform); c != 0 {
		return c
	}
	if c := strings.Compare(a.bot, b.bot); c != 0 {
		return c
	}
	if c := strings.Compare(a.chat, b.chat); c != 0 {
		return c
	}
	return strings.Compare(a.msgID, b.msgID)
}

// linkLog is the entries not yet written. The committer owns it.
//
// Entries move from staged (written by the open transaction; gone if it
// rolls back) to done (committed) to a round of flushing: done as it was
// when the round began, in key order, written a chunk per batch. Once a
// round's last chunk is written, so is the watermark: upto, the round's
// newest message. (Message IDs grow in commit order, so every message up
// to it has its entries in the round or written before.)
type linkLog struct {
	done, staged []logEntry
	round        []logEntry
	spare        []logEntry // the last round's array, for the next done
	written      int        // how much of round is written
	upto         int64      // the round's watermark
	// keys finds the keys not yet written; links lists the messages of
	// each session's links not yet written (or written by the open
	// transaction), oldest first.
	keys  map[inboundKey]int64
	links map[string][]int64
	// What the open transaction wrote: everything (all), or round up to
	// chunkEnd; and staged up to stagedFlushed.
	all           bool
	chunkEnd      int
	stagedFlushed int
	lastRound     time.Time
	// batches counts the commits since the last round began (a round's
	// end does not reset it); size is the round's chunk.
	batches, size int
	// every and chunk are linkFlushEvery and flushChunk (tests set them
	// lower).
	every time.Duration
	chunk int
}

// begin readies the log for a new transaction.
func (l *linkLog) begin() {
	l.staged, l.all, l.chunkEnd, l.stagedFlushed = l.staged[:0], false, l.written, 0
}

// rolledBack forgets what the open transaction staged.
func (l *linkLog) rolledBack() {
	l.forget(l.staged)
	l.begin()
}

// forget drops entries written (or rolled back) from keys and links.
func (l *linkLog) forget(es []logEntry) {
	for _, e := range es {
		if e.session == "" {
			delete(l.keys, e.key)
		} else if ids := removeID(l.links[e.session], e.message); len(ids) == 0 {
			delete(l.links, e.session)
		} else {
			l.links[e.session] = ids
		}
	}
}

// committed folds what the transaction did into the log.
func (l *linkLog) committed() {
	l.batches++
	switch {
	case l.all:
		l.forget(l.round[l.written:])
		l.forget(l.done)
		l.forget(l.staged[:l.stagedFlushed])
		l.endRound()
		l.done = l.done[:0]
	case l.chunkEnd > l.written:
		l.forget(l.round[l.written:l.chunkEnd])
		l.written = l.chunkEnd
		if l.written == len(l.round) {
			l.endRound()
		}
	}
	l.done = append(l.done, l.staged[l.stagedFlushed:]...)
	l.begin()
}

// endRound forgets the round, keeping its array for a later done.
func (l *linkLog) endRound() {
	if l.round != nil {
		clear(l.round)
		l.spare = l.round[:0]
	}
	l.round, l.written, l.upto = nil, 0, 0
}

// waiting is how many committed entries are not yet written.
func (l *linkLog) waiting() int { return len(l.done) + len(l.round) - l.written }

// stage adds an entry written by the open transaction.
func (l *linkLog) stage(e logEntry) {
	if e.session == "" {
		if l.keys == nil {
			l.keys = make(map[inboundKey]int64)
		}
		l.keys[e.key] = e.message
	} else {
		if l.links == nil {
			l.links = make(map[string][]int64)
		}
		l.links[e.session] = append(l.links[e.session], e.message)
	}
	l.staged = append(l.staged, e)
}

// startRound begins a round of flushing if one is due: none is under way
// and entries have waited linkFlushEvery (or are many). It runs between
// batches, when every committed message has its entries in done.
func (l *linkLog) startRound(now time.Time) {
	if l.round != nil || len(l.done) == 0 || len(l.done) < maxUnlinked && now.Sub(l.lastRound) < l.every {
		return
	}
	// The batches committed per l.every since the last round began.
	perRound := l.batches
	if elapsed := now.Sub(l.lastRound); elapsed > l.every && l.every > 0 {
		perRound = int(int64(l.batches) * int64(l.every) / int64(elapsed))
	}
	spread := max(flushSpread, perRound/2)
	l.round, l.written, l.upto, l.lastRound = l.done, 0, 0, now
	l.done, l.spare = l.spare, nil
	l.size, l.batches = max(l.chunk, (len(l.round)+spread-1)/spread), 0
	// The watermark: every message up to the round's newest has its
	// entries in the round or written already (IDs grow in commit order).
	for _, e := range l.round {
		l.upto = max(l.upto, e.message)
	}
	slices.SortFunc(l.round, compareEntries)
	l.begin()
}

// pending is the message IDs of the session's links not yet written,
// oldest first. They are all newer than the session's written links: a
// round writes a session's links oldest first.
func (l *linkLog) pending(session string) []int64 {
	ids := l.links[session]
	switch {
	case len(ids) == 0:
		return nil
	case l.all:
		// The open transaction wrote all but what it staged since.
		ids = nil
		for _, e := range l.staged[l.stagedFlushed:] {
			if e.session == session {
				ids = append(ids, e.message)
			}
		}
		return ids
	case l.chunkEnd > l.written:
		// Not the session's oldest, which the open transaction wrote with
		// its chunk of the round (in key order: by session first).
		chunk := l.round[l.written:l.chunkEnd]
		i, _ := slices.BinarySearchFunc(chunk, session, func(e logEntry, s string) int { return strings.Compare(e.session, s) })
		n := 0
		for ; i+n < len(chunk) && chunk[i+n].session == session; n++ {
		}
		ids = ids[n:]
	}
	return slices.Clone(ids)
}

// removeID removes id from ids, looking at the ends first: a written
// link is its session's oldest, a rolled-back one its newest.
func removeID(ids []int64, id int64) []int64 {
	switch {
	case len(ids) == 0:
		return ids
	case ids[0] == id:
		return ids[1:]
	case ids[len(ids)-1] == id:
		return ids[:len(ids)-1]
	}
	if i := slices.Index(ids, id); i >= 0 {
		return slices.Delete(ids, i, i+1)
	}
	return ids
}

// linkMessage adds a message just inserted, with its sessions, to the
// history of session (and, once committed, to its recent window).
func linkMessage(tx *txn, session string, m *gateway.Message) {
	tx.s.links.stage(logEntry{session: session, message: m.ID})
	tx.onLinked(session, m)
}

// keyMessage records the dedupe key of an inbound message just inserted.
func keyMessage(tx *txn, k inboundKey, message int64) {
	tx.s.keys.add(k)
	tx.s.links.stage(logEntry{key: k, message: message})
}

// pendingKey finds a dedupe key that waits to be written.
func (tx *txn) pendingKey(k inboundKey) (int64, bool) {
	id, ok := tx.s.links.keys[k]
	return id, ok
}

// sessionList is the value of messages.sessions: the distinct sessions,
// space-separated (session IDs are UUIDs).
func sessionList(sessions ...string) string {
	switch len(sessions) {
	case 0:
		return ""
	case 1:
		return sessions[0]
	}
	var seen []string
	for _, s := range sessions {
		if !slices.Contains(seen, s) {
			seen = append(seen, s)
		}
	}
	return strings.Join(seen, " ")
}

// writeEntries writes entries to their tables: entryRows at a time
// while at least that many of one table follow each other (in key order
// the keys come first, then the links), one at a time otherwise.
func writeEntries(tx *txn, es []logEntry) error {
	return writeEntriesTo(tx, es, insertKeys, insertLinks)
}

// writeEntriesTo is writeEntries with the tables' statements.
func writeEntriesTo(tx *txn, es []logEntry, keys, links entryInsert) error {
	args := make([]any, 0, entryRows*5)
	for len(es) > 0 {
		link := es[0].session != ""
		n := 1
		for n < min(len(es), entryRows) && (es[n].session != "") == link {
			n++
		}
		if n < entryRows {
			n = 1
		}
		args = args[:0]
		for _, e := range es[:n] {
			if link {
				args = append(args, e.session, e.message)
			} else {
				args = append(args, e.key.platform, e.key.bot, e.key.chat, e.key.msgID, e.message)
			}
		}
		ins := keys
		if link {
			ins = links
		}
		q := ins.one
		if n == entryRows {
			q = ins.rows
		}
		if err := tx.c.run(q, args...); err != nil {
			return err
		}
		es = es[n:]
	}
	return nil
}

// entryRows is how many entries one statement writes, when it can.
const entryRows = 16

// entryInsert is a table's statements for writeEntries: of one row, and
// of entryRows rows.
type entryInsert struct{ one, rows string }

func newEntryInsert(into, row string) entryInsert {
	one := `INSERT OR IGNORE INTO ` + into + ` VALUES ` + row
	return entryInsert{one: one, rows: one + strings.Repeat(", "+row, entryRows-1)}
}

var (
	insertLinks = newEntryInsert("session_messages (session_id, message_id)", "(?, ?)")
	insertKeys  = newEntryInsert("inbound_keys (platform, bot, chat_id, platform_msg_id, message_id)", "(?, ?, ?, ?, ?)")
)

// nextChunk is where the round's next chunk ends: size entries on, or a
// flushSpread-th of what is left once the round is older than l.every.
func (l *linkLog) nextChunk(now time.Time) int {
	n := l.size
	if now.Sub(l.lastRound) > l.every {
		n = max(n, (len(l.round)-l.written)/flushSpread)
	}
	return min(len(l.round), l.written+max(n, 1))
}

// flushChunk writes the next chunk of the round under way, and with its
// last chunk the watermark. It runs first in a batch.
func (s *SQLite) flushChunk(tx *txn) error {
	l := &s.links
	if l.round == nil || l.all || l.chunkEnd > l.written {
		return nil
	}
	end := l.nextChunk(time.Now())
	if err := writeEntries(tx, l.round[l.written:end]); err != nil {
		return err
	}
	if end == len(l.round) {
		if _, err := tx.c.exec(`UPDATE meta SET value = ? WHERE key = 'linked_upto'`, l.upto); err != nil {
			return err
		}
	}
	l.chunkEnd = end
	return nil
}

// flushAll writes every entry that waits and moves the watermark to the
// last message. It runs on the committer, in a transaction: every
// message stored before it, committed or earlier in the same
// transaction, has its entries in the log.
func (s *SQLite) flushAll(tx *txn) error {
	l := &s.links
	var todo []logEntry
	if !l.all {
		todo = append(todo, l.round[l.written:]...)
		todo = append(todo, l.done...)
	}
	todo = append(todo, l.staged[l.stagedFlushed:]...)
	if len(todo) == 0 {
		return nil
	}
	slices.SortFunc(todo, compareEntries)
	if err := writeEntries(tx, todo); err != nil {
		return err
	}
	if _, err := tx.c.exec(`UPDATE meta SET value = (SELECT COALESCE(max(id), 0) FROM messages) WHERE key = 'linked_upto'`); err != nil {
		return err
	}
	l.all, l.stagedFlushed = true, len(l.staged)
	return nil
}

// linked makes session_messages whole before a read of it, across
// sessions, on the reader pool: it writes every entry that waits, if any
// (a read of one session's history uses linkedSession). A message whose write
// has returned (or whose stored callback has run) has its links counted
// by then.
func (s *SQLite) linked(ctx context.Context) error {
	if s.unlinked.Load() == 0 {
		return nil
	}
	if err := s.tx(ctx, s.flushAll); err != nil {
		return fmt.Errorf("store: flush session links: %w", err)
	}
	return nil
}

// linkedSession makes a session's history whole in session_messages
// before a read of it on the reader pool: it writes the session's links
// that wait. They stay in the log, and their round writes them again,
// which changes nothing; the window load (loadWindow) reads the written
// history only up to the oldest of them.
func (s *SQLite) linkedSession(ctx context.Context, session string) error {
	if s.unlinked.Load() == 0 {
		return nil
	}
	err := s.tx(ctx, func(tx *txn) error {
		var es []logEntry
		for _, id := range s.links.pending(session) {
			es = append(es, logEntry{session: session, message: id})
		}
		return writeEntries(tx, es)
	})
	if err != nil {
		return fmt.Errorf("store: write session links: %w", err)
	}
	return nil
}

// relink puts in session_messages the links of the messages after the
// watermark: those a crash kept from being flushed. It runs while
// opening, before the committer starts.
func (s *SQLite) relink(ctx context.Context) error {
	err := s.txNow(ctx, func(tx *txn) error {
		var upto int64
		if err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'linked_upto'`).Scan(&upto); err != nil {
			return err
		}
		// An inbound message is the only kind with a platform message ID.
		rows, err := tx.QueryContext(ctx, `SELECT m.id, m.sessions, m.platform_msg_id,
			COALESCE(c.platform, ''), m.bot, COALESCE(c.chat_id, '')
			FROM messages m LEFT JOIN conversations c ON c.id = m.conversation_id
			WHERE m.id > ? AND (m.sessions != '' OR m.platform_msg_id != '')`, upto)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var sessions string
			var k inboundKey
			if err := rows.Scan(&id, &sessions, &k.msgID, &k.platform, &k.bot, &k.chat); err != nil {
				rows.Close()
				return err
			}
			for _, sid := range strings.Fields(sessions) {
				s.links.stage(logEntry{session: sid, message: id})
			}
			if k.msgID != "" && k.platform != "" {
				s.links.stage(logEntry{key: k, message: id})
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return s.flushAll(tx)
	})
	if err != nil {
		return fmt.Errorf("store: re-link messages: %w", err)
	}
	return nil
}
