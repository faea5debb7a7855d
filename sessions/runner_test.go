package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/store/sqlite"
)

// The runner is tested over the real SQLite store on a temporary file:
// the store is its queue. Only the brain (an AnswerFunc) and the outbox
// are faked, and, where a test needs to see or break the runner's calls
// to the store, a thin double wraps the real one.

// waitLimit bounds every wait for something the runner should do.
const waitLimit = 10 * time.Second

var quiet = slog.New(slog.DiscardHandler)

// TestRunnerAnswersSessionInStoreOrder checks that a session's turns are
// answered one at a time and in the order they were stored, whether they
// were stored one after another or concurrently, and however the
// sessions were woken; sessions are answered independently.
func TestRunnerAnswersSessionInStoreOrder(t *testing.T) {
	tests := []struct {
		name string
		// writers store each session's messages at once (1: in turn).
		writers int
		// wakeEach wakes the session after each message; wakeAll wakes
		// every session after each message; otherwise every session is
		// woken once at the end, the last first.
		wakeEach, wakeAll bool
	}{
		{name: "stored in turn, woken after each", writers: 1, wakeEach: true},
		{name: "stored concurrently, woken after each", writers: 4, wakeEach: true},
		{name: "stored concurrently, all woken after each", writers: 4, wakeAll: true},
		{name: "stored concurrently, woken at the end in reverse", writers: 4},
	}
	people := []struct{ user, bot string }{{"ann", "matty"}, {"bob", "matty"}, {"ann", "finn"}, {"cy", "finn"}}
	const perWriter = 2
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			log := newStoredLog()
			var mu sync.Mutex
			inFlight := map[string]int{}
			answered := map[string][]int64{}
			r := startRunner(t, sessions.Options{Store: s, Outbox: &outboxRecorder{}, Stored: log.hook,
				Answerer: sessions.AnswerFunc(func(ctx context.Context, turn sessions.Turn) (sessions.Outcome, bool) {
					sid := turn.Ref.SessionID
					mu.Lock()
					if inFlight[sid]++; inFlight[sid] > 1 {
						t.Errorf("session %s: turn %d started while another ran", sid, turn.Ref.ID)
					}
					answered[sid] = append(answered[sid], turn.Ref.ID)
					mu.Unlock()
					runtime.Gosched() // give an overlapping worker its chance
					mu.Lock()
					inFlight[sid]--
					mu.Unlock()
					return reply(turn, "re "+turn.Text), true
				})})

			var smu sync.Mutex
			stored := map[string][]int64{}
			var all []string
			var wg sync.WaitGroup
			for _, p := range people {
				for w := range tc.writers {
					wg.Go(func() {
						for i := range perWriter {
							res := appendInbound(t, s, private(p.user, p.bot, fmt.Sprintf("w%d-%d", w, i)))
							sid := res.Turns[0].SessionID
							smu.Lock()
							stored[sid] = append(stored[sid], res.Turns[0].ID)
							if !slices.Contains(all, sid) {
								all = append(all, sid)
							}
							every := slices.Clone(all)
							smu.Unlock()
							switch {
							case tc.wakeEach:
								r.Wake(sid)
							case tc.wakeAll:
								r.Wake(every...)
							}
						}
					})
				}
			}
			wg.Wait()
			if !tc.wakeEach && !tc.wakeAll {
				slices.Reverse(all)
				r.Wake(all...)
			}
			log.wait(t, len(people)*tc.writers*perWriter)

			mu.Lock()
			defer mu.Unlock()
			for sid, ids := range stored {
				slices.Sort(ids) // the store's order is its turn IDs'
				if !slices.Equal(answered[sid], ids) {
					t.Errorf("session %s answered turns %v, want %v", sid, answered[sid], ids)
				}
			}
		})
	}
}

// TestRunnerRunsSessionsInParallel checks that turns of different
// sessions run at the same time: each waits until all have started.
func TestRunnerRunsSessionsInParallel(t *testing.T) {
	const n = 4
	s := newStore(t)
	var started atomic.Int32
	all := make(chan struct{})
	log := newStoredLog()
	r := startRunner(t, sessions.Options{Store: s, Outbox: &outboxRecorder{}, Stored: log.hook,
		Answerer: sessions.AnswerFunc(func(ctx context.Context, turn sessions.Turn) (sessions.Outcome, bool) {
			if started.Add(1) == n {
				close(all)
			}
			select {
			case <-all:
			case <-time.After(waitLimit):
				t.Errorf("turn %q: only %d of %d sessions ran at once", turn.Text, started.Load(), n)
			}
			return reply(turn, "re "+turn.Text), true
		})})
	var ids []string
	for i := range n {
		res := appendInbound(t, s, private(fmt.Sprint("user", i), "matty", "hello"))
		ids = append(ids, res.Turns[0].SessionID)
	}
	r.Wake(ids...)
	log.wait(t, n)
}

// TestRunnerKeepsTurnStoredAsLastEnds checks that a turn stored while its
// session's worker finishes the session's last turn is answered: the
// wake that announces it is not lost whether it lands before the worker
// looks for more, while it leaves, or after it left. Each case runs many
// times, a new session each time.
func TestRunnerKeepsTurnStoredAsLastEnds(t *testing.T) {
	tests := []struct {
		name string
		// inAnswer stores the second turn from the first's Answer;
		// otherwise from the Stored hook of the first's outcome.
		inAnswer bool
		// async stores and wakes from a goroutine of its own, racing
		// the worker.
		async bool
	}{
		{name: "stored before the outcome is reported"},
		{name: "stored racing the worker's exit", async: true},
		{name: "stored racing the answer", inAnswer: true, async: true},
	}
	const rounds = 40
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			log := newStoredLog()
			var r *sessions.Runner
			var wg sync.WaitGroup
			defer wg.Wait()
			storeSecond := func(user, sid string) {
				second := func() {
					res := appendInbound(t, s, private(user, "matty", "second"))
					if res.Turns[0].SessionID != sid {
						t.Errorf("second turn in session %s, want %s", res.Turns[0].SessionID, sid)
					}
					r.Wake(sid)
				}
				if tc.async {
					wg.Go(second)
				} else {
					second()
				}
			}
			r = startRunner(t, sessions.Options{Store: s, Outbox: &outboxRecorder{},
				Stored: func(o sessions.Outcome, d sessions.Done) {
					if !tc.inAnswer && o.Posts[0].Message.Text == "re first" {
						storeSecond(o.Posts[0].Message.UserID, o.Turn.SessionID)
					}
					log.hook(o, d)
				},
				Answerer: sessions.AnswerFunc(func(ctx context.Context, turn sessions.Turn) (sessions.Outcome, bool) {
					if tc.inAnswer && turn.Text == "first" {
						storeSecond(turn.Message.UserID, turn.Ref.SessionID)
					}
					return reply(turn, "re "+turn.Text), true
				})})
			for i := range rounds {
				res := appendInbound(t, s, private(fmt.Sprint("user", i), "matty", "first"))
				r.Wake(res.Turns[0].SessionID)
				if !log.waitFor(2 * (i + 1)) {
					t.Fatalf("round %d: the turn stored as the last one ended was not answered", i)
				}
			}
		})
	}
}

// TestRunnerGroupTurnWaitsForEarlierBot checks that when one message
// addresses two bots, the second bot's turn does not start until the
// first bot's outcome is stored, whichever session is woken first.
func TestRunnerGroupTurnWaitsForEarlierBot(t *testing.T) {
	tests := []struct {
		name string
		// laterFirst wakes the second bot's session and waits until its
		// worker has loaded the turn that waits, then wakes the first.
		laterFirst bool
		// together wakes both at once, the second bot's first.
		together bool
	}{
		{name: "later bot woken first", laterFirst: true},
		{name: "both woken at once", together: true},
		{name: "earlier bot woken first"},
	}
	const rounds = 5
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			waiting := make(chan sessions.Turn, 1)
			s := &storeDouble{Store: newStore(t), loaded: func(turn sessions.Turn) {
				if turn.WaitsFor != 0 {
					select {
					case waiting <- turn:
					default:
					}
				}
			}}
			log := newStoredLog()
			var mu sync.Mutex
			var answered []string
			var firstSession string // matty's, whose turn finn's waits for
			turns := map[string]sessions.Turn{}
			r := startRunner(t, sessions.Options{Store: s, Outbox: &outboxRecorder{}, Stored: log.hook,
				Answerer: sessions.AnswerFunc(func(ctx context.Context, turn sessions.Turn) (sessions.Outcome, bool) {
					bot := turn.Session.Key.Bot
					if bot == "finn" {
						// The first bot's turn must be done in the store:
						// its outcome is stored.
						mu.Lock()
						sid := firstSession
						mu.Unlock()
						first, ok, err := s.Store.NextTurn(ctx, sid, 0)
						if err != nil || ok {
							t.Errorf("finn started while matty's session still had %+v (%v, %v)", first.Ref, ok, err)
						}
					}
					mu.Lock()
					answered = append(answered, bot)
					turns[bot] = turn
					mu.Unlock()
					return reply(turn, "re "+turn.Text), true
				})})
			for i := range rounds {
				res := appendInbound(t, s, group(fmt.Sprint("lobby", i), "ann", "@matty @finn hi", "matty", "finn"))
				first, second := res.Turns[0], res.Turns[1]
				mu.Lock()
				firstSession = first.SessionID
				mu.Unlock()
				switch {
				case tc.laterFirst:
					r.Wake(second.SessionID)
					select {
					case turn := <-waiting:
						if turn.Ref != second || turn.WaitsFor != first.ID {
							t.Fatalf("round %d: loaded %+v waiting for %d, want %+v waiting for %d", i, turn.Ref, turn.WaitsFor, second, first.ID)
						}
					case <-time.After(waitLimit):
						t.Fatalf("round %d: the second bot's turn was never loaded", i)
					}
					r.Wake(first.SessionID)
				case tc.together:
					r.Wake(second.SessionID, first.SessionID)
				default:
					r.Wake(first.SessionID, second.SessionID)
				}
				log.wait(t, 2*(i+1))

				mu.Lock()
				if !slices.Equal(answered, []string{"matty", "finn"}) {
					t.Errorf("round %d: bots answered in the order %q, want matty then finn", i, answered)
				}
				if f := turns["finn"]; f.Ref != second || f.After != first.ID || f.WaitsFor != 0 {
					t.Errorf("round %d: second bot answered %+v after %d waiting for %d; want %+v after %d waiting for none",
						i, f.Ref, f.After, f.WaitsFor, second, first.ID)
				}
				answered = nil
				mu.Unlock()
			}
		})
	}
}

// TestRunnerGroupTurnWaitsForEarlierBotsMessages checks that the second
// bot addressed by a message waits until the first bot's messages are in
// the outbox, not only stored: its turn, loaded while the first bot's
// outcome is being queued, is not answered before that ends.
func TestRunnerGroupTurnWaitsForEarlierBotsMessages(t *testing.T) {
	loaded := make(chan sessions.Turn, 1)
	s := &storeDouble{Store: newStore(t), loaded: func(turn sessions.Turn) {
		if turn.Session.Key.Bot == "finn" {
			select {
			case loaded <- turn:
			default:
			}
		}
	}}
	finnAnswering := make(chan struct{}, 1)
	var r *sessions.Runner
	var second sessions.TurnRef
	out := &blockingOutbox{before: func(entries []outbox.Entry) {
		if entries[0].Bot != "matty" {
			return
		}
		// Matty's outcome is stored: finn's turn no longer waits for it
		// in the store. Wake finn and let its worker load the turn.
		r.Wake(second.SessionID)
		select {
		case turn := <-loaded:
			if turn.WaitsFor != 0 {
				t.Errorf("finn's turn waits for %d after matty's was stored", turn.WaitsFor)
			}
		case <-time.After(waitLimit):
			t.Fatal("finn's turn was never loaded")
		}
		select {
		case <-finnAnswering:
			t.Error("finn answered before matty's messages were queued")
		case <-time.After(100 * time.Millisecond):
		}
	}}
	log := newStoredLog()
	r = startRunner(t, sessions.Options{Store: s, Outbox: out, Stored: log.hook,
		Answerer: sessions.AnswerFunc(func(ctx context.Context, turn sessions.Turn) (sessions.Outcome, bool) {
			if turn.Session.Key.Bot == "finn" {
				finnAnswering <- struct{}{}
			}
			return reply(turn, "re "+turn.Text), true
		})})
	res := appendInbound(t, s, group("lobby", "ann", "@matty @finn hi", "matty", "finn"))
	second = res.Turns[1]
	r.Wake(res.Turns[0].SessionID)
	log.wait(t, 2)
	var bots []string
	for _, call := range out.Calls() {
		bots = append(bots, call[0].Bot)
	}
	if !slices.Equal(bots, []string{"matty", "finn"}) {
		t.Errorf("messages queued by %q, want matty then finn", bots)
	}
}

// TestRunnerQueuesOutcome checks that the outbox entries of a stored
// outcome are enqueued in the order of its posts, one Enqueue per
// outcome, and that the sessions an outcome queues turns in are woken
// without anyone else waking them: a hand-off's target and a retry's own
// session.
func TestRunnerQueuesOutcome(t *testing.T) {
	tests := []struct {
		name string
		// first is the outcome of the turn "start" (ann asks matty).
		first func(turn sessions.Turn) sessions.Outcome
		// wantTurns are the turns answered after it, as "bot: text".
		wantTurns []string
		// wantOut are the texts enqueued, the first outcome's (its
		// firstPosts) first, in order.
		wantOut    []string
		firstPosts int
	}{
		{
			name: "posts in order",
			first: func(turn sessions.Turn) sessions.Outcome {
				o := reply(turn, "one")
				o.Posts = append(o.Posts, reply(turn, "two").Posts[0], reply(turn, "three").Posts[0])
				return o
			},
			wantOut: []string{"one", "two", "three"}, firstPosts: 3,
		},
		{
			name: "hand-off wakes its target",
			first: func(turn sessions.Turn) sessions.Outcome {
				o := reply(turn, "asking finn")
				o.Handoffs = []sessions.Handoff{handoff("dlg-1", "build it", turn)}
				return o
			},
			wantTurns: []string{"finn: build it"},
			wantOut:   []string{"asking finn", "re build it"}, firstPosts: 1,
		},
		{
			name: "retry wakes its session",
			first: func(turn sessions.Turn) sessions.Outcome {
				return sessions.Outcome{Retry: "try harder"}
			},
			wantTurns: []string{"matty: try harder"},
			wantOut:   []string{"re try harder"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			out := &outboxRecorder{}
			log := newStoredLog()
			var mu sync.Mutex
			var answered []string
			r := startRunner(t, sessions.Options{Store: s, Outbox: out, Stored: log.hook,
				Answerer: sessions.AnswerFunc(func(ctx context.Context, turn sessions.Turn) (sessions.Outcome, bool) {
					if turn.Text == "start" {
						return tc.first(turn), true
					}
					mu.Lock()
					answered = append(answered, turn.Session.Key.Bot+": "+turn.Text)
					mu.Unlock()
					return reply(turn, "re "+turn.Text), true
				})})
			res := appendInbound(t, s, private("ann", "matty", "start"))
			r.Wake(res.Turns[0].SessionID)
			_, dones := log.wait(t, 1+len(tc.wantTurns))

			mu.Lock()
			if !slices.Equal(answered, tc.wantTurns) {
				t.Errorf("turns answered after the first = %q, want %q", answered, tc.wantTurns)
			}
			mu.Unlock()
			// Each outcome's entries are one Enqueue call, in order. Two
			// workers may report in another order than they enqueued (a
			// hand-off's target can finish before its asker reports), so
			// calls and outcomes are matched as sets.
			calls := out.Calls()
			var texts, enqueued, reported []string
			for i, entries := range calls {
				for j, e := range entries {
					if j > 0 && e.OutboxID <= entries[j-1].OutboxID {
						t.Errorf("Enqueue call %d: entry %d out of order: %+v", i, j, entries)
					}
					texts = append(texts, e.Text)
				}
				enqueued = append(enqueued, entryKey(entries))
			}
			for _, d := range dones {
				reported = append(reported, entryKey(d.Outbox))
			}
			slices.Sort(enqueued)
			slices.Sort(reported)
			if !slices.Equal(enqueued, reported) {
				t.Errorf("Enqueue calls %q, want one per outcome %q", enqueued, reported)
			}
			slices.Sort(texts) // enqueued by two workers
			want := slices.Sorted(slices.Values(tc.wantOut))
			if !slices.Equal(texts, want) {
				t.Errorf("enqueued %q, want %q", texts, want)
			}
			var first []string
			for _, e := range calls[0] {
				first = append(first, e.Text)
			}
			if want := tc.wantOut[:tc.firstPosts]; !slices.Equal(first, want) {
				t.Errorf("first Enqueue call %q, want the first outcome's posts %q", first, want)
			}
		})
	}
}

// TestRunnerStartResumes checks that Start, on a reopened store, wakes
// every session with turns left and the runner answers just those, and
// that it reports a store failure.
func TestRunnerStartResumes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sb.db")
	before := openStore(t, path)
	first := appendInbound(t, before, private("ann", "matty", "first"))
	appendInbound(t, before, private("ann", "matty", "second"))
	appendInbound(t, before, private("bob", "finn", "hi"))
	turn, ok, err := before.NextTurn(ctx, first.Turns[0].SessionID, 20)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := before.CompleteTurn(ctx, reply(turn, "answered before the restart")); err != nil {
		t.Fatal(err)
	}
	if err := before.Close(); err != nil {
		t.Fatal(err)
	}

	s := openStore(t, path)
	log := newStoredLog()
	var mu sync.Mutex
	var answered []string
	r := startRunner(t, sessions.Options{Store: s, Outbox: &outboxRecorder{}, Stored: log.hook,
		Answerer: sessions.AnswerFunc(func(ctx context.Context, turn sessions.Turn) (sessions.Outcome, bool) {
			mu.Lock()
			answered = append(answered, turn.Session.Key.Bot+": "+turn.Text)
			mu.Unlock()
			return reply(turn, "re "+turn.Text), true
		})})
	n, err := r.Start(ctx)
	if err != nil || n != 2 {
		t.Fatalf("Start = %d, %v; want 2 sessions", n, err)
	}
	log.wait(t, 2)
	mu.Lock()
	slices.Sort(answered)
	if want := []string{"finn: hi", "matty: second"}; !slices.Equal(answered, want) {
		t.Errorf("answered after the restart %q, want %q", answered, want)
	}
	mu.Unlock()
	if depth, err := s.QueueDepth(ctx); err != nil || depth != 0 {
		t.Errorf("queue depth = %d, %v; want 0", depth, err)
	}

	broken := startRunner(t, sessions.Options{Store: &storeDouble{Store: s, pendingErr: errDisk}, Outbox: &outboxRecorder{},
		Answerer: sessions.AnswerFunc(func(context.Context, sessions.Turn) (sessions.Outcome, bool) { return sessions.Outcome{}, true })})
	if n, err := broken.Start(ctx); !errors.Is(err, errDisk) || n != 0 {
		t.Errorf("Start on a failing store = %d, %v; want 0, %v", n, err, errDisk)
	}
}

// TestRunnerDrain checks that Drain waits until the sessions have no
// turns left; and that when its ctx ends first it cancels the running
// turns (and those waiting for another bot), returns ctx's error, leaves
// the turns stored, and that no Wake starts a worker after it.
func TestRunnerDrain(t *testing.T) {
	tests := []struct {
		name string
		// block makes every Answer wait until its ctx ends.
		block bool
		// group stores one message for two bots and wakes only the
		// second, which then waits for the first forever.
		group   bool
		timeout time.Duration
		wantErr error
		// wantStored and wantPending are how many turns are answered
		// and how many are left stored.
		wantStored, wantPending int
	}{
		{name: "finishes in time", timeout: waitLimit, wantStored: 3},
		{name: "answer outlasts it", block: true, timeout: 50 * time.Millisecond, wantErr: context.DeadlineExceeded, wantPending: 3},
		{name: "turn waits for another bot", group: true, timeout: 50 * time.Millisecond, wantErr: context.DeadlineExceeded, wantPending: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			loaded := make(chan sessions.Turn, 10)
			s := &storeDouble{Store: newStore(t), loaded: func(turn sessions.Turn) {
				select {
				case loaded <- turn:
				default:
				}
			}}
			log := newStoredLog()
			var calls atomic.Int32
			cancelled := make(chan error, 10)
			r := startRunner(t, sessions.Options{Store: s, Outbox: &outboxRecorder{}, Stored: log.hook,
				Answerer: sessions.AnswerFunc(func(ctx context.Context, turn sessions.Turn) (sessions.Outcome, bool) {
					calls.Add(1)
					if tc.block {
						<-ctx.Done()
						cancelled <- ctx.Err()
						return sessions.Outcome{}, false
					}
					return reply(turn, "re "+turn.Text), true
				})})
			var woken string
			if tc.group {
				res := appendInbound(t, s, group("lobby", "ann", "@matty @finn hi", "matty", "finn"))
				woken = res.Turns[1].SessionID
			} else {
				appendInbound(t, s, private("ann", "matty", "one"))
				appendInbound(t, s, private("ann", "matty", "two"))
				woken = appendInbound(t, s, private("ann", "matty", "three")).Turns[0].SessionID
			}
			r.Wake(woken)
			select {
			case <-loaded: // a worker is at work: Drain has something to wait for
			case <-time.After(waitLimit):
				t.Fatal("no turn was loaded")
			}

			dctx, cancel := context.WithTimeout(ctx, tc.timeout)
			defer cancel()
			if err := r.Drain(dctx); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Drain = %v, want %v", err, tc.wantErr)
			}
			if busy := r.Busy(); busy != 0 {
				t.Errorf("Busy after Drain = %d", busy)
			}
			if tc.block {
				if err := <-cancelled; err == nil {
					t.Error("the running turn's ctx did not end")
				}
			}
			if depth, err := s.QueueDepth(ctx); err != nil || depth != tc.wantPending {
				t.Errorf("turns left stored = %d, %v; want %d", depth, err, tc.wantPending)
			}
			pending, err := s.PendingSessions(ctx)
			if err != nil || (tc.wantPending > 0) != slices.Contains(pending, woken) {
				t.Errorf("pending sessions = %v, %v; want %s in them: %v", pending, err, woken, tc.wantPending > 0)
			}

			before := calls.Load()
			r.Wake(woken)
			if busy := r.Busy(); busy != 0 {
				t.Errorf("Wake after Drain started %d workers", busy)
			}
			if after := calls.Load(); after != before {
				t.Errorf("Wake after Drain answered %d more turns", after-before)
			}
			if _, dones := log.wait(t, 0); len(dones) != tc.wantStored {
				t.Errorf("%d outcomes stored, want %d", len(dones), tc.wantStored)
			}
		})
	}
}

// TestRunnerReportsEachOutcomeOnce checks that the Stored hook is told of
// each answered turn exactly once, with the turn's ref set by the runner
// and the entries the Outbox was given.
func TestRunnerReportsEachOutcomeOnce(t *testing.T) {
	s := newStore(t)
	out := &outboxRecorder{}
	log := newStoredLog()
	var mu sync.Mutex
	loaded := map[int64]sessions.TurnRef{}
	r := startRunner(t, sessions.Options{Store: s, Outbox: out, Stored: log.hook,
		Answerer: sessions.AnswerFunc(func(ctx context.Context, turn sessions.Turn) (sessions.Outcome, bool) {
			mu.Lock()
			loaded[turn.Ref.ID] = turn.Ref
			mu.Unlock()
			o := reply(turn, "re "+turn.Text)
			o.Turn = sessions.TurnRef{} // the runner sets it
			if turn.Text == "retry me" {
				o.Retry = "retried"
			}
			return o, true
		})})
	var woken []string
	for _, in := range []gateway.Inbound{
		private("ann", "matty", "a1"), private("ann", "matty", "retry me"), private("ann", "matty", "a3"),
		private("bob", "matty", "b1"), private("bob", "finn", "retry me"),
		group("lobby", "ann", "@matty @finn hi", "matty", "finn"),
	} {
		for _, turn := range appendInbound(t, s, in).Turns {
			woken = append(woken, turn.SessionID)
		}
	}
	r.Wake(woken...)
	const want = 7 + 2 // the turns stored and the two retries
	log.wait(t, want)
	dctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := r.Drain(dctx); err != nil {
		t.Fatal(err)
	}

	outcomes, dones := log.wait(t, want)
	if len(outcomes) != want {
		t.Errorf("%d outcomes reported, want %d", len(outcomes), want)
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[int64]int{}
	var reported []int64
	for i, o := range outcomes {
		if seen[o.Turn.ID]++; seen[o.Turn.ID] > 1 {
			t.Errorf("turn %d reported %d times", o.Turn.ID, seen[o.Turn.ID])
		}
		if o.Turn != loaded[o.Turn.ID] || o.Turn.ID == 0 {
			t.Errorf("outcome %d reported for %+v, the turn loaded was %+v", i, o.Turn, loaded[o.Turn.ID])
		}
		for _, e := range dones[i].Outbox {
			reported = append(reported, e.OutboxID)
		}
	}
	if len(seen) != len(loaded) {
		t.Errorf("%d turns reported, %d answered", len(seen), len(loaded))
	}
	var enqueued []int64
	for _, call := range out.Calls() {
		for _, e := range call {
			enqueued = append(enqueued, e.OutboxID)
		}
	}
	slices.Sort(reported)
	slices.Sort(enqueued)
	if !slices.Equal(reported, enqueued) || len(enqueued) != want {
		t.Errorf("entries reported %v, enqueued %v; want the same %d", reported, enqueued, want)
	}
}

// TestRunnerRetriesStoreErrors checks that a store failure while loading
// or completing a turn is retried, holding the session, and the turn is
// answered once: a failed completion does not ask the brain again.
func TestRunnerRetriesStoreErrors(t *testing.T) {
	tests := []struct {
		name                   string
		failNext, failComplete int
	}{
		{name: "loading fails twice", failNext: 2},
		{name: "completing fails twice", failComplete: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &storeDouble{Store: newStore(t), failNext: tc.failNext, failComplete: tc.failComplete}
			log := newStoredLog()
			var mu sync.Mutex
			var answered []string
			r := startRunner(t, sessions.Options{Store: s, Outbox: &outboxRecorder{}, Stored: log.hook,
				Answerer: sessions.AnswerFunc(func(ctx context.Context, turn sessions.Turn) (sessions.Outcome, bool) {
					mu.Lock()
					answered = append(answered, turn.Text)
					mu.Unlock()
					return reply(turn, "re "+turn.Text), true
				})})
			appendInbound(t, s, private("ann", "matty", "one"))
			res := appendInbound(t, s, private("ann", "matty", "two"))
			r.Wake(res.Turns[0].SessionID)
			outcomes, _ := log.wait(t, 2)

			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(answered, []string{"one", "two"}) {
				t.Errorf("brain asked for %q, want one then two, once each", answered)
			}
			var texts []string
			for _, o := range outcomes {
				texts = append(texts, o.Posts[0].Message.Text)
			}
			if !slices.Equal(texts, []string{"re one", "re two"}) {
				t.Errorf("outcomes stored %q", texts)
			}
			next, complete := s.calls()
			if next < tc.failNext+1 || complete != tc.failComplete+2 {
				t.Errorf("store called %d times to load, %d to complete; want at least %d and %d",
					next, complete, tc.failNext+1, tc.failComplete+2)
			}
		})
	}
}

// TestRunnerHistoryLimit checks that turns are loaded with at most
// HistoryLimit earlier messages, 20 when it is not set.
func TestRunnerHistoryLimit(t *testing.T) {
	tests := []struct {
		name  string
		limit func() int
		want  []int // history lengths of the four turns
	}{
		{name: "default", want: []int{0, 2, 4, 6}},
		{name: "three", limit: func() int { return 3 }, want: []int{0, 2, 3, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			log := newStoredLog()
			var mu sync.Mutex
			var got []int
			r := startRunner(t, sessions.Options{Store: s, Outbox: &outboxRecorder{}, Stored: log.hook, HistoryLimit: tc.limit,
				Answerer: sessions.AnswerFunc(func(ctx context.Context, turn sessions.Turn) (sessions.Outcome, bool) {
					mu.Lock()
					got = append(got, len(turn.History))
					mu.Unlock()
					return reply(turn, "re "+turn.Text), true
				})})
			var sid string
			for i := range 4 {
				sid = appendInbound(t, s, private("ann", "matty", fmt.Sprint("q", i))).Turns[0].SessionID
			}
			r.Wake(sid)
			log.wait(t, 4)
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(got, tc.want) {
				t.Errorf("history lengths %v, want %v", got, tc.want)
			}
		})
	}
}

// newStore opens an empty store on a temporary file.
func newStore(t *testing.T) *sqlite.Store {
	return openStore(t, filepath.Join(t.TempDir(), "sb.db"))
}

// openStore opens the store at path, closed when the test ends.
func openStore(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// startRunner makes a quiet runner, drained when the test ends (before
// the store it uses closes, which was opened first).
func startRunner(t *testing.T, opts sessions.Options) *sessions.Runner {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	r := sessions.NewRunner(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := r.Drain(ctx); err != nil {
			t.Errorf("drain at the end: %v", err)
		}
	})
	return r
}

// msgSeq numbers the inbound messages, so none is taken for a duplicate.
var msgSeq atomic.Int64

func userKey(bot, user string) sessions.Key {
	return sessions.Key{Bot: bot, Scope: sessions.ScopeUser, ScopeID: user}
}

// private is user's message to bot in their private web chat, asking for
// bot's answer.
func private(user, bot, text string) gateway.Inbound {
	return gateway.Inbound{
		Message: chat.Message{
			Platform: "web", ChatID: "web-" + user + ":" + bot, ChatType: chat.Private,
			PlatformMsgID: fmt.Sprint("m", msgSeq.Add(1)), Kind: chat.KindChat,
			From:   chat.Party{Kind: chat.Human, ID: "web-" + user, Name: user},
			UserID: user, Bot: bot, Text: text, Time: time.Now().UTC(),
		},
		Turns: []sessions.Request{{Session: userKey(bot, user), Text: text}},
	}
}

// group is user's message in a web room asking for the answers of bots,
// in that order.
func group(room, user, text string, bots ...string) gateway.Inbound {
	in := gateway.Inbound{
		Message: chat.Message{
			Platform: "web", ChatID: room, ChatType: chat.Group,
			PlatformMsgID: fmt.Sprint("m", msgSeq.Add(1)), Kind: chat.KindChat,
			From:   chat.Party{Kind: chat.Human, ID: "web-" + user, Name: user},
			UserID: user, Text: text, Time: time.Now().UTC(),
		},
		ChatName: room,
	}
	for _, b := range bots {
		in.Turns = append(in.Turns, sessions.Request{Session: userKey(b, user), Text: text})
	}
	return in
}

// appendInbound stores in; it may run on any goroutine.
func appendInbound(t *testing.T, s gateway.Store, in gateway.Inbound) gateway.InboundResult {
	t.Helper()
	res, err := s.AppendInbound(context.Background(), in)
	if err != nil || len(res.Turns) != len(in.Turns) {
		t.Errorf("append %q: %+v, %v", in.Message.Text, res, err)
	}
	return res
}

// reply is the outcome of the turn's bot saying text in the turn's chat
// (a delegated turn's, which has none: the person's private web chat).
func reply(turn sessions.Turn, text string) sessions.Outcome {
	m := turn.Message
	bot := turn.Session.Key.Bot
	if m.Platform == "" {
		m.Platform, m.ChatID, m.ChatType = "web", "web-"+m.UserID+":"+bot, chat.Private
	}
	return sessions.Outcome{Turn: turn.Ref, Posts: []sessions.Post{{Session: turn.Ref.SessionID, Message: chat.Message{
		Platform: m.Platform, ChatID: m.ChatID, ChatType: m.ChatType, Kind: chat.KindChat,
		From:   chat.Party{Kind: chat.Bot, ID: bot, Name: bot},
		UserID: m.UserID, Bot: bot, Text: text, ReplyTo: m.PlatformMsgID, Time: time.Now().UTC(),
	}}}}
}

// handoff is the queued hand-off of task from turn's bot to finn.
func handoff(id, task string, turn sessions.Turn) sessions.Handoff {
	return sessions.Handoff{
		Record: delegation.Record{
			ID: id, Kind: delegation.KindHandoff, From: turn.Session.Key.Bot, To: "finn",
			UserID: turn.Message.UserID, UserName: turn.Message.UserID, Task: task, Depth: 1,
			Status: delegation.StatusQueued, Origin: turn.Message.Chat(), OriginSender: turn.Message.From.ID,
			FromSession: turn.Ref.SessionID,
		},
		Target:  userKey("finn", turn.Message.UserID),
		Wrapper: "DELEGATED TASK\nTask: " + task,
	}
}

// entryKey names a list of entries by their IDs and texts, in order.
func entryKey(entries []outbox.Entry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%d:%s;", e.OutboxID, e.Text)
	}
	return b.String()
}

// outboxRecorder is the runner's outbox: it records each Enqueue call.
type outboxRecorder struct {
	mu    sync.Mutex
	calls [][]outbox.Entry
}

func (o *outboxRecorder) Enqueue(entries ...outbox.Entry) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, slices.Clone(entries))
}

// Calls returns the entries of each Enqueue call so far.
func (o *outboxRecorder) Calls() [][]outbox.Entry {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.calls)
}

// blockingOutbox is an outboxRecorder that calls before, when set, ahead
// of recording each Enqueue, in the runner's goroutine.
type blockingOutbox struct {
	outboxRecorder
	before func([]outbox.Entry)
}

func (o *blockingOutbox) Enqueue(entries ...outbox.Entry) {
	if o.before != nil && len(entries) > 0 {
		o.before(entries)
	}
	o.outboxRecorder.Enqueue(entries...)
}

// storedLog is a Stored hook that keeps each outcome reported, and lets a
// test wait for them.
type storedLog struct {
	mu       sync.Mutex
	outcomes []sessions.Outcome
	dones    []sessions.Done
	changed  chan struct{} // closed and replaced at each report
}

func newStoredLog() *storedLog { return &storedLog{changed: make(chan struct{})} }

func (l *storedLog) hook(o sessions.Outcome, d sessions.Done) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outcomes = append(l.outcomes, o)
	l.dones = append(l.dones, d)
	close(l.changed)
	l.changed = make(chan struct{})
}

// waitFor reports whether n outcomes were reported within waitLimit.
func (l *storedLog) waitFor(n int) bool {
	deadline := time.After(waitLimit)
	for {
		l.mu.Lock()
		got, changed := len(l.outcomes), l.changed
		l.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// wait waits until n outcomes were reported and returns all so far.
func (l *storedLog) wait(t *testing.T, n int) ([]sessions.Outcome, []sessions.Done) {
	t.Helper()
	if !l.waitFor(n) {
		l.mu.Lock()
		defer l.mu.Unlock()
		t.Fatalf("%d outcomes stored after %s, want %d", len(l.outcomes), waitLimit, n)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.outcomes), slices.Clone(l.dones)
}

var errDisk = errors.New("disk trouble")

// storeDouble is the real store seen through the runner's calls: it can
// fail the first calls that load or complete a turn, or the listing of
// pending sessions, and reports each turn it loads.
type storeDouble struct {
	*sqlite.Store
	pendingErr             error
	loaded                 func(sessions.Turn)
	mu                     sync.Mutex
	failNext, failComplete int
	next, complete         int
}

func (s *storeDouble) PendingSessions(ctx context.Context) ([]string, error) {
	if s.pendingErr != nil {
		return nil, fmt.Errorf("double: %w", s.pendingErr)
	}
	return s.Store.PendingSessions(ctx)
}

func (s *storeDouble) NextTurn(ctx context.Context, sessionID string, historyLimit int) (sessions.Turn, bool, error) {
	s.mu.Lock()
	s.next++
	fail := s.next <= s.failNext
	s.mu.Unlock()
	if fail {
		return sessions.Turn{}, false, errDisk
	}
	turn, ok, err := s.Store.NextTurn(ctx, sessionID, historyLimit)
	if ok && err == nil && s.loaded != nil {
		s.loaded(turn)
	}
	return turn, ok, err
}

func (s *storeDouble) CompleteTurn(ctx context.Context, o sessions.Outcome) (sessions.Done, error) {
	s.mu.Lock()
	s.complete++
	fail := s.complete <= s.failComplete
	s.mu.Unlock()
	if fail {
		return sessions.Done{}, errDisk
	}
	return s.Store.CompleteTurn(ctx, o)
}

// calls counts the calls to NextTurn and CompleteTurn.
func (s *storeDouble) calls() (next, complete int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next, s.complete
}
