package store

// These tests check that the in-memory cache of recent turns and session
// windows (recent.go) answers exactly as SQLite does: LoadTurn against
// loadTurn (the SQL path), LastPrivateChat against lastPrivateChatQuery,
// and every installed window against the session's rows.

import (
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
	rows, err := s.query(context.Background(), `SELECT `+historyColumns+`
		FROM messages m WHERE `+inSession+` ORDER BY m.id`, session)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []gateway.Message
	for rows.Next() {
		m, err := scanHistory(rows)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
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

	pending  []gateway.TurnRef // queued, not completed
	sessions []string          // every session seen, in order
	known    map[string]bool
	sent     []sentInbound   // stored inbounds, for redeliveries
	touched  map[string]bool // sessions written since the last check
	paths    map[loadPath]int
	stats    map[string]int
}

// newRecentSim starts a simulation on a new store, with a fake clock and
// a random source seeded with a and b.
func newRecentSim(t *testing.T, a, b uint64) *recentSim {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sb.db")
	return &recentSim{
		t: t, ctx: context.Background(), path: path, s: openRecentStore(t, path),
		rng: rand.New(rand.NewPCG(a, b)), clock: useRecentClock(t), known: map[string]bool{}, touched: map[string]bool{},
		paths: map[loadPath]int{}, stats: map[string]int{},
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
	}
	m.pending = append(m.pending, res.Turns...)
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
	first := m.sent[m.rng.IntN(len(m.sent))]
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

// reopen closes the store and opens the file again: the cache starts
// empty, turns queued before are loaded from SQL, windows come back
// lazily.
func (m *recentSim) reopen() {
	m.t.Helper()
	if err := m.s.Close(); err != nil {
		m.t.Fatal(err)
	}
	m.s = openRecentStore(m.t, m.path)
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
// two web rooms for one or both bots, redeliveries, and turns loaded with
// a random history limit and completed with 0–2 replies, resume IDs and
// notes — and after each step checks the cache against SQL: the loaded
// turn (LoadTurn vs loadTurn), LastPrivateChat of every session, and the
// windows of the sessions written (all windows every 20 steps). Halfway
// the store is reopened on its file, so old turns take the SQL path and
// windows are loaded again lazily.
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
				case r < 33:
					m.appendInbound(m.privateInbound(m.user(), simBots[m.rng.IntN(len(simBots))]))
				case r < 43:
					m.appendInbound(m.groupInbound(m.user()))
				case r < 46:
					m.redeliver()
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
				m.touched = map[string]bool{}
				m.checkTurns()
			}
			// Finish the queue: every turn left is checked once more.
			for len(m.pending) > 0 {
				m.answer()
				checkLastPrivate(t, m.s, m.sessions)
				checkWindows(t, m.s, nil)
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
	r.appendMessage("new", gateway.Message{ID: 1, From: gateway.Party{Kind: "human"}})
	r.sweep(now)
	if _, ok := r.sessions["old"]; ok {
		t.Error("a window idle for twice recentIdle was kept")
	}
	if _, ok := r.sessions["new"]; !ok || len(r.sessions) != 2 || r.lru.Len() != 2 {
		t.Errorf("kept %d windows (list %d); want mid and new", len(r.sessions), r.lru.Len())
	}
}
