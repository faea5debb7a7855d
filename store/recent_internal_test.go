package store

// These tests check that the in-memory cache of recent turns and session
// windows (recent.go) answers exactly as SQLite does: LoadTurn against
// loadTurn (the SQL path), LastPrivateChat against lastPrivateChatQuery,
// and every installed window against the session's rows.

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

// recentClock is a fake clock for timeNow (the time CompleteTurn stamps
// session updates with), so the touch of updated_at at most every
// touchEvery is exercised both ways. It is read by the committer goroutine, hence atomic.
type recentClock struct{ us atomic.Int64 }

func (c *recentClock) now() time.Time          { return time.UnixMicro(c.us.Load()) }
func (c *recentClock) advance(d time.Duration) { c.us.Add(d.Microseconds()) }

// useRecentClock installs a fake clock as the store's timeNow until the
// test ends. Call it before opening stores: their Close (a cleanup
// registered later) then runs before the clock is put back.
func useRecentClock(t *testing.T) *recentClock {
	t.Helper()
	c := &recentClock{}
	c.us.Store(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC).UnixMicro())
	old := timeNow
	timeNow = c.now
	t.Cleanup(func() { timeNow = old })
	return c
}

func openRecentStore(t *testing.T, path string) *SQLite {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// A round of flushing the link log after every batch, a chunk of one
	// entry per batch: windows are loaded while entries wait in each of
	// the log's stages. (Set on the committer, which owns the log.)
	if err := s.tx(context.Background(), func(*txn) error {
		s.links.every, s.links.chunk = 0, 1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// turnDiff explains how two loaded turns differ ("" when they do not).
func turnDiff(cache, sqlTurn gateway.TurnData) string {
	if reflect.DeepEqual(cache, sqlTurn) {
		return ""
	}
	var b strings.Builder
	field := func(name string, c, s any) {
		if reflect.DeepEqual(c, s) {
			return
		}
		cs, ss := fmt.Sprintf("%+v", c), fmt.Sprintf("%+v", s)
		if cs == ss { // e.g. nil vs empty slice, or a time's location
			cs, ss = fmt.Sprintf("%#v", c), fmt.Sprintf("%#v", s)
		}
		fmt.Fprintf(&b, "\n  %s:\n    cache %s\n    sql   %s", name, cs, ss)
	}
	field("Ref", cache.Ref, sqlTurn.Ref)
	field("Session", cache.Session, sqlTurn.Session)
	field("Delegation", cache.Delegation, sqlTurn.Delegation)
	field("Message", cache.Message, sqlTurn.Message)
	field("Text", cache.Text, sqlTurn.Text)
	if len(cache.History) != len(sqlTurn.History) || (cache.History == nil) != (sqlTurn.History == nil) {
		fmt.Fprintf(&b, "\n  History: cache %d messages %v (nil %v), sql %d messages %v (nil %v)",
			len(cache.History), historyIDs(cache.History), cache.History == nil,
			len(sqlTurn.History), historyIDs(sqlTurn.History), sqlTurn.History == nil)
	}
	for i := range min(len(cache.History), len(sqlTurn.History)) {
		field(fmt.Sprintf("History[%d]", i), cache.History[i], sqlTurn.History[i])
	}
	return b.String()
}

func historyIDs(ms []gateway.Message) []int64 {
	var ids []int64
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids
}

// loadPath says how LoadTurn served a turn.
type loadPath string

const (
	pathHit    loadPath = "cache hit"         // turn and window cached
	pathReload loadPath = "window (re)loaded" // turn cached, window read then used
	pathSQL    loadPath = "sql"               // answered by loadTurn
)

// checkLoadTurn loads a turn through the cache (LoadTurn) and through SQL
// (loadTurn) and fails the test when they differ. It returns the turn and
// the path LoadTurn took, judged from the cache before and after.
func checkLoadTurn(t *testing.T, s *SQLite, id int64, limit int) (gateway.TurnData, loadPath) {
	t.Helper()
	ctx := context.Background()
	s.recent.want(limit) // as LoadTurn does first, so "before" is judged at the same size
	_, _, before := s.recent.turn(id, limit)
	got, err := s.LoadTurn(ctx, id, limit)
	if err != nil {
		t.Fatalf("LoadTurn(%d, %d): %v", id, limit, err)
	}
	_, _, after := s.recent.turn(id, limit)
	want, err := s.loadTurn(ctx, id, limit)
	if err != nil {
		t.Fatalf("loadTurn(%d, %d): %v", id, limit, err)
	}
	if d := turnDiff(got, want); d != "" {
		t.Fatalf("LoadTurn(%d, limit %d) differs from the SQL path (cache status before %d, after %d):%s", id, limit, before, after, d)
	}
	switch {
	case before == turnHit:
		return got, pathHit
	case after == turnHit:
		return got, pathReload
	default:
		return got, pathSQL
	}
}

// sqlLastPrivate runs lastPrivateChatQuery on the reader, as
// LastPrivateChat does when the session has no window.
func sqlLastPrivate(t *testing.T, s *SQLite, session string) (gateway.ChatRef, bool) {
	t.Helper()
	var c gateway.ChatRef
	err := s.queryRow(context.Background(), `SELECT c.platform, c.chat_id
		FROM messages m JOIN conversations c ON c.id = m.conversation_id
		WHERE `+inSession+` AND m.from_kind = 'human' AND c.kind = 'private'
		ORDER BY m.id DESC LIMIT 1`, session).Scan(&c.Platform, &c.ChatID)
	if errors.Is(err, sql.ErrNoRows) {
		return gateway.ChatRef{}, false
	}
	if err != nil {
		t.Fatalf("last private chat of %s: %v", session, err)
	}
	c.Type = gateway.ChatPrivate
	return c, true
}

// checkLastPrivate compares LastPrivateChat (cached when the session has a
// window) with the SQL query for every session; it returns how many were
// answered from the cache.
func checkLastPrivate(t *testing.T, s *SQLite, sessions []string) (cached int) {
	t.Helper()
	for _, sid := range sessions {
		want, wantOK := sqlLastPrivate(t, s, sid)
		_, _, inCache := s.recent.lastPrivate(sid)
		got, ok, err := s.LastPrivateChat(context.Background(), sid)
		if err != nil {
			t.Fatalf("LastPrivateChat(%s): %v", sid, err)
		}
		if ok != wantOK || got != want {
			t.Fatalf("LastPrivateChat(%s) (cached %v) = %+v, %v; sql says %+v, %v", sid, inCache, got, ok, want, wantOK)
		}
		if inCache {
			cached++
		}
	}
	return cached
}

// windowCopy is a snapshot of one cached window.
type windowCopy struct {
	session    gateway.Session
	msgs       []gateway.Message
	complete   bool
	private    gateway.ChatRef
	hasPrivate bool
}

func snapshotWindows(s *SQLite) (map[string]windowCopy, int) {
	s.recent.mu.Lock()
	defer s.recent.mu.Unlock()
	out := make(map[string]windowCopy, len(s.recent.sessions))
	for id, w := range s.recent.sessions {
		out[id] = windowCopy{w.session, slices.Clone(w.msgs), w.complete, w.private, w.hasPrivate}
	}
	return out, int(s.recent.size.Load())
}

// inSession matches the messages of session ?1 by the sessions they
// carry, which are written with them: the truth the link log
// (links.go) must agree with, whatever it has written yet.
const inSession = `(' ' || m.sessions || ' ') LIKE ('% ' || ?1 || ' %')`

// sessionRows reads a session's messages as a window holds them, oldest
// first.
func sessionRows(t *testing.T, s *SQLite, session string) []gateway.Message {
	t.Helper()
	return historyRows(t, s, `SELECT `+historyColumns+`
		FROM messages m WHERE `+inSession+` ORDER BY m.id`, session)
}

// historyRows reads messages as a window holds them, oldest first
// (whatever the query's order: an exchange's row is two messages).
func historyRows(t *testing.T, s *SQLite, query string, args ...any) []gateway.Message {
	t.Helper()
	rows, err := s.query(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []gateway.Message
	for rows.Next() {
		if out, err = appendHistory(out, rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b gateway.Message) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// checkWindows compares every cached window (of the sessions in only,
// when not nil) with SQLite: its session row, its messages (the session's
// latest, all of them when complete, no more than the window size) and its
// last private chat. It returns how many windows are not complete (trimmed
// to their size).
func checkWindows(t *testing.T, s *SQLite, only map[string]bool) (trimmed int) {
	t.Helper()
	ctx := context.Background()
	windows, size := snapshotWindows(s)
	for sid, w := range windows {
		if only != nil && !only[sid] {
			continue
		}
		row, err := s.GetSession(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(w.session, row) {
			t.Fatalf("window of %s holds session %+v; sql has %+v", sid, w.session, row)
		}
		all := sessionRows(t, s, sid)
		if len(w.msgs) > size || len(w.msgs) > len(all) {
			t.Fatalf("window of %s holds %d messages: size %d, session has %d", sid, len(w.msgs), size, len(all))
		}
		if w.complete && len(w.msgs) != len(all) {
			t.Fatalf("window of %s is complete with %d messages; session has %d", sid, len(w.msgs), len(all))
		}
		if want := all[len(all)-len(w.msgs):]; !reflect.DeepEqual(w.msgs, want) && len(want) > 0 {
			t.Fatalf("window of %s holds %v; the session's latest are %v\n cache %+v\n sql   %+v",
				sid, historyIDs(w.msgs), historyIDs(want), w.msgs, want)
		}
		pc, ok := sqlLastPrivate(t, s, sid)
		if ok != w.hasPrivate || (ok && pc != w.private) {
			t.Fatalf("window of %s: private chat %+v (%v); sql %+v (%v)", sid, w.private, w.hasPrivate, pc, ok)
		}
		if !w.complete {
			trimmed++
		}
	}
	return trimmed
}

// recentSim drives a store with random traffic and checks the cache
// against SQLite after every step.
type recentSim struct {
	t     *testing.T
	ctx   context.Context
	path  string
	s     *SQLite
	rng   *rand.Rand
	clock *recentClock
	seq   int // platform message IDs

	pending []gateway.TurnRef // queued, not completed
	// queued names the sessions of the pending turns this store (since
	// its last reopen) stored: PeekSession refuses those sessions.
	queued   map[int64]string
	sessions []string // every session seen, in order
	known    map[string]bool
	sent     []sentInbound   // stored inbounds, for redeliveries
	touched  map[string]bool // sessions written since the last check
	paths    map[loadPath]int
	stats    map[string]int
	keys     map[gateway.SessionKey]string // the session of each key seen
}

// newRecentSim starts a simulation on a new store, with a fake clock and
// a random source seeded with a and b.
func newRecentSim(t *testing.T, a, b uint64) *recentSim {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sb.db")
	return &recentSim{
		t: t, ctx: context.Background(), path: path, s: openRecentStore(t, path),
		rng: rand.New(rand.NewPCG(a, b)), clock: useRecentClock(t), known: map[string]bool{}, touched: map[string]bool{}, queued: map[int64]string{},
		paths: map[loadPath]int{}, stats: map[string]int{}, keys: map[gateway.SessionKey]string{},
	}
}

type sentInbound struct {
	in    gateway.Inbound
	id    int64
	turns []gateway.TurnRef
}

var (
	simUsers = []string{"u0", "u1", "u2", "u3", "u4"}
	simBots  = []string{"matty", "finn"}
	// In group rooms matty keeps one session per room, finn one per
	// person (so group messages also land in user sessions, next to
	// private chats).
	simGroupScope = map[string]string{"matty": gateway.ScopeGroup, "finn": gateway.ScopeUser}
	simLimits     = []int{0, 1, 3, 20, 40}
)

// eventTime is the clock's time with sub-microsecond noise and, half the
// time, another time zone: the store keeps UTC microseconds, and both
// paths must agree on that.
func (m *recentSim) eventTime() time.Time {
	at := m.clock.now().Add(time.Duration(m.rng.IntN(1000)))
	if m.rng.IntN(2) == 0 {
		at = at.In(time.FixedZone("X", 3600*m.rng.IntN(12)))
	}
	return at
}

// user picks a user, u0 far more often: its sessions outgrow the windows.
func (m *recentSim) user() string {
	if m.rng.IntN(10) < 4 {
		return simUsers[0]
	}
	return simUsers[m.rng.IntN(len(simUsers))]
}

func (m *recentSim) nextID() string {
	m.seq++
	return strconv.Itoa(m.seq)
}

// privateInbound is a person's message in a private chat with bot, on the
// web or (sometimes) Telegram: both land in the person's session.
func (m *recentSim) privateInbound(user, bot string) gateway.Inbound {
	id := m.nextID()
	text := fmt.Sprintf("%s to %s #%s", user, bot, id)
	ev := gateway.Event{
		Platform: gateway.PlatformWeb, Bot: bot, ChatID: gateway.PrivateChatID("web-"+user, bot), ChatType: gateway.ChatPrivate,
		MessageID: id, Sender: gateway.Sender{PlatformID: "web-" + user, Name: user}, Text: text, Time: m.eventTime(),
	}
	if m.rng.IntN(5) == 0 {
		ev.Platform, ev.ChatID, ev.Sender.PlatformID = gateway.PlatformTelegram, "100"+user, "telegram-100"+user
	}
	if m.rng.IntN(3) == 0 {
		ev.Mentions = []gateway.Mention{{Start: 0, End: len(user), Bot: bot}}
		ev.ReplyTo = strconv.Itoa(m.rng.IntN(m.seq) + 1)
	}
	return gateway.Inbound{
		Event: ev, UserID: "user-" + user, UserName: strings.ToUpper(user),
		Turns: []gateway.TurnRequest{{Session: gateway.SessionKey{Bot: bot, Scope: gateway.ScopeUser, ScopeID: "user-" + user}, Text: text}},
	}
}

// groupInbound is a person's message in a web room addressing one or both
// bots, in random order.
func (m *recentSim) groupInbound(user string) gateway.Inbound {
	id := m.nextID()
	room := fmt.Sprintf("room-%d", m.rng.IntN(2))
	text := fmt.Sprintf("%s in %s #%s", user, room, id)
	ev := gateway.Event{
		Platform: gateway.PlatformWeb, ChatID: room, ChatType: gateway.ChatGroup, ChatName: room,
		MessageID: id, Sender: gateway.Sender{PlatformID: "web-" + user, Name: user}, Text: text, Time: m.eventTime(),
	}
	bots := slices.Clone(simBots)
	m.rng.Shuffle(len(bots), func(i, j int) { bots[i], bots[j] = bots[j], bots[i] })
	if m.rng.IntN(4) == 0 {
		bots = bots[:1]
	}
	in := gateway.Inbound{Event: ev, UserID: "user-" + user, UserName: strings.ToUpper(user)}
	for _, b := range bots {
		in.Event.Mentions = append(in.Event.Mentions, gateway.Mention{Bot: b, Name: b})
		key := gateway.SessionKey{Bot: b, Scope: simGroupScope[b], ScopeID: "user-" + user}
		if key.Scope == gateway.ScopeGroup {
			key.ScopeID = "web:" + room
		}
		in.Turns = append(in.Turns, gateway.TurnRequest{Session: key, Text: text})
	}
	return in
}

func (m *recentSim) addSession(id string) {
	if !m.known[id] {
		m.known[id] = true
		m.sessions = append(m.sessions, id)
	}
	m.touched[id] = true
}

// appendInbound stores a new message and queues its turns.
func (m *recentSim) appendInbound(in gateway.Inbound) gateway.InboundResult {
	m.t.Helper()
	res, err := m.s.AppendInbound(m.ctx, in)
	if err != nil {
		m.t.Fatalf("append %s: %v", in.Event.MessageID, err)
	}
	if res.Duplicate || len(res.Turns) != len(in.Turns) {
		m.t.Fatalf("append %s = %+v; want a new message with %d turns", in.Event.MessageID, res, len(in.Turns))
	}
	for i, tr := range res.Turns {
		if i > 0 && tr.After != res.Turns[i-1].ID {
			m.t.Fatalf("turn %d of %s waits for %d; want %d", i, in.Event.MessageID, tr.After, res.Turns[i-1].ID)
		}
		m.addSession(tr.SessionID)
		m.learnKey(in.Turns[i].Session, tr.SessionID)
	}
	m.queue(res.Turns...)
	m.sent = append(m.sent, sentInbound{in, res.Message.ID, res.Turns})
	m.stats["inbound"]++
	return res
}

// redeliver stores a message again: the store answers with the first copy
// and queues nothing.
func (m *recentSim) redeliver() {
	m.t.Helper()
	if len(m.sent) == 0 {
		return
	}
	m.redeliverOf(m.sent[m.rng.IntN(len(m.sent))])
}

// redeliverOf stores first's message again (AppendInbound).
func (m *recentSim) redeliverOf(first sentInbound) {
	m.t.Helper()
	res, err := m.s.AppendInbound(m.ctx, first.in)
	if err != nil {
		m.t.Fatal(err)
	}
	if !res.Duplicate || res.Message.ID != first.id || len(res.Turns) != 0 {
		m.t.Fatalf("redelivery of %s = %+v; want a duplicate of message %d", first.in.Event.MessageID, res, first.id)
	}
	for _, tr := range first.turns {
		m.touched[tr.SessionID] = true // must be left as it was
	}
	m.stats["duplicate"]++
}

// idle drops the least recently used windows, as the sweep of idle
// windows does once they are recentIdle old: those used no later than a
// random one of them.
func (m *recentSim) idle() {
	r := &m.s.recent
	r.mu.Lock()
	var used []time.Time
	for e := r.lru.Front(); e != nil; e = e.Next() {
		used = append(used, e.Value.(*window).used)
	}
	r.mu.Unlock()
	if len(used) == 0 {
		return
	}
	r.sweep(used[m.rng.IntN(len(used))].Add(recentIdle))
	m.stats["idle sweep"]++
}

// learnKey notes that key names session sid: a key names one session for
// good.
func (m *recentSim) learnKey(key gateway.SessionKey, sid string) {
	m.t.Helper()
	if old, ok := m.keys[key]; ok && old != sid {
		m.t.Fatalf("key %+v names session %s; it named %s", key, sid, old)
	}
	m.keys[key] = sid
}

// simKeys are all the session keys the simulation's messages can name:
// every user's session with every bot, and matty's room sessions.
func simKeys() []gateway.SessionKey {
	var keys []gateway.SessionKey
	for _, u := range simUsers {
		for _, b := range simBots {
			keys = append(keys, gateway.SessionKey{Bot: b, Scope: gateway.ScopeUser, ScopeID: "user-" + u})
		}
	}
	for room := range 2 {
		keys = append(keys, gateway.SessionKey{Bot: "matty", Scope: gateway.ScopeGroup, ScopeID: fmt.Sprintf("web:room-%d", room)})
	}
	return keys
}

// sessionTail is the last limit of sessionRows.
func sessionTail(t *testing.T, s *SQLite, session string, limit int) []gateway.Message {
	t.Helper()
	if limit <= 0 {
		return nil
	}
	out := historyRows(t, s, `SELECT `+historyColumns+`
		FROM messages m WHERE `+inSession+` ORDER BY m.id DESC LIMIT ?2`, session, limit)
	return out[max(0, len(out)-limit):]
}

// peekDiff explains how what PeekSession(key, limit) returned (d and
// latest) differs from SQLite ("" when it does not): the session of key
// (sid) as its row, its last limit messages, as a window holds them, and
// the ID of its newest message.
func peekDiff(t *testing.T, s *SQLite, key gateway.SessionKey, sid string, limit int, d gateway.TurnData, latest int64) string {
	t.Helper()
	row, err := s.GetSession(context.Background(), sid)
	if err != nil {
		t.Fatalf("session %s of %+v: %v", sid, key, err)
	}
	tail := sessionTail(t, s, sid, max(limit, 1))
	want := gateway.TurnData{Ref: gateway.TurnRef{SessionID: sid}, Session: row, History: tail[max(0, len(tail)-limit):]}
	if len(want.History) == 0 {
		want.History = d.History // nil or empty: either says none
	}
	if row.Key != key {
		return fmt.Sprintf("\n  session %s has key %+v, not %+v", sid, row.Key, key)
	}
	diff := turnDiff(d, want)
	if n := len(tail); (n == 0 && latest != 0) || (n > 0 && latest != tail[n-1].ID) {
		diff += fmt.Sprintf("\n  latest %d; the session's newest message is %v", latest, historyIDs(tail[max(0, n-1):]))
	}
	if cap(d.History) != len(d.History) {
		// A caller appending to the history would write into the window.
		diff += fmt.Sprintf("\n  History has %d messages and capacity %d", len(d.History), cap(d.History))
	}
	return diff
}

// checkPeeks calls PeekSession for every key the simulation can name,
// each with a random history limit the windows are sized for, and
// compares it with the cache and SQLite: a key whose session has no
// window (or no session) is a miss, a window that holds limit messages
// (or all of the session's) is a hit, and a hit gives the session's row
// and its last limit messages — as SQLite has them for the sessions in
// only (all when nil), as the window holds them for the others (which
// checkWindows compares with SQLite when they are written). It also
// checks that the cache finds every window, and only those, by key.
func (m *recentSim) checkPeeks(only map[string]bool) {
	m.t.Helper()
	r := &m.s.recent
	r.mu.Lock()
	for key, w := range r.keys {
		if w.session.Key != key || r.sessions[w.id] != w {
			r.mu.Unlock()
			m.t.Fatalf("key %+v finds window %s (of key %+v), not the session's window", key, w.id, w.session.Key)
		}
	}
	if len(r.keys) != len(r.sessions) {
		n, k := len(r.sessions), len(r.keys)
		r.mu.Unlock()
		m.t.Fatalf("%d windows, %d of them found by key", n, k)
	}
	r.mu.Unlock()
	windows, size := snapshotWindows(m.s)
	// Limits the windows are sized for already: a larger one would grow
	// them (PeekSession asks for it, as LoadTurn does), and the checks
	// would change what they check. (The instant path's own peeks do grow
	// them.)
	var limits []int
	for _, l := range simLimits {
		if l == 0 || l+windowSlack <= size {
			limits = append(limits, l)
		}
	}
	for _, key := range simKeys() {
		limit := limits[m.rng.IntN(len(limits))]
		sid := m.keys[key]
		w, cached := windows[sid]
		d, latest, ok := m.s.PeekSession(key, limit)
		switch {
		case sid == "" || !cached:
			if ok {
				m.t.Fatalf("PeekSession(%+v, %d) = %+v, true; the session (%q) has no window", key, limit, d, sid)
			}
			m.stats["peek: no window"]++
			continue
		case len(w.msgs) < limit && !w.complete:
			if ok {
				m.t.Fatalf("PeekSession(%+v, %d) = %+v, true; the window holds %d of more messages", key, limit, d, len(w.msgs))
			}
			m.stats["peek: window short"]++
			continue
		case m.hasQueued(sid):
			if ok {
				m.t.Fatalf("PeekSession(%+v, %d) = %+v, true; the session has a turn pending", key, limit, d)
			}
			m.stats["peek: turn pending"]++
			continue
		case !ok:
			m.t.Fatalf("PeekSession(%+v, %d) missed; the window holds %d messages (complete %v)", key, limit, len(w.msgs), w.complete)
		}
		if only != nil && !only[sid] {
			// An untouched session: what its window holds.
			want := gateway.TurnData{Ref: gateway.TurnRef{SessionID: sid}, Session: w.session, History: w.msgs[max(0, len(w.msgs)-limit):]}
			if limit == 0 || len(w.msgs) == 0 {
				want.History = d.History
			}
			var newest int64
			if n := len(w.msgs); n > 0 {
				newest = w.msgs[n-1].ID
			}
			if diff := turnDiff(d, want); diff != "" || cap(d.History) != len(d.History) || latest != newest {
				m.t.Fatalf("PeekSession(%+v, %d) differs from the window (capacity %d, latest %d, newest %d):%s", key, limit, cap(d.History), latest, newest, diff)
			}
			m.stats["peek: hit"]++
			continue
		}
		if diff := peekDiff(m.t, m.s, key, sid, limit, d, latest); diff != "" {
			m.t.Fatalf("PeekSession(%+v, %d) differs from SQL:%s", key, limit, diff)
		}
		m.stats["peek: hit"]++
		m.stats["peek: hit checked with SQL"]++
	}
}

// sqlCounts counts the rows a completion writes: messages, outbox
// entries, turns and artifacts.
func (m *recentSim) sqlCounts() [4]int {
	m.t.Helper()
	var n [4]int
	if err := m.s.queryRow(m.ctx, `SELECT (SELECT COUNT(*) FROM messages), (SELECT COUNT(*) FROM outbox),
		(SELECT COUNT(*) FROM turns), (SELECT COUNT(*) FROM artifacts)`).Scan(&n[0], &n[1], &n[2], &n[3]); err != nil {
		m.t.Fatal(err)
	}
	return n
}

// instant is a person's private message to a random bot, as the
// gateway's instant path takes it (see answerInstant), with a random
// history limit. One time in ten it is a private message stored before
// (one that started one turn): a redelivery. When the path is not taken
// (the peek missed, the answer was stale), the message takes the stored
// path (AppendInbound), as in the gateway.
func (m *recentSim) instant() {
	m.t.Helper()
	var in gateway.Inbound
	var first *sentInbound
	if m.rng.IntN(10) == 0 {
		var once []sentInbound
		for _, si := range m.sent {
			if len(si.in.Turns) == 1 && si.in.Event.ChatType == gateway.ChatPrivate {
				once = append(once, si)
			}
		}
		if len(once) == 0 {
			return
		}
		first = &once[m.rng.IntN(len(once))]
		in = first.in
	} else {
		in = m.privateInbound(m.user(), simBots[m.rng.IntN(len(simBots))])
	}
	limit := simLimits[m.rng.IntN(len(simLimits))]
	meanwhile := ""
	switch m.rng.IntN(16) {
	case 0:
		meanwhile = simMessage
	case 1:
		meanwhile = simDrop
	}
	if m.answerInstant(in, first, limit, meanwhile) {
		return
	}
	m.stats["instant: not taken"]++
	if first == nil {
		m.appendInbound(in)
	} else {
		m.redeliverOf(*first)
	}
}

// What happens between an instant path's peek and its AppendAnswered
// (see answerInstant).
const (
	simMessage = "another message of the person's, on the stored path"
	simDrop    = "the window dropped as idle"
)

// answerInstant does what the gateway's instant path does with in, a
// message that starts one turn: if PeekSession finds the session's
// window (taken), the turn is answered from what it returned, and the
// message, its turn (done) and the reply (sometimes with a resume ID or
// a note) are stored in one AppendAnswered. When first is set, in is its
// message again: nothing of the answer may be stored. With meanwhile set
// (simMessage, simDrop), the session gains a message between the peek
// and AppendAnswered, or its window is dropped as idle: the answer is
// stale, nothing is stored, and the message is not taken. The peek, the
// results, the callbacks and the rows written are checked.
func (m *recentSim) answerInstant(in gateway.Inbound, first *sentInbound, limit int, meanwhile string) (taken bool) {
	m.t.Helper()
	key := in.Turns[0].Session
	data, latest, ok := m.s.PeekSession(key, limit)
	if !ok {
		return false
	}
	sid := m.keys[key]
	if sid == "" {
		m.t.Fatalf("PeekSession(%+v, %d) = %+v, true; the key has no session", key, limit, data)
	}
	if diff := peekDiff(m.t, m.s, key, sid, limit, data, latest); diff != "" {
		m.t.Fatalf("PeekSession(%+v, %d) for an instant answer differs from SQL:%s", key, limit, diff)
	}
	peeked := slices.Clone(data.History)
	// A brain may append to the history it is given: that must not reach
	// the window (checkWindows would see it).
	_ = append(data.History, gateway.Message{ID: -1, Text: "appended by the brain"})

	bot := data.Session.Key.Bot
	ev := in.Event
	reply := fmt.Sprintf("%s answers %s at once", bot, ev.MessageID)
	c := gateway.Completion{Turn: data.Ref, Session: data.Ref.SessionID, Posts: []gateway.Post{{Session: data.Ref.SessionID, Message: gateway.Message{
		Platform: ev.Platform, ChatID: ev.ChatID, ChatType: ev.ChatType, Kind: gateway.KindChat,
		From: gateway.Party{Kind: "bot", ID: bot, Name: strings.ToUpper(bot)}, UserID: in.UserID, Bot: bot,
		Text: reply, ReplyTo: ev.MessageID, Time: m.eventTime(),
	}}}}
	if m.rng.IntN(4) == 0 {
		c.ResumeID = fmt.Sprintf("resume-instant-%s", ev.MessageID)
	}
	if m.rng.IntN(6) == 0 {
		c.Notes = append(c.Notes, gateway.Note{Session: data.Ref.SessionID, Message: gateway.Message{
			Kind: gateway.KindSystem, From: gateway.Party{Kind: "system", ID: bot, Name: "instant"}, UserID: in.UserID, Bot: bot,
			Text: fmt.Sprintf("note on %s", ev.MessageID), Time: m.eventTime(),
		}})
	}
	var calls []string
	var stored gateway.InboundResult
	var completed gateway.Completed
	in.OnStored = func(r gateway.InboundResult) { calls, stored = append(calls, "inbound"), r }
	c.OnStored = func(d gateway.Completed) { calls, completed = append(calls, "completion"), d }
	m.touched[sid] = true
	stale := meanwhile
	switch meanwhile {
	case simMessage:
		m.appendInbound(m.privateInbound(strings.TrimPrefix(key.ScopeID, "user-"), key.Bot))
	case simDrop:
		r := &m.s.recent
		r.mu.Lock()
		if w, ok := r.sessions[sid]; ok {
			r.lru.Remove(w.elem)
			r.drop(w)
		}
		r.mu.Unlock()
	}
	before := m.sqlCounts()
	row, err := m.s.GetSession(m.ctx, sid)
	if err != nil {
		m.t.Fatal(err)
	}
	// nothing checks that AppendAnswered stored nothing.
	nothing := func(what string) {
		m.t.Helper()
		if after := m.sqlCounts(); after != before {
			m.t.Fatalf("%s wrote rows: messages, outbox, turns, artifacts %v, then %v", what, before, after)
		}
		if now, err := m.s.GetSession(m.ctx, sid); err != nil || now != row {
			m.t.Fatalf("%s changed its session: %+v, then %+v (%v)", what, row, now, err)
		}
	}
	res, out, err := m.s.AppendAnswered(m.ctx, in, c, latest)
	if !reflect.DeepEqual(data.History, peeked) {
		m.t.Fatalf("the history PeekSession returned changed under the caller: %v, now %v", historyIDs(peeked), historyIDs(data.History))
	}
	if stale != "" {
		if !errors.Is(err, gateway.ErrStale) || len(calls) != 0 {
			m.t.Fatalf("append answered %s after %s = %+v, %+v, %v (callbacks %q); want %v", ev.MessageID, stale, res, out, err, calls, gateway.ErrStale)
		}
		nothing(fmt.Sprintf("a stale answer (%s) to %s", stale, ev.MessageID))
		m.stats["instant: stale"]++
		return false
	}
	if err != nil {
		m.t.Fatalf("append answered %s: %v", ev.MessageID, err)
	}
	if first != nil {
		// A redelivery: the first copy, and nothing of the answer.
		if !res.Duplicate || res.Message.ID != first.id || len(res.Turns) != 0 || len(out.Outbox) != 0 || len(out.Turns) != 0 {
			m.t.Fatalf("instant redelivery of %s = %+v, %+v; want a duplicate of message %d and nothing stored", ev.MessageID, res, out, first.id)
		}
		if !slices.Equal(calls, []string{"inbound"}) || !stored.Duplicate || stored.Message.ID != first.id {
			m.t.Fatalf("instant redelivery of %s: callbacks %q, inbound result %+v", ev.MessageID, calls, stored)
		}
		nothing(fmt.Sprintf("the instant redelivery of %s", ev.MessageID))
		for _, tr := range first.turns {
			m.touched[tr.SessionID] = true
		}
		m.stats["instant: duplicate"]++
		return true
	}
	if res.Duplicate || res.Message.ID == 0 || len(res.Turns) != 0 {
		m.t.Fatalf("append answered %s = %+v; want a new message that queued no turn", ev.MessageID, res)
	}
	if len(out.Outbox) != 1 || out.Outbox[0].MessageID <= res.Message.ID || out.Outbox[0].Text != reply || len(out.Turns) != 0 {
		m.t.Fatalf("append answered %s (message %d) = %+v; want the reply queued after it", ev.MessageID, res.Message.ID, out)
	}
	if !slices.Equal(calls, []string{"inbound", "completion"}) || !reflect.DeepEqual(stored, res) || !reflect.DeepEqual(completed, out) {
		m.t.Fatalf("append answered %s: callbacks %q with %+v, %+v; returned %+v, %+v", ev.MessageID, calls, stored, completed, res, out)
	}
	// The answer was made on the session as it is: the message follows
	// the newest one peeked.
	tail := sessionTail(m.t, m.s, sid, len(c.Notes)+4)
	for i, msg := range tail {
		if msg.ID == res.Message.ID && (i == 0 && latest != 0 || i > 0 && tail[i-1].ID != latest) {
			m.t.Fatalf("message %d of %s follows %v; the answer was made after %d", res.Message.ID, ev.MessageID, historyIDs(tail[:i]), latest)
		}
	}
	m.addSession(sid)
	in.OnStored = nil
	m.sent = append(m.sent, sentInbound{in, res.Message.ID, res.Turns})
	m.stats["instant: answered"]++
	if _, ok := exchangePost(in, c); ok {
		// One row (exchanges.go): the reply's, the message's ID the one
		// before it, and no turn row.
		var turns, rowsAt int
		var replyAt sql.NullInt64
		if err := m.s.queryRow(m.ctx, `SELECT (SELECT COUNT(*) FROM turns WHERE message_id IN (?1, ?1 + 1)),
			(SELECT reply_at FROM messages WHERE id = ?1 + 1), (SELECT COUNT(*) FROM messages WHERE id = ?1)`, res.Message.ID).Scan(&turns, &replyAt, &rowsAt); err != nil {
			m.t.Fatal(err)
		}
		if turns != 0 || !replyAt.Valid || rowsAt != 0 || out.Outbox[0].MessageID != res.Message.ID+1 {
			m.t.Fatalf("message %d: %d turns, reply at %v, %d rows at its ID, reply %d; want an exchange's row at %d", res.Message.ID, turns, replyAt, rowsAt, out.Outbox[0].MessageID, res.Message.ID+1)
		}
		m.stats["instant: one row"]++
		return true
	}
	// Its one turn, in the session, was stored done, at the store's clock,
	// and never pending (checkTurns: it is not cached as pending).
	var status, session string
	var doneAt int64
	var turns int
	if err := m.s.queryRow(m.ctx, `SELECT status, done_at, session_id, COUNT(*) OVER () FROM turns WHERE message_id = ?`, res.Message.ID).Scan(&status, &doneAt, &session, &turns); err != nil {
		m.t.Fatal(err)
	}
	if turns != 1 || session != sid || status != "done" || doneAt != micros(m.clock.now()) {
		m.t.Fatalf("message %d: %d turns, in session %s, status %q, done at %d; want one in %s, done at %d", res.Message.ID, turns, session, status, doneAt, sid, micros(m.clock.now()))
	}
	return true
}

// answer loads a pending turn with a random history limit (cache and SQL
// must agree), then completes it with 0–2 replies in its chat, sometimes
// a resume ID and sometimes notes in its own or another session.
func (m *recentSim) answer() {
	m.t.Helper()
	if len(m.pending) == 0 {
		return
	}
	i := m.rng.IntN(len(m.pending))
	ref := m.pending[i]
	m.pending = slices.Delete(m.pending, i, i+1)
	delete(m.queued, ref.ID)
	limit := simLimits[m.rng.IntN(len(simLimits))]
	d, path := checkLoadTurn(m.t, m.s, ref.ID, limit)
	m.paths[path]++
	if d.Ref != ref {
		m.t.Fatalf("LoadTurn(%d).Ref = %+v; queued as %+v", ref.ID, d.Ref, ref)
	}
	m.complete(d)
}

// complete completes a loaded turn with 0–2 replies and, at random, a
// resume ID, notes and a second (idempotent) completion.
func (m *recentSim) complete(d gateway.TurnData) { m.completeWith(d, m.rng.IntN(3), true) }

// completeWith completes a loaded turn with posts replies in its chat;
// extras adds the random resume ID, notes and repeated completion.
func (m *recentSim) completeWith(d gateway.TurnData, posts int, extras bool) {
	m.t.Helper()
	bot := d.Session.Key.Bot
	c := gateway.Completion{Turn: d.Ref, Session: d.Session.ID}
	m.touched[d.Session.ID] = true
	for range posts {
		c.Posts = append(c.Posts, gateway.Post{Session: d.Session.ID, Message: gateway.Message{
			Platform: d.Message.Platform, ChatID: d.Message.ChatID, ChatType: d.Message.ChatType, Kind: gateway.KindChat,
			From: gateway.Party{Kind: "bot", ID: bot, Name: strings.ToUpper(bot)}, UserID: d.Message.UserID, Bot: bot,
			Text: fmt.Sprintf("%s answers %d", bot, d.Message.ID), ReplyTo: d.Message.PlatformMsgID, Time: m.eventTime(),
		}})
	}
	if extras && m.rng.IntN(4) == 0 {
		c.ResumeID = fmt.Sprintf("resume-%d", d.Ref.ID)
	}
	if extras && m.rng.IntN(4) == 0 {
		for range 1 + m.rng.IntN(2) {
			target := d.Session.ID
			if m.rng.IntN(2) == 0 {
				target = m.sessions[m.rng.IntN(len(m.sessions))]
			}
			from := gateway.Party{Kind: "system", ID: bot, Name: "delegation"}
			if m.rng.IntN(2) == 0 {
				from = gateway.Party{Kind: "bot", ID: bot, Name: strings.ToUpper(bot)}
			}
			m.touched[target] = true
			c.Notes = append(c.Notes, gateway.Note{Session: target, Message: gateway.Message{
				Kind: gateway.KindSystem, From: from, UserID: d.Message.UserID, Bot: bot,
				Text: fmt.Sprintf("note on %d", d.Ref.ID), Time: m.eventTime(),
			}})
		}
		m.stats["notes"]++
	}
	out, err := m.s.CompleteTurn(m.ctx, c)
	if err != nil {
		m.t.Fatalf("complete turn %d: %v", d.Ref.ID, err)
	}
	if len(out.Outbox) != len(c.Posts) {
		m.t.Fatalf("complete turn %d queued %d messages; want %d", d.Ref.ID, len(out.Outbox), len(c.Posts))
	}
	if extras && m.rng.IntN(20) == 0 {
		// A turn re-run after a crash: nothing more is stored.
		again, err := m.s.CompleteTurn(m.ctx, c)
		if err != nil || len(again.Outbox) != 0 {
			m.t.Fatalf("second completion of turn %d = %+v, %v; want nothing", d.Ref.ID, again, err)
		}
	}
	m.stats["completed"]++
}

// queue notes turns just stored pending.
func (m *recentSim) queue(refs ...gateway.TurnRef) {
	m.pending = append(m.pending, refs...)
	for _, r := range refs {
		m.queued[r.ID] = r.SessionID
	}
}

// closeTurns completes the pending turns, saying nothing.
func (m *recentSim) closeTurns() {
	m.t.Helper()
	for _, ref := range m.pending {
		if _, err := m.s.CompleteTurn(m.ctx, gateway.Completion{Turn: ref, Session: ref.SessionID}); err != nil {
			m.t.Fatalf("close turn %d: %v", ref.ID, err)
		}
		delete(m.queued, ref.ID)
	}
	m.pending = nil
}

// hasQueued says whether the store knows of a pending turn of session.
func (m *recentSim) hasQueued(session string) bool {
	for _, s := range m.queued {
		if s == session {
			return true
		}
	}
	return false
}

// reopen closes the store and opens the file again: the cache starts
// empty, turns queued before are loaded from SQL, windows come back
// lazily.
func (m *recentSim) reopen() {
	m.t.Helper()
	if err := m.s.Close(); err != nil {
		m.t.Fatal(err)
	}
	m.s = openRecentStore(m.t, m.path)
	clear(m.queued) // the new store knows of no turn it stored
	if n, _ := snapshotWindows(m.s); len(n) != 0 || len(m.s.recent.turns) != 0 {
		m.t.Fatalf("a reopened store has %d windows and %d turns cached", len(n), len(m.s.recent.turns))
	}
	m.stats["reopen"]++
}

// checkTurns compares the cached pending turns with the simulation's: a
// turn is cached from its AppendInbound (on this store) until completed.
func (m *recentSim) checkTurns() {
	m.t.Helper()
	pending := make(map[int64]bool, len(m.pending))
	for _, r := range m.pending {
		pending[r.ID] = true
	}
	m.s.recent.mu.Lock()
	defer m.s.recent.mu.Unlock()
	for id := range m.s.recent.turns {
		if !pending[id] {
			m.t.Fatalf("turn %d is cached but not pending", id)
		}
	}
}

// recentSeeds is how many seeds TestRecentMatchesSQL runs (1, 2, …): one
// by default, to stay fast; more with -recent.seeds=N.
var recentSeeds = flag.Int("recent.seeds", 1, "number of random seeds for TestRecentMatchesSQL")

// TestRecentMatchesSQL drives a store with ~300 random steps over 5 users
// and 2 bots — private messages (web, some Telegram), group messages in
// two web rooms for one or both bots, redeliveries, turns loaded with a
// random history limit and completed with 0–2 replies, resume IDs and
// notes, private messages answered on the instant path (PeekSession, then
// AppendAnswered; some of them redeliveries, some made stale by a message
// or an idle sweep in between), and idle sweeps of windows — and after
// each step checks the cache against SQL: the loaded turn (LoadTurn vs
// loadTurn), LastPrivateChat of every session, the windows of the
// sessions written (all windows every 20 steps), and PeekSession of every
// session key. Halfway the store is reopened on its file, so old turns
// take the SQL path and windows are loaded again lazily.
func TestRecentMatchesSQL(t *testing.T) {
	for seed := range uint64(*recentSeeds) {
		seed++
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			const steps = 300
			m := newRecentSim(t, seed, 0x5b)
			clock := m.clock
			cachedPrivate, trimmed := 0, 0
			for step := range steps {
				if step == steps/2 {
					// Leave turns queued across the reopen: they take
					// the SQL path.
					m.appendInbound(m.privateInbound(m.user(), simBots[0]))
					m.appendInbound(m.groupInbound(m.user()))
					m.reopen()
				}
				switch r := m.rng.IntN(100); {
				case r < 25:
					m.appendInbound(m.privateInbound(m.user(), simBots[m.rng.IntN(len(simBots))]))
				case r < 35:
					m.appendInbound(m.groupInbound(m.user()))
				case r < 38:
					m.redeliver()
				case r < 53:
					m.instant()
				case r < 55:
					m.idle()
				default:
					m.answer()
				}
				// Sometimes under touchEvery (updated_at is not
				// written), sometimes more.
				clock.advance(time.Duration(m.rng.Int64N(int64(touchEvery) * 3 / 2)).Truncate(time.Microsecond))
				// LastPrivateChat of every session after every step; the
				// windows of the sessions just written (all every 20
				// steps: the full check reads every session's rows).
				cachedPrivate += checkLastPrivate(t, m.s, m.sessions)
				if step%20 == 19 {
					m.touched = nil
				}
				trimmed += checkWindows(t, m.s, m.touched)
				m.checkPeeks(m.touched)
				m.touched = map[string]bool{}
				m.checkTurns()
			}
			// Finish the queue: every turn left is checked once more.
			for len(m.pending) > 0 {
				m.answer()
				checkLastPrivate(t, m.s, m.sessions)
				checkWindows(t, m.s, nil)
				m.checkPeeks(nil)
			}
			t.Logf("paths %v, stats %v, sessions %d, private chats from cache %d, trimmed windows seen %d",
				m.paths, m.stats, len(m.sessions), cachedPrivate, trimmed)
			// The comparison is only worth something if every path ran.
			for _, p := range []loadPath{pathHit, pathReload, pathSQL} {
				if m.paths[p] == 0 {
					t.Errorf("no turn was loaded by %q", p)
				}
			}
			if cachedPrivate == 0 || trimmed == 0 {
				t.Errorf("private chats from cache %d, trimmed windows %d: want both > 0", cachedPrivate, trimmed)
			}
			// (Redeliveries and stale answers on the instant path, and
			// windows too short for a peek, are rarer: not every seed
			// has them, TestRecentPeekSession does.)
			for _, k := range []string{"instant: answered", "instant: not taken", "peek: hit", "peek: no window"} {
				if m.stats[k] == 0 {
					t.Errorf("no %q: want some", k)
				}
			}
		})
	}
}

// TestRecentWindowOverflow fills one session past its window (40 + 8
// messages once a 40-message history was asked for) while its turns stay
// queued: turns whose history the window still holds are served from it,
// older ones fall back to SQL, and both agree with SQL.
func TestRecentWindowOverflow(t *testing.T) {
	m := newRecentSim(t, 7, 7)
	clock := m.clock
	s := m.s
	// Install the session's window at the largest size.
	// (Posts and messages are made here one by one, so which messages the
	// window holds is known: see the table below.)
	first := m.appendInbound(m.privateInbound("u0", "matty"))
	d, p := checkLoadTurn(t, s, first.Turns[0].ID, 40)
	if p != pathReload {
		t.Fatalf("first load: %s; want the window loaded", p)
	}
	if got := s.recent.want(0); got != 40+windowSlack {
		t.Fatalf("window size %d; want %d", got, 40+windowSlack)
	}
	m.completeWith(d, 1, false)
	sid := first.Turns[0].SessionID
	// 70 more messages H0..H69; the even ones are answered with one reply
	// each, the odd ones stay queued. The session then ends with
	// ... H38 P38 H39 H40 P40 H41 ... H68 P68 H69: the window's 48
	// messages are H38..H69 and 16 replies.
	var queued []gateway.TurnRef
	for i := range 70 {
		clock.advance(300 * time.Millisecond)
		res := m.appendInbound(m.privateInbound("u0", "matty"))
		if i%2 == 0 {
			d, _ := checkLoadTurn(t, s, res.Turns[0].ID, 3)
			m.completeWith(d, 1, false)
		} else {
			queued = append(queued, res.Turns[0])
		}
	}
	windows, _ := snapshotWindows(s)
	if w := windows[sid]; len(w.msgs) != 40+windowSlack || w.complete {
		t.Fatalf("window holds %d messages (complete %v); want %d, trimmed", len(w.msgs), w.complete, 40+windowSlack)
	}
	checkWindows(t, s, nil)
	checkLastPrivate(t, s, []string{sid})

	// A queued turn's history is the messages before it and the replies
	// after it. The window serves it when it holds limit of those.
	tests := []struct {
		name  string
		turn  gateway.TurnRef
		limit int
		want  loadPath
	}{
		{"H1, no history", queued[0], 0, pathHit},
		{"H1, 1 message: a later reply in the window", queued[0], 1, pathHit},
		{"H1, 16 messages: the window's 16 replies", queued[0], 16, pathHit},
		{"H1, 20 messages: beyond the window", queued[0], 20, pathSQL},
		{"H1, 40 messages: beyond the window", queued[0], 40, pathSQL},
		{"H69, 40 messages", queued[34], 40, pathHit},
		{"H69, 20 messages", queued[34], 20, pathHit},
		{"H35, 40 messages: beyond the window", queued[17], 40, pathSQL},
		{"H35, 3 messages", queued[17], 3, pathHit},
		{"H39, 40 messages: 2 before, 15 replies after", queued[19], 40, pathSQL},
		{"H39, 16 messages", queued[19], 16, pathHit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, p := checkLoadTurn(t, s, tc.turn.ID, tc.limit); p != tc.want {
				t.Errorf("turn %d with limit %d: %s; want %s", tc.turn.ID, tc.limit, p, tc.want)
			}
		})
	}
	// Answer them all, newest first, checking each with every limit.
	for i := len(queued) - 1; i >= 0; i-- {
		for _, limit := range simLimits {
			d, _ = checkLoadTurn(t, s, queued[i].ID, limit)
		}
		m.complete(d)
		checkWindows(t, s, nil)
	}
	checkLastPrivate(t, s, []string{sid})
}

// TestRecentAfterReopen reopens a store on its file: turns queued before
// are loaded from SQL (the cache starts empty), LastPrivateChat reads SQL
// until the session's window is loaded, and a new turn loads that window
// lazily; every answer matches SQL.
func TestRecentAfterReopen(t *testing.T) {
	m := newRecentSim(t, 9, 9)
	clock := m.clock
	// Two sessions with some answered history and a queued turn each.
	var queued []gateway.TurnRef
	for _, user := range []string{"u1", "u2"} {
		for i := range 5 {
			clock.advance(700 * time.Millisecond)
			res := m.appendInbound(m.privateInbound(user, "finn"))
			if i < 4 {
				d, _ := checkLoadTurn(t, m.s, res.Turns[0].ID, 20)
				m.complete(d)
			} else {
				queued = append(queued, res.Turns[0])
			}
		}
	}
	// And a group message for both bots, queued.
	res := m.appendInbound(m.groupInbound("u1"))
	queued = append(queued, res.Turns...)
	m.reopen()
	s := m.s
	ctx := context.Background()

	// Nothing is cached: LastPrivateChat answers from SQL.
	if n := checkLastPrivate(t, s, m.sessions); n != 0 {
		t.Fatalf("%d sessions answered from an empty cache", n)
	}
	// Turns queued before the reopen come from SQL and load no window.
	for _, ref := range queued {
		for _, limit := range simLimits {
			if _, p := checkLoadTurn(t, s, ref.ID, limit); p != pathSQL {
				t.Fatalf("turn %d queued before reopening: %s; want %s", ref.ID, p, pathSQL)
			}
		}
	}
	if w, _ := snapshotWindows(s); len(w) != 0 {
		t.Fatalf("loading old turns installed %d windows", len(w))
	}
	for _, ref := range queued {
		d, err := s.LoadTurn(ctx, ref.ID, 3)
		if err != nil {
			t.Fatal(err)
		}
		m.complete(d)
	}
	// A new message in u1's session: its turn is cached, its window is
	// loaded on the first LoadTurn and then kept up to date.
	clock.advance(2 * time.Second)
	res = m.appendInbound(m.privateInbound("u1", "finn"))
	sid := res.Turns[0].SessionID
	if _, _, cached := s.recent.lastPrivate(sid); cached {
		t.Fatal("the window is loaded before any LoadTurn")
	}
	if _, p := checkLoadTurn(t, s, res.Turns[0].ID, 20); p != pathReload {
		t.Fatalf("new turn after reopening: %s; want %s", p, pathReload)
	}
	if _, _, cached := s.recent.lastPrivate(sid); !cached {
		t.Fatal("LoadTurn did not install the session's window")
	}
	d, p := checkLoadTurn(t, s, res.Turns[0].ID, 20)
	if p != pathHit {
		t.Fatalf("second load: %s; want %s", p, pathHit)
	}
	m.complete(d)
	// A turn with a resume ID writes the session row: the window follows.
	res = m.appendInbound(m.privateInbound("u1", "finn"))
	d, _ = checkLoadTurn(t, s, res.Turns[0].ID, 40)
	if _, err := s.CompleteTurn(ctx, gateway.Completion{Turn: d.Ref, Session: d.Session.ID, ResumeID: "resume-after-reopen"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := snapshotWindows(s); got[sid].session.ResumeID != "resume-after-reopen" {
		t.Fatalf("window resume ID %q", got[sid].session.ResumeID)
	}
	if n := checkLastPrivate(t, s, m.sessions); n != 1 {
		t.Fatalf("%d sessions answered from the cache; want 1", n)
	}
	checkWindows(t, s, nil)
}

// TestRecentPeekSession walks one session through the cases of
// PeekSession: no session, no window, a window that holds the history
// asked for (or all of the session), one that holds less after a larger
// history was asked for, a reload, a reopen, an idle sweep, and instant
// exchanges (AppendAnswered): one of them a redelivery, two of them
// stale. Every hit is compared with SQL.
func TestRecentPeekSession(t *testing.T) {
	m := newRecentSim(t, 13, 13)
	clock := m.clock
	key := gateway.SessionKey{Bot: "matty", Scope: gateway.ScopeUser, ScopeID: "user-u0"}
	peek := func(limit int, want bool, n int) {
		t.Helper()
		d, latest, ok := m.s.PeekSession(key, limit)
		if ok != want {
			t.Fatalf("PeekSession(limit %d) = %+v, %d, %v; want ok %v", limit, d, latest, ok, want)
		}
		if !ok {
			return
		}
		if diff := peekDiff(t, m.s, key, m.keys[key], limit, d, latest); diff != "" {
			t.Fatalf("PeekSession(limit %d) differs from SQL:%s", limit, diff)
		}
		if len(d.History) != n {
			t.Fatalf("PeekSession(limit %d) gave %d messages; want %d", limit, len(d.History), n)
		}
	}
	send := func() gateway.InboundResult {
		t.Helper()
		clock.advance(300 * time.Millisecond)
		return m.appendInbound(m.privateInbound("u0", "matty"))
	}
	peek(0, false, 0) // no session

	first := send()
	peek(0, false, 0) // no window: it is loaded by the turn's LoadTurn
	checkLoadTurn(t, m.s, first.Turns[0].ID, 0)
	peek(0, false, 0) // the turn is pending: it comes first
	m.closeTurns()
	// The window holds the whole session: any limit. (Asking for 3 grows
	// the windows to 3 + windowSlack messages.)
	peek(0, true, 0)
	peek(3, true, 1)
	// 11 more: the window keeps the last 11.
	for range 11 {
		send()
	}
	if w, _ := snapshotWindows(m.s); len(w[m.keys[key]].msgs) != 3+windowSlack || w[m.keys[key]].complete {
		t.Fatalf("window holds %d messages (complete %v); want %d, trimmed", len(w[m.keys[key]].msgs), w[m.keys[key]].complete, 3+windowSlack)
	}
	peek(3, false, 0) // turns pending
	m.closeTurns()
	peek(3, true, 3)
	peek(11, true, 11) // (the windows grow to 19: this one holds 11)
	peek(12, false, 0)
	peek(11, true, 11)
	// A turn with a 12-message history reloads the window, which then
	// holds the whole session.
	res := send()
	checkLoadTurn(t, m.s, res.Turns[0].ID, 12)
	m.closeTurns()
	peek(12, true, 12)
	peek(40, true, 13) // holds all of them
	// The instant path: the exchange joins the window.
	if !m.answerInstant(m.privateInbound("u0", "matty"), nil, 40, "") {
		t.Fatal("the instant path missed a cached window")
	}
	peek(40, true, 15)
	peek(2, true, 2)
	// A redelivery of the exchange's message stores nothing more, on
	// either path.
	again := m.sent[len(m.sent)-1]
	if !m.answerInstant(again.in, &again, 3, "") {
		t.Fatal("the instant path missed a cached window")
	}
	m.redeliverOf(again)
	peek(40, true, 15)
	checkWindows(t, m.s, nil)
	// Answers made on a session that has changed since are refused
	// (ErrStale): a message came in on the stored path (its turn is
	// pending, too), the window was dropped.
	if m.answerInstant(m.privateInbound("u0", "matty"), nil, 40, simMessage) {
		t.Fatal("the instant path took a stale answer")
	}
	peek(40, false, 0)
	m.closeTurns()
	peek(40, true, 16)
	if m.answerInstant(m.privateInbound("u0", "matty"), nil, 40, simDrop) {
		t.Fatal("the instant path took an answer on a dropped window")
	}
	peek(40, false, 0)
	res = send()
	checkLoadTurn(t, m.s, res.Turns[0].ID, 40)
	m.closeTurns()
	peek(40, true, 17)

	// After a reopen the session is there, its window is not.
	m.reopen()
	peek(0, false, 0)
	peek(3, false, 0)
	if m.answerInstant(m.privateInbound("u0", "matty"), nil, 3, "") {
		t.Fatal("the instant path took a session with no window")
	}
	// A new message's turn loads it again.
	res = send()
	checkLoadTurn(t, m.s, res.Turns[0].ID, 3)
	peek(3, false, 0) // its turn is pending
	m.closeTurns()
	peek(3, true, 3)
	peek(11, true, 11) // the window holds 11: 3 + windowSlack
	peek(20, false, 0)
	if !m.answerInstant(m.privateInbound("u0", "matty"), nil, 3, "") {
		t.Fatal("the instant path missed a cached window")
	}
	peek(3, true, 3)
	checkWindows(t, m.s, nil)
	m.checkPeeks(nil)
	// Idle windows are dropped, and cannot be found by key either.
	m.s.recent.sweep(time.Now().Add(recentIdle))
	peek(0, false, 0)
	m.checkPeeks(nil)
}

// TestAppendAnsweredInOneBatch queues instant answers together with other
// writes to their session while the committer is busy, so they share a
// batch (group commit): an answer made before a message that is stored
// ahead of it in the batch is stale, though the message has not reached
// the window yet. Whatever the order, an answer is stored only right
// after the message it was made after, and of two answers made on the
// same look, exactly one is stored. The cache is checked against SQL
// after each round.
func TestAppendAnsweredInOneBatch(t *testing.T) {
	m := newRecentSim(t, 17, 17)
	s, ctx := m.s, m.ctx
	key := gateway.SessionKey{Bot: "finn", Scope: gateway.ScopeUser, ScopeID: "user-u1"}
	res := m.appendInbound(m.privateInbound("u1", "finn"))
	d, _ := checkLoadTurn(t, s, res.Turns[0].ID, 3)
	m.completeWith(d, 1, false)
	m.pending = nil
	clear(m.queued)
	sid := res.Turns[0].SessionID

	// hold keeps the committer in a write until the returned function is
	// called: what is queued meanwhile is committed in one batch.
	hold := func() func() {
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		done := make(chan error, 1)
		go func() {
			done <- s.tx(ctx, func(*txn) error {
				once.Do(func() { close(entered) })
				<-release
				return nil
			})
		}()
		<-entered
		return func() {
			close(release)
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	type result struct {
		name string
		res  gateway.InboundResult
		err  error
	}
	// answered is an instant exchange made on the look that ended with
	// latest: every other one replies to the message, so that it is
	// stored as an exchange's row (exchanges.go), the others as messages.
	answers := 0
	answered := func(name string, latest int64) func() result {
		in := m.privateInbound("u1", "finn")
		c := gateway.Completion{Session: sid, Posts: []gateway.Post{{Session: sid, Message: gateway.Message{
			Platform: in.Event.Platform, ChatID: in.Event.ChatID, ChatType: gateway.ChatPrivate, Kind: gateway.KindChat,
			From: gateway.Party{Kind: "bot", ID: "finn", Name: "FINN"}, UserID: in.UserID, Bot: "finn",
			Text: "finn answers " + in.Event.MessageID, Time: m.eventTime(),
		}}}}
		if answers++; answers%2 == 0 {
			c.Posts[0].Message.ReplyTo = in.Event.MessageID
		}
		return func() result {
			res, _, err := s.AppendAnswered(ctx, in, c, latest)
			return result{name, res, err}
		}
	}
	stored := func(name string) func() result {
		in := m.privateInbound("u1", "finn")
		return func() result {
			res, err := s.AppendInbound(ctx, in)
			return result{name, res, err}
		}
	}
	stale := 0
	for round := range 12 {
		_, latest, ok := s.PeekSession(key, 3)
		if !ok {
			t.Fatalf("round %d: the session's window is not cached", round)
		}
		var writes []func() result
		switch round % 3 {
		case 0:
			writes = append(writes, stored("a message"), answered("an answer", latest))
		case 1:
			writes = append(writes, answered("an answer", latest), stored("a message"))
		case 2:
			writes = append(writes, answered("an answer", latest), answered("another answer", latest))
		}
		release := hold()
		results := make(chan result, len(writes))
		for _, w := range writes {
			go func() { results <- w() }()
			time.Sleep(5 * time.Millisecond) // queued in this order, most likely
		}
		release()
		took := 0
		for range writes {
			r := <-results
			switch {
			case errors.Is(r.err, gateway.ErrStale) && strings.Contains(r.name, "answer"):
				stale++
				continue
			case r.err != nil:
				t.Fatalf("round %d: %s: %v", round, r.name, r.err)
			case strings.Contains(r.name, "answer"):
				took++
				tail := sessionTail(t, s, sid, 50)
				for i, msg := range tail {
					if msg.ID == r.res.Message.ID && (i == 0 || tail[i-1].ID != latest) {
						t.Fatalf("round %d: %s (message %d) was stored after %v; it was made after %d", round, r.name, msg.ID, historyIDs(tail[max(0, i-3):i]), latest)
					}
				}
			default:
				m.queue(r.res.Turns...)
			}
		}
		if round%3 == 2 && took != 1 {
			t.Fatalf("round %d: %d of two answers made on one look were stored; want 1", round, took)
		}
		m.touched[sid] = true
		checkWindows(t, s, nil)
		m.checkPeeks(nil)
		// Answer the queued turns, so the next round's look is of an idle
		// session as on the instant path.
		for len(m.pending) > 0 {
			m.answer()
		}
	}
	t.Logf("%d stale answers", stale)
	if stale < 4 {
		t.Errorf("%d stale answers; want at least the 4 of the rounds with two answers", stale)
	}
}

// TestCompleteTurnTouchesSession checks the write of a session's
// updated_at at most every touchEvery, which CompleteTurn decides from the
// window: the row moves to the completion's time when it is touchEvery or
// more older, or when a resume ID is written, and stays otherwise; the
// window's copy follows it. Without a window (after a reopen) the row's age is not
// known, so it is written.
func TestCompleteTurnTouchesSession(t *testing.T) {
	m := newRecentSim(t, 11, 11)
	clock := m.clock
	ctx := context.Background()
	first := m.appendInbound(m.privateInbound("u3", "matty"))
	sid := first.Turns[0].SessionID
	// The session row was written with the message's time.
	want := fromMicros(micros(first.Message.Time))
	m.pending = nil
	clear(m.queued)
	next := first.Turns[0]
	steps := []struct {
		name    string
		advance time.Duration
		resume  string
		reopen  bool // reopen the store before completing
		touch   bool
	}{
		{"a fifth of touchEvery after the row", touchEvery / 5, "", false, false},
		{"nine tenths after the row", touchEvery * 7 / 10, "", false, false},
		{"touchEvery after the row", touchEvery / 10, "", false, true},
		{"1µs short of touchEvery", touchEvery - time.Microsecond, "", false, false},
		{"exactly touchEvery", time.Microsecond, "", false, true},
		{"a resume ID is always written", 10 * time.Millisecond, "r1", false, true},
		{"10ms after the resume ID", 10 * time.Millisecond, "", false, false},
		{"no window after a reopen", 10 * time.Millisecond, "", true, true},
		{"the window is back", 10 * time.Millisecond, "", false, false},
	}
	for _, st := range steps {
		if st.reopen {
			m.reopen()
		}
		s := m.s
		clock.advance(st.advance)
		d, _ := checkLoadTurn(t, s, next.ID, 3)
		if _, err := s.CompleteTurn(ctx, gateway.Completion{Turn: d.Ref, Session: sid, ResumeID: st.resume}); err != nil {
			t.Fatal(err)
		}
		if st.touch {
			want = fromMicros(micros(clock.now()))
		}
		row, err := s.GetSession(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		if !row.UpdatedAt.Equal(want) {
			t.Errorf("%s: updated_at %s; want %s (touched %v)", st.name, row.UpdatedAt.Format(time.StampMicro), want.Format(time.StampMicro), st.touch)
		}
		checkWindows(t, s, nil)
		// The next turn: its message's session is known, so the row is
		// not written by AppendInbound.
		res := m.appendInbound(m.privateInbound("u3", "matty"))
		m.pending = nil
		clear(m.queued)
		next = res.Turns[0]
		if st.reopen {
			// The first message after a reopen writes the row (the
			// session is not known yet): with the message's time.
			want = fromMicros(micros(res.Message.Time))
		}
	}
}

// TestRecentSweepDropsIdleWindows checks that windows unused for
// recentIdle are dropped (least recently used first) and the others kept.
func TestRecentSweepDropsIdleWindows(t *testing.T) {
	var r recent
	r.want(20)
	for _, id := range []string{"old", "mid", "new"} {
		r.install(&window{id: id})
	}
	now := time.Now()
	r.sessions["old"].used = now.Add(-2 * recentIdle)
	r.sessions["mid"].used = now.Add(-recentIdle / 2)
	r.appendMessage("new", &gateway.Message{ID: 1, From: gateway.Party{Kind: "human"}})
	r.sweep(now)
	if _, ok := r.sessions["old"]; ok {
		t.Error("a window idle for twice recentIdle was kept")
	}
	if _, ok := r.sessions["new"]; !ok || len(r.sessions) != 2 || r.lru.Len() != 2 {
		t.Errorf("kept %d windows (list %d); want mid and new", len(r.sessions), r.lru.Len())
	}
}

// TestNewSessionStartsWithAWindow: the write that creates a session knows
// its whole history, so the session's first turn is answered from the
// cache without reading SQLite (and its window matches SQL).
func TestNewSessionStartsWithAWindow(t *testing.T) {
	m := newRecentSim(t, 19, 19)
	m.s.recent.want(20) // as the gateway's first turn leaves it
	res := m.appendInbound(m.privateInbound("u5", "matty"))
	sid := res.Turns[0].SessionID
	windows, _ := snapshotWindows(m.s)
	w, ok := windows[sid]
	if !ok || !w.complete || len(w.msgs) != 1 || w.msgs[0].ID != res.Message.ID {
		t.Fatalf("new session's window = %+v, %v; want complete, holding its message", w, ok)
	}
	if _, path := checkLoadTurn(t, m.s, res.Turns[0].ID, 20); path != pathHit {
		t.Errorf("the first turn of a new session was loaded by %s; want %s", path, pathHit)
	}
	checkWindows(t, m.s, nil)
	// A session that existed before this store opened is read as before.
	m.reopen()
	res = m.appendInbound(m.privateInbound("u5", "matty"))
	if _, path := checkLoadTurn(t, m.s, res.Turns[0].ID, 20); path != pathReload {
		t.Errorf("the first turn after a reopen was loaded by %s; want %s", path, pathReload)
	}
	checkWindows(t, m.s, nil)
}
