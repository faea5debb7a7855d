package gateway_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/gateway"
)

// instantFunc is a brainFunc that says it answers at once
// (brains.Instant), so its turns may take the instant path.
type instantFunc func(context.Context, brains.Turn) (brains.Reply, error)

func (f instantFunc) Reply(ctx context.Context, t brains.Turn) (brains.Reply, error) {
	return f(ctx, t)
}
func (instantFunc) Instant() bool { return true }

// turnLog records the turns a brain saw.
type turnLog struct {
	mu    sync.Mutex
	turns []brains.Turn
}

func (l *turnLog) add(t brains.Turn) {
	l.mu.Lock()
	l.turns = append(l.turns, kept(t))
	l.mu.Unlock()
}

// kept is t with copies of the slices the gateway reuses once Reply
// returns (brains.Brain), for a test brain that keeps its turns.
func kept(t brains.Turn) brains.Turn {
	t.History = slices.Clone(t.History)
	t.GroupHistory = slices.Clone(t.GroupHistory)
	t.Team = slices.Clone(t.Team)
	t.Context = slices.Clone(t.Context)
	return t
}

func (l *turnLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.turns)
}

func (l *turnLog) last() brains.Turn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.turns[len(l.turns)-1]
}

// replier is an instant brain that logs each turn and answers "re " and
// its text; a turn whose text is holdOn waits for release first.
func replier(log *turnLog, holdOn string, release <-chan struct{}) instantFunc {
	return func(_ context.Context, tr brains.Turn) (brains.Reply, error) {
		log.add(tr)
		if holdOn != "" && tr.Text == holdOn {
			<-release
		}
		return brains.Reply{Text: "re " + tr.Text}, nil
	}
}

func historyTexts(t brains.Turn) []string {
	var out []string
	for _, e := range t.History {
		out = append(out, e.Kind+":"+e.Text)
	}
	return out
}

func TestInstantPathAnswersBeforeDeliverReturns(t *testing.T) {
	var log turnLog
	h := newHarness(t, bot("matty", replier(&log, "", nil)))
	// A new session takes the stored path; its turn loads the session
	// into the store's cache.
	h.deliver(private("web-ann", "matty", "1", "one"))
	if got := h.plat.next(t).Text; got != "re one" {
		t.Fatalf("first reply = %q", got)
	}
	until(t, func() bool { return h.gw.QueueDepth() == 0 })
	// Now the session is known and idle: the next message is answered by
	// the time Deliver returns, and stored with its reply.
	r := h.deliver(private("web-ann", "matty", "2", "two"))
	if log.count() != 2 {
		t.Fatalf("brain ran %d times when Deliver returned, want 2 (the instant path)", log.count())
	}
	if got := historyTexts(log.last()); !slices.Equal(got, []string{"human:one", "bot:re one"}) {
		t.Errorf("history = %q", got)
	}
	if got := h.plat.next(t); got.Text != "re two" || got.MessageID <= r.MessageID || got.ReplyTo != "2" {
		t.Errorf("second reply = %+v (message %d)", got, r.MessageID)
	}
	pending, err := h.store.PendingTurns(context.Background())
	if err != nil || len(pending) != 0 {
		t.Errorf("pending turns = %v, %v", pending, err)
	}

	// A duplicate is acknowledged as the original and not answered again.
	again := h.deliver(private("web-ann", "matty", "2", "two"))
	if !again.Duplicate || again.MessageID != r.MessageID {
		t.Errorf("duplicate receipt = %+v, want message %d", again, r.MessageID)
	}
	h.deliver(private("web-ann", "matty", "3", "three"))
	if got := h.plat.next(t).Text; got != "re three" {
		t.Errorf("reply after the duplicate = %q (the duplicate was answered?)", got)
	}
	if got := historyTexts(log.last()); !slices.Equal(got, []string{"human:one", "bot:re one", "human:two", "bot:re two"}) {
		t.Errorf("history of the third = %q", got)
	}
}

func TestInstantPathWaitsForABusySession(t *testing.T) {
	var log turnLog
	release := make(chan struct{}) // the second turn is still running when the third arrives
	h := newHarness(t, bot("matty", replier(&log, "two", release)))
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the harness closes, on a failure
	h.deliver(private("web-ann", "matty", "1", "one"))
	h.plat.next(t)
	until(t, func() bool { return h.gw.QueueDepth() == 0 })
	// "two" is instant and blocks its Deliver; "three", from another
	// goroutine, must neither overtake it nor run beside it.
	done := make(chan gateway.Receipt)
	go func() {
		r, _ := h.gw.Deliver(context.Background(), private("web-ann", "matty", "2", "two"))
		done <- r
	}()
	until(t, func() bool { return log.count() == 2 }) // "two" is inside the brain
	third := make(chan gateway.Receipt)
	go func() {
		r, _ := h.gw.Deliver(context.Background(), private("web-ann", "matty", "3", "three"))
		third <- r
	}()
	select {
	case r := <-third:
		t.Fatalf("three was stored (as %d) while two was being answered", r.MessageID)
	case <-time.After(50 * time.Millisecond):
	}
	free()
	r2, r3 := <-done, <-third
	if r3.MessageID <= r2.MessageID {
		t.Errorf("three stored as %d, before two (%d)", r3.MessageID, r2.MessageID)
	}
	if got := h.plat.next(t).Text; got != "re two" {
		t.Errorf("reply = %q, want re two first", got)
	}
	if got := h.plat.next(t).Text; got != "re three" {
		t.Errorf("reply = %q, want re three", got)
	}
	if got := historyTexts(log.last()); !slices.Equal(got, []string{"human:one", "bot:re one", "human:two", "bot:re two"}) {
		t.Errorf("history of three = %q", got)
	}
}

func TestInstantPathFallsBackWhileATurnIsQueued(t *testing.T) {
	var log turnLog
	release := make(chan struct{})
	h := newHarness(t, bot("matty", replier(&log, "one", release)))
	// "one" takes the stored path (a new session) and blocks in its
	// worker, with the session's window loaded; "two" finds the session
	// busy and is stored to wait its turn rather than answered at once.
	h.deliver(private("web-ann", "matty", "1", "one"))
	until(t, func() bool { return log.count() == 1 })
	h.deliver(private("web-ann", "matty", "2", "two"))
	if n := log.count(); n != 1 {
		t.Fatalf("brain ran %d times with the session busy, want 1", n)
	}
	close(release)
	if got := h.plat.next(t).Text; got != "re one" {
		t.Errorf("reply = %q", got)
	}
	if got := h.plat.next(t).Text; got != "re two" {
		t.Errorf("reply = %q", got)
	}
	if got := historyTexts(log.last()); !slices.Equal(got, []string{"human:one", "bot:re one"}) {
		t.Errorf("history of two = %q", got)
	}
}

// Many deliveries to one session at once, some instant and some stored:
// every turn sees exactly the person's messages stored before its own.
func TestConcurrentDeliveriesToOneSessionStayInOrder(t *testing.T) {
	var log turnLog
	mb := bot("matty", replier(&log, "", nil))
	mb.HistoryWindow = 200
	h := newHarness(t, mb)
	const senders, each = 4, 15
	ids := make(map[string]int64)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				text := fmt.Sprintf("m%d-%d", s, i)
				r, err := h.gw.Deliver(context.Background(), private("web-ann", "matty", text, text))
				if err != nil {
					t.Errorf("deliver %s: %v", text, err)
					return
				}
				mu.Lock()
				ids[text] = r.MessageID
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for range senders * each {
		h.plat.next(t)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.turns) != senders*each {
		t.Fatalf("%d turns, want %d", len(log.turns), senders*each)
	}
	for _, tr := range log.turns {
		var want, got []string
		for text, id := range ids {
			if id < ids[tr.Text] {
				want = append(want, text)
			}
		}
		for _, e := range tr.History {
			if e.Kind == "human" {
				got = append(got, e.Text)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("turn %s (message %d) saw people's messages %q, want %q", tr.Text, ids[tr.Text], got, want)
		}
	}
}

// until waits for cond, polling.
func until(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

// roofTeam is Matty (an instant brain, which answers "the roof leaks" by
// handing it to Finn and anything else with "noted") and Finn, with Ann's
// session with Matty cached and idle. The first time Matty answers "the
// roof leaks" it waits for hold, when not nil.
func roofTeam(t *testing.T, log *turnLog, hold <-chan struct{}, wrap func(gateway.Store) gateway.Store) *harness {
	t.Helper()
	var held bool
	matty := instantFunc(func(_ context.Context, tr brains.Turn) (brains.Reply, error) {
		log.add(tr)
		if tr.Text != "the roof leaks" {
			return brains.Reply{Text: "noted"}, nil
		}
		if hold != nil && !held {
			held = true // the brain sees one session's turns one at a time
			<-hold
		}
		return brains.Reply{Text: "Tell Finn Shipley to fix the roof."}, nil
	})
	h := newWrappedHarness(t, wrap,
		dbot("mattyatlas", "Matty Atlas", matty, "finnshipley"),
		dbot("finnshipley", "Finn Shipley", scripted(t, "Fixed: {{.Text}}")),
	)
	h.deliver(private("web-ann", "mattyatlas", "1", "hello"))
	h.plat.next(t)
	until(t, func() bool { return h.gw.QueueDepth() == 0 })
	return h
}

// A reply that hands work on is not made on the instant path (a hand-off
// is admitted against the policy's limits only for a stored message):
// the message takes the stored path and the hand-off happens there.
func TestInstantReplyThatHandsOffTakesTheStoredPath(t *testing.T) {
	var mattyTurns turnLog
	h := roofTeam(t, &mattyTurns, nil, nil)

	h.deliver(private("web-ann", "mattyatlas", "2", "the roof leaks"))
	var sent []string
	for range 3 {
		m := h.plat.next(t)
		sent = append(sent, m.ChatID+": "+m.Text)
	}
	slices.Sort(sent)
	want := []string{
		"web-ann:finnshipley: Fixed: fix the roof",
		"web-ann:mattyatlas: Finn Shipley finished: Fixed: fix the roof",
		"web-ann:mattyatlas: Tell Finn Shipley to fix the roof.",
	}
	if !slices.Equal(sent, want) {
		t.Errorf("sent %q, want %q", sent, want)
	}
	// Matty's brain answered twice: at once (the answer dropped), then on
	// the stored path.
	n := 0
	for _, tr := range mattyTurns.turns {
		if tr.Text == "the roof leaks" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("Matty answered the message %d times, want 2", n)
	}
	ds, err := h.gw.Delegations(context.Background(), "", "")
	if err != nil || len(ds) != 1 {
		t.Fatalf("delegations = %+v, %v; want one", ds, err)
	}
	if ds[0].From != "mattyatlas" || ds[0].To != "finnshipley" {
		t.Errorf("delegation = %+v", ds[0])
	}
}

// slowRoof is a store whose AppendInbound of "the roof leaks" takes 20 ms
// longer.
type slowRoof struct{ gateway.Store }

func (s slowRoof) AppendInbound(ctx context.Context, in gateway.Inbound) (gateway.InboundResult, error) {
	if in.Event.Text == "the roof leaks" {
		time.Sleep(20 * time.Millisecond)
	}
	return s.Store.AppendInbound(ctx, in)
}

// A delivery that gives the instant path up after claiming its session
// (here: its reply hands work on) is stored before a later delivery of the
// session that waited for it.
func TestInstantFallbackIsNotOvertaken(t *testing.T) {
	var log turnLog
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	// The fallback's store write takes a while, so a later message let go
	// too early would be stored first.
	h := roofTeam(t, &log, release, func(s gateway.Store) gateway.Store { return slowRoof{s} })

	first := make(chan gateway.Receipt)
	go func() {
		r, _ := h.gw.Deliver(context.Background(), private("web-ann", "mattyatlas", "2", "the roof leaks"))
		first <- r
	}()
	until(t, func() bool { return log.count() == 2 })
	// Later messages (from other tabs, say) wait for the first's claim;
	// any of them stored first would have overtaken it.
	later := []string{"and the door", "and the window", "and the gate"}
	second := make(chan gateway.Receipt, len(later))
	for i, text := range later {
		go func() {
			r, _ := h.gw.Deliver(context.Background(), private("web-ann", "mattyatlas", fmt.Sprint(3+i), text))
			second <- r
		}()
	}
	time.Sleep(20 * time.Millisecond)
	free()
	r1 := <-first
	for range later {
		if r2 := <-second; r1.MessageID == 0 || r2.MessageID <= r1.MessageID {
			t.Errorf("the roof stored as %d, a later message as %d: the later message overtook", r1.MessageID, r2.MessageID)
		}
	}
	for range 3 + len(later) { // Matty's reply and notice, Finn's answer, Matty's "noted"s
		h.plat.next(t)
	}
}

// pathCounter is an Observer that counts TurnDone by path.
type pathCounter struct {
	mu    sync.Mutex
	paths map[string]int
}

func (c *pathCounter) EventIn(string)                          {}
func (c *pathCounter) EventOut(string)                         {}
func (c *pathCounter) BrainTurn(string, string, time.Duration) {}
func (c *pathCounter) Delegation(string)                       {}
func (c *pathCounter) OutboxRetry(string)                      {}
func (c *pathCounter) TurnDone(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paths == nil {
		c.paths = map[string]int{}
	}
	c.paths[path]++
}

func (c *pathCounter) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paths[path]
}

// TestTurnsCountedByPath: the Observer hears of each stored turn once, on
// the path it took; a duplicate's is not counted.
func TestTurnsCountedByPath(t *testing.T) {
	var log turnLog
	obs := &pathCounter{}
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "sb.db"), plat: newRecorder("web"), obs: obs}
	h.open(bot("matty", replier(&log, "", nil)))
	// A new session: the turn is queued, and counted once it is stored.
	h.deliver(private("web-ann", "matty", "1", "one"))
	h.plat.next(t)
	until(t, func() bool { return obs.count(gateway.PathQueued) == 1 && h.gw.QueueDepth() == 0 })
	// The session is known and idle: the instant path, counted by the
	// time Deliver returns.
	h.deliver(private("web-ann", "matty", "2", "two"))
	if got := obs.count(gateway.PathInstant); got != 1 {
		t.Errorf("instant turns = %d when Deliver returned; want 1", got)
	}
	h.plat.next(t)
	// A duplicate stores nothing: no count.
	if r := h.deliver(private("web-ann", "matty", "2", "two")); !r.Duplicate {
		t.Fatalf("receipt = %+v; want a duplicate", r)
	}
	if q, i := obs.count(gateway.PathQueued), obs.count(gateway.PathInstant); q != 1 || i != 1 {
		t.Errorf("after the duplicate: %d queued, %d instant; want 1 and 1", q, i)
	}
}
