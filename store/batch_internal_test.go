package store

// These tests check the committer (sqlite.go): writes that share a batch
// are kept apart when one fails, a caller that gives up before its write
// is taken stores nothing, and two writes of messages.go that rely on it
// (the dedupe of AppendInbound, BotOfMessage on the web).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/switchboard-chat/switchboard/gateway"
)

func openBatchStore(t *testing.T) *SQLite {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// queuedWrites counts the writes waiting to be taken by a committer: the
// goroutines blocked in the select of (*SQLite).write.
func queuedWrites() int {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "[select") && strings.Contains(g, ".(*SQLite).write(") {
			count++
		}
	}
	return count
}

// waitQueued waits until n writes are queued (see queuedWrites). Writes
// queued one at a time this way reach the committer in that order: a
// channel's blocked senders are served first come, first served.
func waitQueued(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; ; i++ {
		got := queuedWrites()
		if got == n {
			return
		}
		if got > n || time.Now().After(deadline) {
			t.Fatalf("%d writes queued; want %d", got, n)
		}
		if i < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// blockCommitter makes the committer run a write that waits until release
// is called, so the writes queued meanwhile are taken together, in one
// batch. release waits for that write to finish; it is also called when
// the test ends.
func blockCommitter(t *testing.T, s *SQLite) (release func()) {
	t.Helper()
	running, gate, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var once sync.Once
	go func() {
		done <- s.tx(context.Background(), func(*txn) error {
			once.Do(func() { close(running) })
			<-gate
			return nil
		})
	}()
	<-running
	var releaseOnce sync.Once
	release = func() {
		releaseOnce.Do(func() {
			close(gate)
			if err := <-done; err != nil {
				t.Errorf("blocking write: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// metaValues reads the meta table's keys with a prefix.
func metaValues(t *testing.T, s *SQLite, prefix string) map[string][]byte {
	t.Helper()
	rows, err := s.query(context.Background(), `SELECT key, value FROM meta WHERE key LIKE ? || '%'`, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBatchFailureIsolated queues 50 writes while the committer is busy,
// so they run in one batch, some of them inserting a meta key that exists
// (a primary key violation). Only those fail; every other write is stored
// and its stored callback runs exactly once, before its tx returns — the
// optimistic run of the batch, rolled back, runs none. Writes up to the
// first failure run twice (in the batch, then alone), the others once.
func TestBatchFailureIsolated(t *testing.T) {
	const n = 50
	tests := []struct {
		name string
		fail []int // positions in the batch of the failing writes
	}{
		{"no failure", nil},
		{"first fails", []int{0}},
		{"middle fails", []int{25}},
		{"last fails", []int{n - 1}},
		{"two fail", []int{10, 40}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openBatchStore(t)
			if err := s.tx(ctx, func(tx *txn) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('dup', 'first')`)
				return err
			}); err != nil {
				t.Fatal(err)
			}

			release := blockCommitter(t, s)
			var (
				runs, stored      [n]atomic.Int32
				errs              [n]error
				storedWhenReturns [n]int32
				wg                sync.WaitGroup
			)
			for i := range n {
				key := fmt.Sprintf("k%02d", i)
				if slices.Contains(tc.fail, i) {
					key = "dup"
				}
				wg.Go(func() {
					errs[i] = s.tx(ctx, func(tx *txn) error {
						runs[i].Add(1)
						if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)`, key, []byte{byte(i)}); err != nil {
							return err
						}
						tx.onStored(func() { stored[i].Add(1) })
						return nil
					})
					storedWhenReturns[i] = stored[i].Load()
				})
				waitQueued(t, i+1) // queued in order: i is the batch's i-th write
			}
			release()
			wg.Wait()

			firstFail := -1
			if len(tc.fail) > 0 {
				firstFail = tc.fail[0]
			}
			for i := range n {
				failing := slices.Contains(tc.fail, i)
				var serr sqlite3.Error
				switch {
				case failing && !(errors.As(errs[i], &serr) && serr.Code == sqlite3.ErrConstraint):
					t.Errorf("write %d: error %v; want a constraint violation", i, errs[i])
				case !failing && errs[i] != nil:
					t.Errorf("write %d: %v", i, errs[i])
				}
				wantStored := int32(1)
				if failing {
					wantStored = 0
				}
				if got := stored[i].Load(); got != wantStored || storedWhenReturns[i] != wantStored {
					t.Errorf("write %d: stored callback ran %d times (%d when tx returned); want %d", i, got, storedWhenReturns[i], wantStored)
				}
				wantRuns := int32(1)
				if i <= firstFail {
					wantRuns = 2
				}
				if got := runs[i].Load(); got != wantRuns {
					t.Errorf("write %d ran %d times; want %d", i, got, wantRuns)
				}
			}
			vals := metaValues(t, s, "k")
			if len(vals) != n-len(tc.fail) {
				t.Errorf("%d keys stored; want %d", len(vals), n-len(tc.fail))
			}
			for i := range n {
				v, ok := vals[fmt.Sprintf("k%02d", i)]
				if ok == slices.Contains(tc.fail, i) || (ok && string(v) != string([]byte{byte(i)})) {
					t.Errorf("key k%02d: stored %v, value %v", i, ok, v)
				}
			}
			if v := metaValues(t, s, "dup")["dup"]; string(v) != "first" {
				t.Errorf("dup = %q; want the first value", v)
			}
		})
	}
}

// TestCancelledWriteNotStored cancels a write's context before the
// committer runs it: when it is still queued, tx returns ctx.Err() at once
// (while the committer is busy); when the committer has taken it but not
// run it yet, the committer skips it and tx returns ctx.Err(). Either way
// its function never runs, nothing is stored, no callback runs, and the
// writes around it are unaffected.
func TestCancelledWriteNotStored(t *testing.T) {
	tests := []struct {
		name  string
		taken bool // cancelled after the committer took the write
	}{
		{"cancelled while queued", false},
		{"cancelled once taken, before it runs", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openBatchStore(t)
			bg := context.Background()
			insert := func(key string, ran, stored *atomic.Int32, gate <-chan struct{}) func(*txn) error {
				return func(tx *txn) error {
					ran.Add(1)
					if gate != nil {
						<-gate
					}
					if _, err := tx.ExecContext(bg, `INSERT INTO meta (key, value) VALUES (?, 'v')`, key); err != nil {
						return err
					}
					tx.onStored(func() { stored.Add(1) })
					return nil
				}
			}
			release := blockCommitter(t, s)

			// before runs ahead of the cancelled write in the same batch; when
			// taken is set, it holds the committer until the cancel.
			var beforeRan, beforeStored, ran, stored atomic.Int32
			gate := make(chan struct{})
			if !tc.taken {
				close(gate)
			}
			beforeErr := make(chan error, 1)
			go func() { beforeErr <- s.tx(bg, insert("before", &beforeRan, &beforeStored, gate)) }()
			waitQueued(t, 1)

			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- s.tx(ctx, insert("cancelled", &ran, &stored, nil)) }()
			waitQueued(t, 2)

			if tc.taken {
				release() // the committer takes both, runs before, which waits
				for deadline := time.Now().Add(5 * time.Second); beforeRan.Load() == 0; {
					if time.Now().After(deadline) {
						t.Fatal("the write before it did not run")
					}
					runtime.Gosched()
				}
				if q := queuedWrites(); q != 0 {
					t.Fatalf("%d writes still queued", q)
				}
				cancel()
				close(gate)
			} else {
				cancel()
				// The caller is answered while the committer is still busy.
				select {
				case err := <-errc:
					errc <- err
				case <-time.After(5 * time.Second):
					t.Fatal("a cancelled queued write did not return")
				}
				release()
			}
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled write: %v; want %v", err, context.Canceled)
			}
			if err := <-beforeErr; err != nil {
				t.Errorf("write before it: %v", err)
			}
			// A write after it goes through.
			var afterRan, afterStored atomic.Int32
			if err := s.tx(bg, insert("after", &afterRan, &afterStored, nil)); err != nil {
				t.Errorf("write after it: %v", err)
			}
			if ran.Load() != 0 || stored.Load() != 0 {
				t.Errorf("cancelled write ran %d times, stored callback %d times; want 0, 0", ran.Load(), stored.Load())
			}
			if beforeStored.Load() != 1 || afterStored.Load() != 1 {
				t.Errorf("stored callbacks: before %d, after %d; want 1, 1", beforeStored.Load(), afterStored.Load())
			}
			vals := metaValues(t, s, "")
			if _, ok := vals["cancelled"]; ok {
				t.Error("the cancelled write was stored")
			}
			if _, ok := vals["before"]; !ok {
				t.Error("the write before it was not stored")
			}
			if _, ok := vals["after"]; !ok {
				t.Error("the write after it was not stored")
			}
		})
	}
}

// webRoomInbound is a person's message in a web group room (received by
// the room: no bot) addressing bots, each in its room session.
func webRoomInbound(room, msgID, user string, bots ...string) gateway.Inbound {
	in := gateway.Inbound{
		Event: gateway.Event{
			Platform: gateway.PlatformWeb, ChatID: room, ChatType: gateway.ChatGroup, ChatName: room, MessageID: msgID,
			Sender: gateway.Sender{PlatformID: "web-" + user, Name: user}, Text: "hello bots",
			Time: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC),
		},
		UserID: "user-" + user, UserName: user,
	}
	for _, b := range bots {
		in.Turns = append(in.Turns, gateway.TurnRequest{
			Session: gateway.SessionKey{Bot: b, Scope: gateway.ScopeGroup, ScopeID: "web:" + room}, Text: "hello",
		})
	}
	return in
}

// TestBotOfMessageWebRoom: the web knows messages by Switchboard's own IDs
// (its Send returns ""), so a reply to a bot's post in a web room names
// the post's message ID, and BotOfMessage finds the bot by it. Anything
// else — a person's message, an unknown or malformed ID, another chat —
// is not found, without error.
func TestBotOfMessageWebRoom(t *testing.T) {
	ctx := context.Background()
	s := openBatchStore(t)
	res, err := s.AppendInbound(ctx, webRoomInbound("lobby", "m1", "ann", "matty", "finn"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Turns) != 2 {
		t.Fatalf("turns = %+v", res.Turns)
	}
	posts := map[string]int64{} // bot → its post's message ID
	for i, bot := range []string{"matty", "finn"} {
		turn := res.Turns[i]
		out, err := s.CompleteTurn(ctx, gateway.Completion{Turn: turn, Session: turn.SessionID, Posts: []gateway.Post{{
			Session: turn.SessionID, Message: gateway.Message{
				Platform: gateway.PlatformWeb, ChatID: "lobby", ChatType: gateway.ChatGroup, Kind: gateway.KindChat,
				From: gateway.Party{Kind: "bot", ID: bot, Name: bot}, Bot: bot, Text: "hi from " + bot, Time: time.Now(),
			}}}})
		if err != nil || len(out.Outbox) != 1 {
			t.Fatalf("complete %s: %+v, %v", bot, out, err)
		}
		if err := s.MarkSent(ctx, out.Outbox[0].OutboxID, ""); err != nil { // as the web adapter reports it
			t.Fatal(err)
		}
		posts[bot] = out.Outbox[0].MessageID
	}
	if pending, err := s.PendingOutbox(ctx); err != nil || len(pending) != 0 {
		t.Fatalf("pending outbox after MarkSent = %+v, %v", pending, err)
	}
	// Another room, so a post's ID is known not to leak across chats.
	if _, err := s.AppendInbound(ctx, webRoomInbound("other", "m1", "bob")); err != nil {
		t.Fatal(err)
	}
	id := func(n int64) string { return strconv.FormatInt(n, 10) }
	tests := []struct {
		name, platform, chat, msgID string
		bot                         string
		ok                          bool
	}{
		{"matty's post", gateway.PlatformWeb, "lobby", id(posts["matty"]), "matty", true},
		{"finn's post", gateway.PlatformWeb, "lobby", id(posts["finn"]), "finn", true},
		{"the person's message", gateway.PlatformWeb, "lobby", id(res.Message.ID), "", false},
		{"the person's platform ID", gateway.PlatformWeb, "lobby", "m1", "", false},
		{"unknown ID", gateway.PlatformWeb, "lobby", id(posts["finn"] + 1000), "", false},
		{"not a number", gateway.PlatformWeb, "lobby", "abc", "", false},
		{"empty", gateway.PlatformWeb, "lobby", "", "", false},
		{"another room", gateway.PlatformWeb, "other", id(posts["matty"]), "", false},
		{"another platform", gateway.PlatformTelegram, "lobby", id(posts["matty"]), "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bot, ok, err := s.BotOfMessage(ctx, tc.platform, tc.chat, tc.msgID)
			if err != nil || bot != tc.bot || ok != tc.ok {
				t.Errorf("BotOfMessage(%s, %s, %q) = %q, %v, %v; want %q, %v, nil", tc.platform, tc.chat, tc.msgID, bot, ok, err, tc.bot, tc.ok)
			}
		})
	}
}

// TestDuplicateInbound stores the same platform message twice — one
// after the other, and twice in the same batch (the second then finds the
// first's key in the same transaction). The second answer is a duplicate
// carrying the first message's ID; there is one message row, one dedupe
// key, one session link and one turn (queued and cached), and each call's
// OnStored runs once with its own answer.
func TestDuplicateInbound(t *testing.T) {
	tests := []struct {
		name      string
		sameBatch bool
	}{
		{"one after the other", false},
		{"in one batch", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openBatchStore(t)
			in := gateway.Inbound{
				Event: gateway.Event{
					Platform: gateway.PlatformWeb, Bot: "matty", ChatID: "web-ann:matty", ChatType: gateway.ChatPrivate,
					MessageID: "7", Sender: gateway.Sender{PlatformID: "web-ann", Name: "Ann"}, Text: "@matty hi",
					Mentions: []gateway.Mention{{Start: 0, End: 6, Bot: "matty"}},
					Time:     time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC),
				},
				UserID: "user-ann", UserName: "Ann",
				Turns: []gateway.TurnRequest{{Session: gateway.SessionKey{Bot: "matty", Scope: gateway.ScopeUser, ScopeID: "user-ann"}, Text: "hi"}},
			}
			var (
				results  [2]gateway.InboundResult
				errs     [2]error
				callback [2][]gateway.InboundResult
				mu       sync.Mutex
			)
			appendOne := func(i int) {
				call := in
				call.OnStored = func(r gateway.InboundResult) {
					mu.Lock()
					defer mu.Unlock()
					callback[i] = append(callback[i], r)
				}
				results[i], errs[i] = s.AppendInbound(ctx, call)
			}
			if tc.sameBatch {
				release := blockCommitter(t, s)
				var wg sync.WaitGroup
				for i := range 2 {
					wg.Go(func() { appendOne(i) })
					waitQueued(t, i+1)
				}
				release()
				wg.Wait()
			} else {
				appendOne(0)
				appendOne(1)
			}
			for i, err := range errs {
				if err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
			}
			first, dup := results[0], results[1]
			if first.Duplicate || len(first.Turns) != 1 {
				t.Fatalf("first = %+v; want a new message with a turn", first)
			}
			if !dup.Duplicate || dup.Message.ID != first.Message.ID || len(dup.Turns) != 0 {
				t.Fatalf("second = %+v; want a duplicate of message %d without turns", dup, first.Message.ID)
			}
			if dup.Message.Text != in.Event.Text || dup.Message.PlatformMsgID != "7" || dup.Message.UserID != "user-ann" {
				t.Errorf("duplicate carries %+v; want the first message", dup.Message)
			}
			for i, want := range results {
				if len(callback[i]) != 1 || !reflect.DeepEqual(callback[i][0], want) {
					t.Errorf("OnStored of append %d got %+v; want once %+v", i, callback[i], want)
				}
			}
			if err := s.linked(ctx); err != nil {
				t.Fatal(err)
			}
			for _, q := range []struct{ table, query string }{
				{"messages", `SELECT COUNT(*) FROM messages`},
				{"inbound_keys", `SELECT COUNT(*) FROM inbound_keys`},
				{"session_messages", `SELECT COUNT(*) FROM session_messages`},
				{"turns", `SELECT COUNT(*) FROM turns`},
			} {
				var n int
				if err := s.queryRow(ctx, q.query).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != 1 {
					t.Errorf("%d rows in %s; want 1", n, q.table)
				}
			}
			pending, err := s.PendingTurns(ctx)
			if err != nil || len(pending) != 1 || pending[0] != first.Turns[0] {
				t.Errorf("pending turns = %+v, %v; want %+v", pending, err, first.Turns)
			}
			s.recent.mu.Lock()
			cached := len(s.recent.turns)
			s.recent.mu.Unlock()
			if cached != 1 {
				t.Errorf("%d turns cached; want 1", cached)
			}
			d, err := s.LoadTurn(ctx, first.Turns[0].ID, 10)
			if err != nil || d.Message.ID != first.Message.ID || len(d.History) != 0 {
				t.Errorf("LoadTurn = %+v, %v; want message %d without history", d, err, first.Message.ID)
			}
			// The copy's ID is free again: the next message is stored
			// normally and links to the session.
			next := in
			next.Event.MessageID = "8"
			res, err := s.AppendInbound(ctx, next)
			if err != nil || res.Duplicate || len(res.Turns) != 1 {
				t.Fatalf("next message = %+v, %v", res, err)
			}
			if d, err := s.LoadTurn(ctx, res.Turns[0].ID, 10); err != nil || len(d.History) != 1 || d.History[0].ID != first.Message.ID {
				t.Errorf("next turn's history = %+v, %v; want message %d", d.History, err, first.Message.ID)
			}
		})
	}
}

// openOwnCheckpoints opens a store whose checkpointer does not run on its
// own (for an hour), so a test can run checkpoint itself and set what it
// reads.
func openOwnCheckpoints(t *testing.T, path string) *SQLite {
	t.Helper()
	s, err := open(context.Background(), path, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestWALRestartsUnderSteadyWrites checks that the WAL starts again from
// its beginning although the checkpoint beside the writer never copies
// every frame (here a reader's snapshot holds it back, as the writer's
// own new frames do under load): the committer finishes it between two
// batches, and the next transaction restarts the WAL.
func TestWALRestartsUnderSteadyWrites(t *testing.T) {
	ctx := context.Background()
	s := openOwnCheckpoints(t, filepath.Join(t.TempDir(), "sb.db"))
	s.restartFrames = 1
	frames := func() int {
		t.Helper()
		var busy, log, copied int
		if err := s.ck.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &copied); err != nil {
			t.Fatal(err)
		}
		return log
	}
	n := 0
	write := func() {
		t.Helper()
		n++
		in := gateway.Inbound{
			Event: gateway.Event{Platform: "web", Bot: "matty", ChatID: fmt.Sprint("c", n), ChatType: gateway.ChatPrivate,
				MessageID: "m", Sender: gateway.Sender{PlatformID: fmt.Sprint("v", n)}, Text: "hello", Time: time.Now()},
			UserID: fmt.Sprint("u", n),
			Turns:  []gateway.TurnRequest{{Session: gateway.SessionKey{Bot: "matty", Scope: "user", ScopeID: fmt.Sprint("u", n)}, Text: "hello"}},
		}
		if _, err := s.AppendInbound(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	for range 30 {
		write()
	}
	reader, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var count int
	if err := reader.QueryRow("SELECT COUNT(*) FROM messages").Scan(&count); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		write()
	}
	grown := frames() // copies only what the reader's snapshot allows
	s.checkpoint()    // the same, and asks the committer to finish
	reader.Rollback()
	write() // the committer finishes the checkpoint after this batch
	write() // and this transaction starts the WAL again
	if after := frames(); after >= grown {
		t.Errorf("the WAL holds %d frames after the restart, %d before: it did not start again", after, grown)
	}
}

// TestCheckpointerSyncsDatabaseFile: once the WAL holds restartFrames,
// the checkpointer syncs the database file itself (twice: before and
// after copying what came meanwhile) and only then asks the committer to
// finish; below it, it syncs nothing; a failed sync still asks for the
// finish (which syncs the file itself). The descriptor it syncs through
// is SQLite's file, and the store closes it only with its connections.
func TestCheckpointerSyncsDatabaseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sb.db")
	s := openOwnCheckpoints(t, path)
	if s.dbFile == nil || s.dbFile.Name() != path {
		t.Fatalf("the checkpointer's file = %v; want %s", s.dbFile, path)
	}
	if err := s.syncDB(); err != nil {
		t.Fatalf("sync the database file: %v", err)
	}
	var syncs int
	var failSync error
	s.syncDB = func() error {
		if s.finishCheckpoint.Load() {
			t.Error("the finish was asked for before the sync")
		}
		syncs++
		return failSync
	}
	in := gateway.Inbound{
		Event: gateway.Event{Platform: "web", Bot: "matty", ChatID: "c", ChatType: gateway.ChatPrivate,
			MessageID: "m1", Sender: gateway.Sender{PlatformID: "v"}, Text: "hello", Time: time.Now()},
		UserID: "u",
	}
	if _, err := s.AppendInbound(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		restart    int
		fail       error
		wantSyncs  int
		wantFinish bool
	}{
		{"below restartFrames", 1 << 30, nil, 0, false},
		{"at restartFrames", 1, nil, 2, true},
		{"a failed sync", 1, errors.New("disk on fire"), 1, true},
	}
	for _, tt := range tests {
		syncs, failSync, s.restartFrames = 0, tt.fail, tt.restart
		s.finishCheckpoint.Store(false)
		s.checkpoint()
		if syncs != tt.wantSyncs || s.finishCheckpoint.Load() != tt.wantFinish {
			t.Errorf("%s: %d syncs, finish asked %v; want %d, %v", tt.name, syncs, s.finishCheckpoint.Load(), tt.wantSyncs, tt.wantFinish)
		}
	}
	s.finishCheckpoint.Store(false)
	f := s.dbFile
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("sync after Close = %v; want %v", err, os.ErrClosed)
	}
}

// TestDeliveryMarksInRuns: bare delivery marks (the web's) are queued and
// written together, a statement per run of consecutive outbox IDs. Every
// marked entry is sent, and only those: the entries between runs, and
// after them, stay pending, through a restart too. A mark given twice
// (a reply sent again after a reconnect) counts once.
func TestDeliveryMarksInRuns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sb.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 10 {
		res, err := s.AppendInbound(ctx, webRoomInbound("room"+strconv.Itoa(i), "m1", "ann", "matty"))
		if err != nil || len(res.Turns) != 1 {
			t.Fatalf("append %d: %+v, %v", i, res, err)
		}
		turn := res.Turns[0]
		out, err := s.CompleteTurn(ctx, gateway.Completion{Turn: turn, Session: turn.SessionID, Posts: []gateway.Post{{
			Session: turn.SessionID, Message: gateway.Message{
				Platform: gateway.PlatformWeb, ChatID: "room" + strconv.Itoa(i), ChatType: gateway.ChatGroup, Kind: gateway.KindChat,
				From: gateway.Party{Kind: "bot", ID: "matty", Name: "Matty"}, Bot: "matty", Text: "hi", Time: time.Now(),
			}}}})
		if err != nil || len(out.Outbox) != 1 {
			t.Fatalf("complete %d: %+v, %v", i, out, err)
		}
		ids = append(ids, out.Outbox[0].OutboxID)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1]+1 {
			t.Fatalf("outbox IDs %v are not consecutive: the marks below would not form runs", ids)
		}
	}
	before := s.WriterStats().Writes
	// Out of order, with a duplicate: runs {0,1,2}, {4,5}, {7}.
	for _, i := range []int{5, 0, 2, 7, 1, 4, 7} {
		if err := s.MarkSent(ctx, ids[i], ""); err != nil {
			t.Fatal(err)
		}
	}
	wantPending := []int64{ids[3], ids[6], ids[8], ids[9]}
	pendingIDs := func(s *SQLite) []int64 {
		t.Helper()
		return pendingOutbox(t, s, func(o gateway.Outbound) int64 { return o.OutboxID })
	}
	if got := pendingIDs(s); !slices.Equal(got, wantPending) {
		t.Errorf("pending = %v, want %v", got, wantPending)
	}
	var sent int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM outbox WHERE status = 'sent'`).Scan(&sent); err != nil || sent != 6 {
		t.Errorf("sent entries = %d, %v; want 6", sent, err)
	}
	// Each mark counts as a write, as when each was a write of its own:
	// 7 marks and PendingOutbox's empty write (a flush of the link log
	// may add its own; counted as one write, the marks would make 2 or 3).
	if got := s.WriterStats().Writes - before; got < 8 {
		t.Errorf("writes counted = %d, want at least 8", got)
	}
	// Marks queued when the store closes are written by the time it has
	// closed.
	if err := s.MarkSent(ctx, ids[8], ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSent(ctx, ids[9], ""); err == nil {
		t.Error("MarkSent after Close succeeded")
	}
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := pendingIDs(s), []int64{ids[3], ids[6], ids[9]}; !slices.Equal(got, want) {
		t.Errorf("pending after a restart = %v, want %v", got, want)
	}
}

// TestMarkRuns: the runs of consecutive IDs that writeMarks writes a
// statement each.
func TestMarkRuns(t *testing.T) {
	tests := []struct {
		name string
		ids  []int64
		want [][2]int64
	}{
		{"none", nil, nil},
		{"one", []int64{7}, [][2]int64{{7, 7}}},
		{"a run", []int64{3, 4, 5, 6}, [][2]int64{{3, 6}}},
		{"gaps", []int64{1, 2, 3, 5, 6, 8, 10}, [][2]int64{{1, 3}, {5, 6}, {8, 8}, {10, 10}}},
		{"duplicates", []int64{1, 1, 2, 2, 4, 4}, [][2]int64{{1, 2}, {4, 4}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := markRuns(tc.ids); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("markRuns(%v) = %v, want %v", tc.ids, got, tc.want)
			}
		})
	}
}
