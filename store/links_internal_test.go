package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

// onCommitter runs fn on the committer, which owns the link log.
func onCommitter(t *testing.T, s *SQLite, fn func()) {
	t.Helper()
	if err := s.tx(context.Background(), func(*txn) error { fn(); return nil }); err != nil {
		t.Fatal(err)
	}
}

// linkTraffic stores rounds from to from+n-1 of: a private message to matty from one of
// three people, a message in a room that both bots answer, and the
// replies; it returns the inbound messages.
func linkTraffic(t *testing.T, s *SQLite, from, n int) []gateway.Inbound {
	t.Helper()
	ctx := context.Background()
	var sent []gateway.Inbound
	for i := from; i < from+n; i++ {
		user := []string{"ann", "bob", "cy"}[i%3]
		private := gateway.Inbound{
			Event: gateway.Event{
				Platform: gateway.PlatformWeb, Bot: "matty", ChatID: "web-" + user + ":matty", ChatType: gateway.ChatPrivate,
				MessageID: fmt.Sprint("p", i), Sender: gateway.Sender{PlatformID: "web-" + user, Name: user}, Text: "hi",
				Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(i) * time.Second),
			},
			UserID: "user-" + user, UserName: user,
			Turns: []gateway.TurnRequest{{Session: gateway.SessionKey{Bot: "matty", Scope: gateway.ScopeUser, ScopeID: "user-" + user}, Text: "hi"}},
		}
		for _, in := range []gateway.Inbound{private, webRoomInbound("lobby", fmt.Sprint("r", i), user, "matty", "finn")} {
			res, err := s.AppendInbound(ctx, in)
			if err != nil || res.Duplicate {
				t.Fatalf("append %s: %+v, %v", in.Event.MessageID, res, err)
			}
			sent = append(sent, in)
			for _, turn := range res.Turns {
				_, err := s.CompleteTurn(ctx, gateway.Completion{Turn: turn, Session: turn.SessionID, Posts: []gateway.Post{{
					Session: turn.SessionID, Message: gateway.Message{
						Platform: gateway.PlatformWeb, ChatID: in.Event.ChatID, ChatType: in.Event.ChatType, Kind: gateway.KindChat,
						From: gateway.Party{Kind: "bot", ID: "bot", Name: "bot"}, Bot: "bot", Text: "reply", Time: in.Event.Time,
					}}}})
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return sent
}

// mattySession is the ID of matty's session with a user.
func mattySession(t *testing.T, s *SQLite, userID string) string {
	t.Helper()
	var sid string
	if err := s.queryRow(context.Background(), `SELECT id FROM sessions WHERE bot = 'matty' AND scope_id = ?`, userID).Scan(&sid); err != nil {
		t.Fatal(err)
	}
	return sid
}

// windowIDs is the IDs of the messages in the session's window.
func windowIDs(s *SQLite, session string) []int64 {
	s.recent.mu.Lock()
	defer s.recent.mu.Unlock()
	var ids []int64
	for _, m := range s.recent.sessions[session].msgs {
		ids = append(ids, m.ID)
	}
	return ids
}

// checkIndexes compares session_messages and inbound_keys, after the log
// is flushed, with what the messages carry: every link and key, no more.
func checkIndexes(t *testing.T, s *SQLite) {
	t.Helper()
	ctx := context.Background()
	if err := s.linked(ctx); err != nil {
		t.Fatal(err)
	}
	onCommitter(t, s, func() {
		if n := s.links.waiting(); n != 0 || len(s.links.keys) != 0 || len(s.links.links) != 0 {
			t.Errorf("after a flush the log holds %d entries, %d keys, links of %d sessions", n, len(s.links.keys), len(s.links.links))
		}
	})
	for _, q := range []struct{ what, written, carried string }{
		{"links", `SELECT session_id || ' ' || message_id FROM session_messages`,
			`WITH RECURSIVE split (id, rest, sid) AS (
				SELECT id, sessions || ' ', '' FROM messages WHERE sessions != ''
				UNION ALL SELECT id, substr(rest, instr(rest, ' ') + 1), substr(rest, 1, instr(rest, ' ') - 1) FROM split WHERE rest != '')
			SELECT sid || ' ' || id FROM split WHERE sid != ''`},
		{"keys", `SELECT platform || ' ' || bot || ' ' || chat_id || ' ' || platform_msg_id || ' ' || message_id FROM inbound_keys`,
			`SELECT c.platform || ' ' || m.bot || ' ' || c.chat_id || ' ' || m.platform_msg_id || ' ' || m.id
				FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE m.platform_msg_id != ''`},
	} {
		read := func(query string) []string {
			rows, err := s.query(ctx, query)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var v string
				if err := rows.Scan(&v); err != nil {
					t.Fatal(err)
				}
				out = append(out, v)
			}
			slices.Sort(out)
			return out
		}
		written, carried := read(q.written), read(q.carried)
		if len(carried) == 0 || !slices.Equal(written, carried) {
			t.Errorf("%s written:\n%q\nthe messages carry:\n%q", q.what, written, carried)
		}
	}
	// What the tables' references checked before migration 0009: every
	// link names a session.
	var orphans int
	if err := s.queryRow(ctx, `SELECT count(*) FROM session_messages WHERE session_id NOT IN (SELECT id FROM sessions)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Errorf("%d links name no session (%v)", orphans, err)
	}
	var upto, last int64
	if err := s.queryRow(ctx, `SELECT value, (SELECT max(id) FROM messages) FROM meta WHERE key = 'linked_upto'`).Scan(&upto, &last); err != nil || upto != last {
		t.Errorf("linked_upto = %d, %v; want the last message, %d", upto, err, last)
	}
}

// TestLinkLogRounds writes a round of the log after every batch, one
// entry per batch, and checks after every write what loadWindow relies
// on: a session's links that wait are all newer than its written ones.
// At the end the tables hold every entry and the watermark is the last
// message.
func TestLinkLogRounds(t *testing.T) {
	s := openBatchStore(t)
	onCommitter(t, s, func() { s.links.every, s.links.chunk = 0, 1 })
	sessions := map[string]bool{}
	for i := range 6 {
		linkTraffic(t, s, i, 1)
		var rounds int
		onCommitter(t, s, func() {
			if s.links.round != nil {
				rounds++
			}
			for _, e := range slices.Concat(s.links.done, s.links.round) {
				if e.session != "" {
					sessions[e.session] = true
				}
			}
		})
		for sid := range sessions {
			var pending []int64
			var newest int64
			if err := s.tx(context.Background(), func(tx *txn) error {
				pending = s.links.pending(sid)
				return tx.QueryRowContext(context.Background(), `SELECT COALESCE(max(message_id), 0) FROM session_messages WHERE session_id = ?`, sid).Scan(&newest)
			}); err != nil {
				t.Fatal(err)
			}
			if len(pending) > 0 && pending[0] <= newest {
				t.Fatalf("step %d: session %s waits for %v, older than its written link to %d", i, sid, pending, newest)
			}
			if !slices.IsSorted(pending) {
				t.Fatalf("step %d: session %s waits for %v, out of order", i, sid, pending)
			}
		}
		if i > 0 && rounds == 0 {
			t.Errorf("step %d: no round of flushing under way", i)
		}
	}
	checkIndexes(t, s)
}

// openWithoutRounds opens a store on a new file whose log starts no round
// of flushing (for an hour): entries wait until the store closes.
func openWithoutRounds(t *testing.T) (*SQLite, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sb.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	onCommitter(t, s, func() { s.links.every = time.Hour })
	return s, path
}

// crashAndReopen opens, as a new store, a copy of the database files as
// kill -9 would leave them now: the log's waiting entries and the outbox
// entries without rows (deferred.go) are lost with the process, and so is
// whatever the store would write when it closes. waited is how many log
// entries were lost. The store s is closed.
func crashAndReopen(t *testing.T, s *SQLite, path string) (reopened *SQLite, waited int) {
	t.Helper()
	copied := filepath.Join(t.TempDir(), filepath.Base(path))
	// On the committer, inside a transaction that writes nothing: the
	// files hold every commit, and none is under way.
	var copyErr error
	onCommitter(t, s, func() {
		waited = s.links.waiting()
		for _, suffix := range []string{"", "-wal"} {
			body, err := os.ReadFile(path + suffix)
			if errors.Is(err, os.ErrNotExist) && suffix != "" {
				continue
			}
			if err == nil {
				err = os.WriteFile(copied+suffix, body, 0o600)
			}
			if err != nil {
				copyErr = err // failed outside the committer's goroutine
				return
			}
		}
	})
	if copyErr != nil {
		t.Fatal(copyErr)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(context.Background(), copied)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reopened.Close() })
	return reopened, waited
}

// TestLinkLogAfterCrash: entries that waited in the log when the process
// died are written when the store opens again, from what the messages
// carry; an inbound message delivered again then is still a duplicate.
func TestLinkLogAfterCrash(t *testing.T) {
	ctx := context.Background()
	s, path := openWithoutRounds(t)
	sent := linkTraffic(t, s, 0, 5)
	// A redelivery while the key waits in the log.
	if res, err := s.AppendInbound(ctx, sent[3]); err != nil || !res.Duplicate {
		t.Fatalf("redelivery before the crash: %+v, %v; want a duplicate", res, err)
	}
	s, waited := crashAndReopen(t, s, path)
	if waited < 5*(3+2) { // per round: 3 links and 2 keys at least
		t.Fatalf("%d entries waited; want them all", waited)
	}
	checkIndexes(t, s)
	for _, in := range []gateway.Inbound{sent[0], sent[len(sent)-1]} {
		if res, err := s.AppendInbound(ctx, in); err != nil || !res.Duplicate {
			t.Errorf("redelivery of %s after the crash: %+v, %v; want a duplicate", in.Event.MessageID, res, err)
		}
	}
}

// TestLinkLogGroupKeyAfterCrash: a group message's dedupe key names the
// bot that received it (a group's conversation names none); rebuilt after
// a crash, it must still, so the platform's redelivery is a duplicate.
func TestLinkLogGroupKeyAfterCrash(t *testing.T) {
	ctx := context.Background()
	s, path := openWithoutRounds(t)
	in := gateway.Inbound{
		Event: gateway.Event{
			Platform: gateway.PlatformTelegram, Bot: "matty", ChatID: "-100", ChatType: gateway.ChatGroup, ChatName: "g",
			MessageID: "42", Sender: gateway.Sender{PlatformID: "telegram-1", Name: "ann"}, Text: "hi",
			Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		},
		UserID: "user-ann", UserName: "ann",
		Turns: []gateway.TurnRequest{{Session: gateway.SessionKey{Bot: "matty", Scope: gateway.ScopeGroup, ScopeID: "telegram:-100"}, Text: "hi"}},
	}
	if res, err := s.AppendInbound(ctx, in); err != nil || res.Duplicate {
		t.Fatal(res, err)
	}
	s, _ = crashAndReopen(t, s, path)
	var bot string
	if err := s.queryRow(ctx, `SELECT bot FROM inbound_keys`).Scan(&bot); err != nil {
		t.Fatal(err)
	}
	if bot != "matty" {
		t.Errorf("the rebuilt key names bot %q; want matty", bot)
	}
	if res, err := s.AppendInbound(ctx, in); err != nil || !res.Duplicate {
		t.Fatalf("redelivery after crash: duplicate=%v err=%v; want a duplicate", res.Duplicate, err)
	}
}

// TestLinkLogWindowOrder: a note linked to a session and the load of the
// session's window share a batch while an older link of the session
// waits in the log; the window holds them oldest first.
func TestLinkLogWindowOrder(t *testing.T) {
	ctx := context.Background()
	s := openBatchStore(t)
	onCommitter(t, s, func() { s.links.every = time.Hour })
	in := linkTraffic(t, s, 0, 1)[0] // private message to matty from ann (+ reply)
	sid := mattySession(t, s, in.UserID)
	// Hold the committer, then queue a note in S and a window load of S.
	gate, running := make(chan struct{}), make(chan struct{})
	blockErr := make(chan error, 1)
	go func() {
		blockErr <- s.tx(ctx, func(*txn) error { close(running); <-gate; return nil })
	}()
	<-running
	noteErr, loadErr := make(chan error, 1), make(chan error, 1)
	go func() {
		noteErr <- s.tx(ctx, func(tx *txn) error {
			return note(ctx, tx, gateway.Note{Session: sid, Message: gateway.Message{
				Kind: gateway.KindSystem, From: gateway.Party{Kind: "system", ID: "x", Name: "x"}, Text: "note", Time: time.Now()}})
		})
	}()
	waitQueued(t, 1)
	go func() { loadErr <- s.loadWindow(ctx, sid) }()
	waitQueued(t, 2)
	close(gate)
	for _, c := range []chan error{blockErr, noteErr, loadErr} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if ids := windowIDs(s, sid); !slices.IsSorted(ids) {
		t.Fatalf("window of %s holds messages %v: out of order", sid, ids)
	}
}

// TestLinkLogSessionReadThenWindow: a read of a session's history on the
// reader pool writes its waiting links (which stay in the log); a window
// loaded afterwards holds each message once, as the messages say.
func TestLinkLogSessionReadThenWindow(t *testing.T) {
	ctx := context.Background()
	s := openBatchStore(t)
	onCommitter(t, s, func() { s.links.every = time.Hour })
	in := linkTraffic(t, s, 0, 6)[0]
	sid := mattySession(t, s, in.UserID)
	msgs, err := s.SessionMessages(ctx, sid, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := sessionRows(t, s, sid)
	if len(msgs) != len(want) {
		t.Fatalf("SessionMessages gave %d messages; the session has %d", len(msgs), len(want))
	}
	onCommitter(t, s, func() {
		if len(s.links.pending(sid)) == 0 {
			t.Error("the session's links no longer wait in the log")
		}
	})
	if err := s.loadWindow(ctx, sid); err != nil {
		t.Fatal(err)
	}
	got := windowIDs(s, sid)
	var ids []int64
	for _, m := range want {
		ids = append(ids, m.ID)
	}
	if len(ids) > len(got) {
		ids = ids[len(ids)-len(got):]
	}
	if !slices.Equal(got, ids) {
		t.Errorf("window holds %v; want the session's latest, %v", got, ids)
	}
}

// TestLinkLogRollback: a write that fails rolls back its batch, chunk of
// a round included, and every write runs again alone; what the failed
// write put in the log goes with it, and the others' entries are written
// once.
func TestLinkLogRollback(t *testing.T) {
	ctx := context.Background()
	s := openBatchStore(t)
	onCommitter(t, s, func() { s.links.every, s.links.chunk = 0, 1 })
	linkTraffic(t, s, 0, 2) // entries waiting, a round under way
	ghost := inboundKey{gateway.PlatformWeb, "", "lobby", "ghost"}
	release := blockCommitter(t, s)
	var a, b gateway.InboundResult
	errs := make(chan error, 3)
	go func() {
		var err error
		a, err = s.AppendInbound(ctx, webRoomInbound("lobby", "x1", "ann", "matty"))
		errs <- err
	}()
	waitQueued(t, 1)
	failed := errors.New("the write fails")
	go func() {
		errs <- s.tx(ctx, func(tx *txn) error {
			keyMessage(tx, ghost, 1)
			return failed
		})
	}()
	waitQueued(t, 2)
	go func() {
		var err error
		b, err = s.AppendInbound(ctx, webRoomInbound("lobby", "x2", "bob", "finn"))
		errs <- err
	}()
	waitQueued(t, 3)
	release()
	var failures int
	for range 3 {
		switch err := <-errs; {
		case errors.Is(err, failed):
			failures++
		case err != nil:
			t.Fatal(err)
		}
	}
	if failures != 1 || a.Duplicate || b.Duplicate || len(a.Turns) != 1 || len(b.Turns) != 1 {
		t.Fatalf("failures %d, a = %+v, b = %+v", failures, a, b)
	}
	onCommitter(t, s, func() {
		if _, ok := s.links.keys[ghost]; ok {
			t.Error("the failed write's key is still in the log")
		}
	})
	checkIndexes(t, s)
	for _, in := range []gateway.Inbound{webRoomInbound("lobby", "x1", "ann", "matty"), webRoomInbound("lobby", "x2", "bob", "finn")} {
		if res, err := s.AppendInbound(ctx, in); err != nil || !res.Duplicate {
			t.Errorf("redelivery of %s: %+v, %v; want a duplicate", in.Event.MessageID, res, err)
		}
	}
}

// TestLinkRoundSpread: a round's chunk is sized to spread the round over
// half the batches committed per second since the last round began (at
// least flushSpread of them), and never below the log's smallest chunk,
// so no batch of a busy second carries a large share of it.
func TestLinkRoundSpread(t *testing.T) {
	tests := []struct {
		name             string
		batches, entries int
		elapsed          time.Duration // since the last round began
		chunk, wantSize  int
	}{
		{"idle: flushSpread batches", 0, 1600, time.Second, 1, 100},
		{"few batches: flushSpread batches", 20, 1600, time.Second, 1, 100},
		{"busy: half the batches", 400, 1600, time.Second, 1, 8},
		{"rounded up", 400, 1601, time.Second, 1, 9},
		{"the batches per second, not since", 800, 1600, 4 * time.Second, 1, 16},
		{"many batches long ago: flushSpread batches", 400, 1600, time.Hour, 1, 100},
		{"started early (many wait): the batches so far", 400, maxUnlinked, time.Second / 2, 1, (maxUnlinked + 199) / 200},
		{"the smallest chunk", 400, 1600, time.Second, 32, 32},
		{"a small round", 400, 3, time.Second, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Now()
			l := linkLog{every: time.Second, chunk: tt.chunk, lastRound: now.Add(-tt.elapsed)}
			for range tt.batches {
				l.begin()
				l.committed()
			}
			for i := range tt.entries {
				l.done = append(l.done, logEntry{session: "s", message: int64(i + 1)})
			}
			l.startRound(now)
			if l.round == nil {
				t.Fatal("no round began")
			}
			if l.size != tt.wantSize {
				t.Errorf("chunk = %d entries; want %d", l.size, tt.wantSize)
			}
			if l.batches != 0 {
				t.Errorf("%d batches still counted after the round began; want 0", l.batches)
			}
		})
	}
}

// TestLinkRoundNextChunk: a round's chunks are its size until the round
// is older than the log's interval; then a flushSpread-th of what is
// left, so a round that batches grew rare for still ends soon.
func TestLinkRoundNextChunk(t *testing.T) {
	start := time.Now()
	l := linkLog{every: time.Second, lastRound: start, size: 10, round: make([]logEntry, 1000), written: 100}
	tests := []struct {
		name string
		at   time.Duration
		want int
	}{
		{"young round: its size", time.Second / 2, 110},
		{"old round: a sixteenth of what is left", 2 * time.Second, 100 + 900/flushSpread},
	}
	for _, tt := range tests {
		if got := l.nextChunk(start.Add(tt.at)); got != tt.want {
			t.Errorf("%s: next chunk ends at %d; want %d", tt.name, got, tt.want)
		}
	}
	l.written = 995
	if got := l.nextChunk(start.Add(2 * time.Second)); got != 1000 {
		t.Errorf("last chunk ends at %d; want the round's end, 1000", got)
	}
	l.written = 999
	if got := l.nextChunk(start.Add(2 * time.Second)); got != 1000 {
		t.Errorf("last entry's chunk ends at %d; want 1000", got)
	}
}

// TestWriteEntriesInRowsOfSeveral flushes enough entries for the
// statements of several rows, then writes them all again: every key and
// link is in its table once.
func TestWriteEntriesInRowsOfSeveral(t *testing.T) {
	ctx := context.Background()
	s, _ := openWithoutRounds(t)
	linkTraffic(t, s, 0, 3*entryRows)
	var es []logEntry
	onCommitter(t, s, func() { es = slices.Concat(s.links.done, s.links.round) })
	if err := s.linked(ctx); err != nil {
		t.Fatal(err)
	}
	count := func() (keys, links, wantKeys, wantLinks int) {
		t.Helper()
		for q, n := range map[string]*int{
			`SELECT count(*) FROM inbound_keys`:                         &keys,
			`SELECT count(*) FROM session_messages`:                     &links,
			`SELECT count(*) FROM messages WHERE platform_msg_id != ''`: &wantKeys,
			`SELECT COALESCE(sum(length(sessions) - length(replace(sessions, ' ', '')) + 1), 0)
				FROM messages WHERE sessions != ''`: &wantLinks,
		} {
			if err := s.r.QueryRowContext(ctx, q).Scan(n); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	keys, links, wantKeys, wantLinks := count()
	if keys != wantKeys || links != wantLinks || keys < entryRows || links < entryRows {
		t.Fatalf("after the flush: %d keys and %d links, want %d and %d (at least %d each)", keys, links, wantKeys, wantLinks, entryRows)
	}
	slices.SortFunc(es, compareEntries)
	if err := s.tx(ctx, func(tx *txn) error { return writeEntries(tx, slices.Concat(es, es)) }); err != nil {
		t.Fatal(err)
	}
	if k, l, _, _ := count(); k != keys || l != links {
		t.Errorf("written again: %d keys and %d links, want %d and %d", k, l, keys, links)
	}
}
