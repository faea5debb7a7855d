package store

import (
	"container/list"
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

// The pipeline reads back, for every turn, what it has just written: the
// turn's message and session, and the session's latest messages. recent
// keeps those in memory, so a turn is loaded without touching SQLite.
//
// It is a write-through cache filled only by stored callbacks, which run
// on the committer in commit order; message IDs grow in that order, so a
// session's window stays sorted by appending. A window is (re)loaded
// through the committer too (loadWindow), so no write can slip between its
// read and its installation. Anything it does not hold is read from
// SQLite as before: after a restart, for old sessions, for turns queued by
// a retry.

// Bounds of the cache.
const (
	// recentSessions is how many session windows are kept (least recently
	// used go first).
	recentSessions = 4096
	// recentIdle is how long a window is kept unused. The cache is for
	// sessions busy enough for reads to matter; a quiet session's next
	// message reloads its window.
	recentIdle = 10 * time.Second
	// recentTurns bounds the pending turns kept; turns over it are loaded
	// from SQLite.
	recentTurns = 1 << 16
	// windowSlack is how many messages a window keeps beyond the largest
	// history asked for, so later messages queued in the session (which a
	// turn's history skips) do not force a reload.
	windowSlack = 8
)

type recent struct {
	mu       sync.Mutex
	turns    map[int64]cachedTurn
	sessions map[string]*window
	// keys finds the windows by their sessions' keys (PeekSession).
	keys map[gateway.SessionKey]*window
	lru  list.List // of *window, most recently used first
	// pending counts each session's pending turns that this process
	// stored (addTurn, not bounded by recentTurns), and pendingOf names
	// their sessions, until doneTurn: a session with one has work queued,
	// or about to be, that an instant answer must not overtake (peek,
	// latest).
	pending   map[string]int
	pendingOf map[int64]string
	// size is how many messages a window keeps: the largest history asked
	// for plus windowSlack. It only grows, under mu; it is read without
	// mu by want, which every turn calls.
	size atomic.Int64
}

// cachedTurn is a pending turn as its write stored it.
type cachedTurn struct {
	ref        gateway.TurnRef
	message    gateway.Message
	text       string
	delegation string
}

// window is the latest messages of one session, oldest first, and its row.
type window struct {
	id      string
	session gateway.Session
	msgs    []gateway.Message
	// complete is set when msgs is the session's whole history.
	complete bool
	// private is the private chat where a person last wrote in the
	// session, if hasPrivate (see SQLite.LastPrivateChat).
	private    gateway.ChatRef
	hasPrivate bool
	elem       *list.Element
	used       time.Time
}

// use marks w as just used. r.mu is held.
func (r *recent) use(w *window) {
	w.used = time.Now()
	r.lru.MoveToFront(w.elem)
}

// sweep drops the windows unused for recentIdle.
func (r *recent) sweep(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for e := r.lru.Back(); e != nil; e = r.lru.Back() {
		w := e.Value.(*window)
		if now.Sub(w.used) < recentIdle {
			return
		}
		r.lru.Remove(e)
		r.drop(w)
	}
}

// drop forgets w. r.mu is held.
func (r *recent) drop(w *window) {
	delete(r.sessions, w.id)
	if r.keys[w.session.Key] == w {
		delete(r.keys, w.session.Key)
	}
}

// windowStatus says what turn found.
type windowStatus int

const (
	turnMissing   windowStatus = iota // not cached: read SQLite
	windowMissing                     // the turn is cached, its session's window is not (or holds less than it may)
	windowShort                       // the turn's history reaches back past what the window keeps: read SQLite
	turnHit
)

// addTurn remembers a pending turn.
func (r *recent) addTurn(t cachedTurn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.turns == nil {
		r.turns = make(map[int64]cachedTurn)
		r.pending = make(map[string]int)
		r.pendingOf = make(map[int64]string)
	}
	r.pending[t.ref.SessionID]++
	r.pendingOf[t.ref.ID] = t.ref.SessionID
	if len(r.turns) < recentTurns {
		// As SQLite gives them back: UTC microseconds, mentions split
		// from one space-joined column.
		t.message.Time = fromMicros(micros(t.message.Time))
		if len(t.message.Mentions) > 0 {
			t.message.Mentions = strings.Split(strings.Join(t.message.Mentions, " "), " ")
		}
		r.turns[t.ref.ID] = t
	}
}

// doneTurn forgets a completed turn and notes its session's new state;
// touched says the session's updated_at was written.
func (r *recent) doneTurn(turnID int64, session, resumeID string, at int64, touched bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.turns, turnID)
	if s, ok := r.pendingOf[turnID]; ok {
		delete(r.pendingOf, turnID)
		if r.pending[s]--; r.pending[s] <= 0 {
			delete(r.pending, s)
		}
	}
	if w, ok := r.sessions[session]; ok {
		if resumeID != "" {
			w.session.ResumeID = resumeID
		}
		if touched {
			w.session.UpdatedAt = fromMicros(at)
		}
	}
}

// touchEvery is how often a session's updated_at is written at most.
const touchEvery = 10 * time.Second

// stale says whether a session's updated_at is older than touchEvery at
// at (true when the session has no window: its row is not known).
func (r *recent) stale(session string, at int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.sessions[session]
	return !ok || fromMicros(at).Sub(w.session.UpdatedAt) >= touchEvery
}

// appendMessage adds a message just linked to a session to its window, if
// the session has one.
func (r *recent) appendMessage(session string, m *gateway.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.sessions[session]
	if !ok {
		return
	}
	if w.newest() >= m.ID {
		return // already read by the window's own load
	}
	if m.From.Kind == "human" && m.ChatType == gateway.ChatPrivate && m.Platform != "" {
		w.private = gateway.ChatRef{Platform: m.Platform, ChatID: m.ChatID, Type: gateway.ChatPrivate}
		w.hasPrivate = true
	}
	r.use(w)
	w.msgs = append(w.msgs, historyView(m))
	if over := len(w.msgs) - int(r.size.Load()); over > 0 {
		w.msgs = w.msgs[over:] // an append that outgrows the array moves to a new one
		w.complete = false
	}
}

// install replaces a session's window with one just read.
func (r *recent) install(w *window) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sessions == nil {
		r.sessions = make(map[string]*window)
		r.keys = make(map[gateway.SessionKey]*window)
	}
	if old, ok := r.sessions[w.id]; ok {
		r.lru.Remove(old.elem)
		r.drop(old)
	}
	w.elem = r.lru.PushFront(w)
	w.used = time.Now()
	r.sessions[w.id] = w
	r.keys[w.session.Key] = w
	for len(r.sessions) > recentSessions {
		last := r.lru.Back()
		r.lru.Remove(last)
		r.drop(last.Value.(*window))
	}
}

// peek is what a new turn in the session with key would see now: the
// session's row and its last limit messages, oldest first, if the session
// has a window that holds them and no pending turn this process stored
// (a turn stored by a hand-off, say, is queued by a later callback than
// the one that adds its message to the window). The history shares the
// window's array as turn's does.
func (r *recent) peek(key gateway.SessionKey, limit int) (sess gateway.Session, hist []gateway.Message, latest int64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.keys[key]
	if !ok || (len(w.msgs) < limit && !w.complete) || r.pending[w.id] > 0 {
		return gateway.Session{}, nil, 0, false
	}
	r.use(w)
	if n := len(w.msgs); limit > 0 && n > 0 {
		hist = w.msgs[max(0, n-limit):n:n]
	}
	return w.session, hist, w.newest(), true
}

// latest is the ID of the newest message of a session's window (0: none),
// if the session has a window and no pending turn this process stored.
func (r *recent) latest(session string) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.sessions[session]
	if !ok || r.pending[session] > 0 {
		return 0, false
	}
	return w.newest(), true
}

// newest is the ID of the window's newest message (0: none).
func (w *window) newest() int64 {
	if n := len(w.msgs); n > 0 {
		return w.msgs[n-1].ID
	}
	return 0
}

// lastPrivate is the private chat where a person last wrote in a session,
// if the session has a window.
func (r *recent) lastPrivate(session string) (c gateway.ChatRef, found, cached bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.sessions[session]
	if !ok {
		return c, false, false
	}
	r.use(w)
	return w.private, w.hasPrivate, true
}

// want grows the windows to hold a history of limit messages and returns
// their new size.
func (r *recent) want(limit int) int {
	if n := int(r.size.Load()); n >= limit+windowSlack {
		return n
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := max(int(r.size.Load()), limit+windowSlack)
	r.size.Store(int64(n))
	return n
}

// turn builds a turn's data from the cache. The history is the session's
// last limit messages before the turn's message, and any later message
// that is not a person's (see SQLite.history); delegation is the turn's
// delegation ID, which the caller resolves.
func (r *recent) turn(turnID int64, limit int) (d gateway.TurnData, delegation string, st windowStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.turns[turnID]
	if !ok {
		return d, "", turnMissing
	}
	d.Ref, d.Message, d.Text = t.ref, t.message, t.text
	w, ok := r.sessions[t.ref.SessionID]
	if !ok {
		return d, "", windowMissing
	}
	var hist []gateway.Message
	msgID := t.message.ID
	if n := len(w.msgs); limit > 0 && n > 0 && w.msgs[n-1].ID == msgID && (n > limit || w.complete) {
		// The usual case: the turn's message is the session's latest, so
		// the history is the run of messages before it. It shares the
		// window's array: a window never changes a message it holds, and
		// the capacity ends at the run, so appending to the window (or
		// to the history) never writes into it.
		if start := max(0, n-1-limit); start < n-1 {
			hist = w.msgs[start : n-1 : n-1]
		}
	} else if limit > 0 {
		// The window's messages from the end, skipping the turn's own and
		// later ones from people.
		for i := len(w.msgs) - 1; i >= 0 && len(hist) < limit; i-- {
			m := w.msgs[i]
			if m.ID == msgID || (m.ID > msgID && m.From.Kind == "human") {
				continue
			}
			if hist == nil {
				hist = make([]gateway.Message, 0, min(limit, i+1))
			}
			hist = append(hist, m)
		}
		if len(hist) < limit && !w.complete {
			if len(w.msgs) < int(r.size.Load()) {
				return d, "", windowMissing // a reload reads more
			}
			// Many later messages are queued behind this one: the window,
			// holding the latest, cannot give its history.
			return d, "", windowShort
		}
		slices.Reverse(hist)
	}
	r.use(w)
	d.Session, d.History = w.session, hist
	return d, t.delegation, turnHit
}

// historyView is m as SQLite.history reads it: what a brain is shown.
func historyView(m *gateway.Message) gateway.Message {
	return gateway.Message{ID: m.ID, Kind: m.Kind, From: m.From, UserID: m.UserID, Bot: m.Bot, Text: m.Text, Time: fromMicros(micros(m.Time))}
}

// loadWindow reads a session's row and latest messages and installs them
// as its window. It runs on the committer, between writes, so every
// message stored after the read is appended by its own callback. The
// session's links that wait in the log (links.go) are read from there:
// they are its latest.
func (s *SQLite) loadWindow(ctx context.Context, session string) error {
	size := s.recent.want(0)
	return s.tx(ctx, func(tx *txn) error {
		pending := s.links.pending(session)
		w := &window{id: session}
		var err error
		if w.session, err = scanSession(tx.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, session)); err != nil {
			return notFound(err)
		}
		// Newest first: the waiting links, then the written ones.
		for _, id := range slices.Backward(pending) {
			if len(w.msgs) > size {
				break
			}
			if w.msgs, err = appendHistory(w.msgs, tx.QueryRowContext(ctx, `SELECT `+historyColumns+` FROM messages m WHERE m.id = ?`, id)); err != nil {
				return err
			}
		}
		if len(w.msgs) <= size {
			// Written links older than the waiting ones (linkedSession may
			// have written those too).
			before := int64(math.MaxInt64)
			if len(pending) > 0 {
				before = pending[0]
			}
			rows, err := tx.QueryContext(ctx, `SELECT `+historyColumns+`
				FROM session_messages sm JOIN messages m ON m.id = sm.message_id
				WHERE sm.session_id = ? AND sm.message_id < ? ORDER BY sm.message_id DESC LIMIT ?`, session, before, size+1-len(w.msgs))
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				if w.msgs, err = appendHistory(w.msgs, rows); err != nil {
					return err
				}
			}
			if err := rows.Err(); err != nil {
				return err
			}
		}
		w.complete = len(w.msgs) <= size
		if !w.complete {
			w.msgs = w.msgs[:size]
		}
		slices.Reverse(w.msgs)
		found := false
		for _, id := range slices.Backward(pending) {
			err = tx.QueryRowContext(ctx, `SELECT c.platform, c.chat_id FROM messages m JOIN conversations c ON c.id = m.conversation_id
				WHERE m.id = ? AND m.from_kind = 'human' AND c.kind = 'private'`, id).Scan(&w.private.Platform, &w.private.ChatID)
			if err == nil {
				found = true
				break
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		if !found {
			err = tx.QueryRowContext(ctx, lastPrivateChatQuery, session).Scan(&w.private.Platform, &w.private.ChatID)
			found = err == nil
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		if found {
			w.private.Type, w.hasPrivate = gateway.ChatPrivate, true
		}
		tx.onStored(func() { s.recent.install(w) })
		return nil
	})
}
