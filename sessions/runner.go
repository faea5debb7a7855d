package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-chat/switchboard/outbox"
)

// Answerer decides what the bot of a turn says and does: it runs the
// bot's brain, or recognises a hand-off, and returns what to store.
type Answerer interface {
	// Answer returns the turn's outcome; ok is false when ctx ended
	// first, and the turn then stays unanswered for the next start.
	Answer(ctx context.Context, t Turn) (o Outcome, ok bool)
}

// AnswerFunc adapts a function to Answerer.
type AnswerFunc func(ctx context.Context, t Turn) (Outcome, bool)

// Answer implements Answerer.
func (f AnswerFunc) Answer(ctx context.Context, t Turn) (Outcome, bool) { return f(ctx, t) }

// Outbox takes the entries a stored outcome produced.
type Outbox interface {
	Enqueue(entries ...outbox.Entry)
}

// Options configure a Runner.
type Options struct {
	Store    Store
	Answerer Answerer
	Outbox   Outbox
	Logger   *slog.Logger
	// HistoryLimit is how many earlier messages a turn is loaded with
	// (the longest history window of any bot); 20 when nil.
	HistoryLimit func() int
	// Stored, if set, is told of each outcome once it is stored and its
	// messages are queued, with what storing it produced (to tell
	// watchers of the delegations it changed). It runs on the session's
	// worker, which takes no next turn until it returns: keep it short.
	Stored func(Outcome, Done)
}

// defaultHistoryLimit is the history a turn is loaded with when
// Options.HistoryLimit is not set.
const defaultHistoryLimit = 20

// Store failures are retried, holding the session so its order is kept,
// with this backoff until the runner stops.
const (
	retryMin = 50 * time.Millisecond
	retryMax = 5 * time.Second
)

// waitRecheck is how often a turn waiting for another asks the store
// again.
const waitRecheck = time.Second

// Runner answers stored turns: one at a time per session, in the order
// they were stored, and sessions in parallel. The queue is the store:
// Wake only says that a session may have turns, and the session's worker
// asks the store for its oldest unanswered turn until there is none. A
// session has a worker goroutine only while it has turns, so idle
// sessions cost nothing.
type Runner struct {
	store   Store
	answer  Answerer
	outbox  Outbox
	log     *slog.Logger
	history func() int
	stored  func(Outcome, Done)

	// ctx is the parent of every turn; it ends when a drain runs out of
	// time.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// active maps a session with a worker to whether it was woken again
	// since the worker last asked for its next turn.
	active map[string]bool
	idle   chan struct{} // closed when active empties while draining
	// ended is closed, and replaced, whenever a turn ends: turns that
	// wait for another (Turn.WaitsFor) look again then.
	ended chan struct{}
	// finishing holds the turns whose outcome is being stored and queued:
	// a turn stored as answered has not ended until its messages are in
	// the outbox, so a turn after it still waits.
	finishing map[int64]bool
}

// NewRunner returns a runner; Start wakes the sessions a previous run
// left with turns.
func NewRunner(opts Options) *Runner {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.HistoryLimit == nil {
		opts.HistoryLimit = func() int { return defaultHistoryLimit }
	}
	r := &Runner{
		store: opts.Store, answer: opts.Answerer, outbox: opts.Outbox, log: opts.Logger,
		history: opts.HistoryLimit, stored: opts.Stored,
		active: make(map[string]bool), ended: make(chan struct{}), finishing: make(map[int64]bool),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// Start wakes every session with turns not yet answered and returns how
// many there are.
func (r *Runner) Start(ctx context.Context) (int, error) {
	ids, err := r.store.PendingSessions(ctx)
	if err != nil {
		return 0, fmt.Errorf("sessions start: %w", err)
	}
	r.Wake(ids...)
	return len(ids), nil
}

// Wake tells the runner that the sessions have turns to answer: each gets
// a worker unless it has one.
func (r *Runner) Wake(sessionIDs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() != nil {
		return // stopped: the turns stay stored for the next start
	}
	for _, id := range sessionIDs {
		if _, running := r.active[id]; running {
			r.active[id] = true
			continue
		}
		r.active[id] = false
		r.wg.Add(1)
		go r.work(id)
	}
}

// Busy counts the sessions whose turns are being answered.
func (r *Runner) Busy() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.active)
}

// work answers a session's turns until it has none.
func (r *Runner) work(session string) {
	defer r.wg.Done()
	log := r.log.With("session", session)
	for {
		if r.ctx.Err() != nil {
			r.leave(session)
			return
		}
		r.mu.Lock()
		r.active[session] = false
		ended := r.ended
		r.mu.Unlock()

		var t Turn
		var found bool
		if !r.retry(log, "load turn", func() (err error) {
			t, found, err = r.store.NextTurn(r.ctx, session, r.history())
			return err
		}) {
			r.leave(session)
			return
		}
		switch {
		case !found:
			if r.leave(session) {
				return
			}
		case r.waits(t):
			// The turn waited for may run in another process sharing
			// the database, whose end this one does not hear of: look
			// again every so often too.
			recheck := time.NewTimer(waitRecheck)
			select {
			case <-ended:
				recheck.Stop()
			case <-recheck.C:
			case <-r.ctx.Done():
				r.leave(session)
				return
			}
		default:
			// A session whose last turn this was is left at once, unless
			// it was woken meanwhile.
			if more := r.run(log.With("turn", t.Ref.ID), t); !more && r.leave(session) {
				return
			}
		}
	}
}

// waits says whether t must wait for the turn it comes after to end.
func (r *Runner) waits(t Turn) bool {
	if t.WaitsFor != 0 {
		return true
	}
	if t.After == 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.finishing[t.After]
}

// leave ends session's worker unless it was woken since it last looked
// for a turn (false: look again).
func (r *Runner) leave(session string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active[session] && r.ctx.Err() == nil {
		return false
	}
	delete(r.active, session)
	if r.idle != nil && len(r.active) == 0 {
		close(r.idle)
		r.idle = nil
	}
	return true
}

// run answers one turn and stores the outcome, then hands its messages to
// the outbox and wakes the sessions it queued turns in. more says whether
// the session may have turns left.
func (r *Runner) run(log *slog.Logger, t Turn) (more bool) {
	o, ok := r.answer.Answer(r.ctx, t)
	if !ok || r.ctx.Err() != nil {
		return true // stopping: the turn stays unanswered for the next start
	}
	o.Turn = t.Ref
	r.mu.Lock()
	r.finishing[t.Ref.ID] = true
	r.mu.Unlock()
	defer r.end(t.Ref.ID)
	var done Done
	if !r.retry(log, "complete turn", func() (err error) {
		done, err = r.store.CompleteTurn(r.ctx, o)
		return err
	}) {
		return true
	}
	r.outbox.Enqueue(done.Outbox...)
	// Stored before the sessions it queued turns in are woken: a watcher
	// learns of a hand-off being queued before its turn starts running.
	if r.stored != nil {
		r.stored(o, done)
	}
	woken := make([]string, 0, len(done.Turns))
	for _, next := range done.Turns {
		woken = append(woken, next.SessionID)
	}
	r.Wake(woken...)
	return done.More
}

// end marks turn as ended, for the turns waiting on it to look again.
func (r *Runner) end(turn int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.finishing, turn)
	close(r.ended)
	r.ended = make(chan struct{})
}

// retry runs fn until it succeeds or the runner stops; false means it
// stopped, or the turn is gone.
func (r *Runner) retry(log *slog.Logger, what string, fn func() error) bool {
	wait := retryMin
	for {
		err := fn()
		switch {
		case err == nil:
			return true
		case r.ctx.Err() != nil:
			return false
		case errors.Is(err, ErrNotFound):
			log.Error(what+" failed; giving up", "err", err)
			return false
		}
		log.Error(what+" failed; retrying", "err", err, "wait", wait)
		select {
		case <-r.ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
	}
}

// Drain waits until no session has turns left or ctx ends. When ctx ends
// first, running turns are cancelled and no new one starts: whatever is
// left stays stored and runs on the next start. A brain that ignores its
// cancellation is left behind after a second.
func (r *Runner) Drain(ctx context.Context) error {
	r.mu.Lock()
	var idle chan struct{}
	if len(r.active) > 0 {
		idle = make(chan struct{})
		r.idle = idle
	}
	r.mu.Unlock()

	var err error
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	r.mu.Lock()
	r.cancel() // under mu: Wake starts no worker from now on
	r.mu.Unlock()
	stopped := make(chan struct{})
	go func() { r.wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Second):
		r.log.Warn("a brain turn did not stop when cancelled; leaving it behind")
	}
	return err
}
