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

// A session's history is the index session_messages, keyed by session.
// Written with each message, every link lands on its own page under load
// (sessions are many and their messages interleave), and every such page
// goes to the WAL with each commit. So links are written in bulk instead,
// about once a second and in session order, which lets a busy session's
// links share a page write (migration 0007).
//
// Until its links are flushed a message carries its sessions itself
// (messages.sessions), and meta's linked_upto is the last message ID
// whose links are all in session_messages: Open re-links the messages
// after it, which a crash may have left unlinked. Readers of
// session_messages call linked first, which flushes whatever waits.

// Bounds of the link log.
const (
	// linkFlushEvery is how long committed links wait at most, when
	// writes go on, before the committer flushes them.
	linkFlushEvery = time.Second
	// maxUnlinked flushes sooner when this many links wait.
	maxUnlinked = 1 << 15
)

// sessionLink puts a message in a session's history.
type sessionLink struct {
	session string
	message int64
}

// linkLog is the links not yet in session_messages. The committer owns it.
type linkLog struct {
	// done were committed; staged were written by the open transaction
	// (and go when it rolls back).
	done, staged []sessionLink
	// The open transaction's flushes wrote done (doneFlushed) and the
	// first stagedFlushed of staged.
	doneFlushed   bool
	stagedFlushed int
	// lastFlush is when done was last emptied.
	lastFlush time.Time
}

// begin readies the log for a new transaction.
func (l *linkLog) begin() {
	l.staged, l.doneFlushed, l.stagedFlushed = l.staged[:0], false, 0
}

// committed folds what the transaction did into done.
func (l *linkLog) committed(now time.Time) {
	if l.doneFlushed {
		l.done, l.lastFlush = l.done[:0], now
	}
	l.done = append(l.done, l.staged[l.stagedFlushed:]...)
	l.begin()
}

// due says whether the committed links should be flushed now.
func (l *linkLog) due(now time.Time) bool {
	return len(l.done) >= maxUnlinked || len(l.done) > 0 && now.Sub(l.lastFlush) >= linkFlushEvery
}

// linkMessage adds a message just inserted, with its sessions, to the
// history of session (and, once committed, to its recent window).
func linkMessage(tx *txn, session string, m gateway.Message) {
	tx.s.links.staged = append(tx.s.links.staged, sessionLink{session, m.ID})
	tx.onStored(func() { tx.s.recent.appendMessage(session, m) })
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

// flushLinks writes the links that wait, in session order, and moves the
// watermark. It runs on the committer, in a transaction: every message
// stored before it, committed or earlier in the same transaction, has its
// links in the log, so afterwards every message there is has its links
// in session_messages.
func (s *SQLite) flushLinks(tx *txn) error {
	l := &s.links
	var todo []sessionLink
	if !l.doneFlushed {
		todo = append(todo, l.done...)
	}
	todo = append(todo, l.staged[l.stagedFlushed:]...)
	if len(todo) == 0 {
		return nil
	}
	slices.SortFunc(todo, func(a, b sessionLink) int {
		return cmp.Or(strings.Compare(a.session, b.session), cmp.Compare(a.message, b.message))
	})
	for _, k := range todo {
		if _, err := tx.c.exec(`INSERT OR IGNORE INTO session_messages (session_id, message_id) VALUES (?, ?)`, k.session, k.message); err != nil {
			return err
		}
	}
	if _, err := tx.c.exec(`UPDATE meta SET value = (SELECT COALESCE(max(id), 0) FROM messages) WHERE key = 'linked_upto'`); err != nil {
		return err
	}
	l.doneFlushed, l.stagedFlushed = true, len(l.staged)
	return nil
}

// linked makes session_messages whole before a read of it on the reader
// pool: it flushes the links that wait, if any. A message whose write
// has returned (or whose stored callback has run) has its links counted
// by then.
func (s *SQLite) linked(ctx context.Context) error {
	if s.unlinked.Load() == 0 {
		return nil
	}
	if err := s.tx(ctx, s.flushLinks); err != nil {
		return fmt.Errorf("store: flush session links: %w", err)
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
		rows, err := tx.QueryContext(ctx, `SELECT id, sessions FROM messages WHERE id > ? AND sessions != ''`, upto)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var sessions string
			if err := rows.Scan(&id, &sessions); err != nil {
				rows.Close()
				return err
			}
			for _, sid := range strings.Fields(sessions) {
				s.links.staged = append(s.links.staged, sessionLink{sid, id})
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return s.flushLinks(tx)
	})
	if err != nil {
		return fmt.Errorf("store: re-link messages: %w", err)
	}
	return nil
}
