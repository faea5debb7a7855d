package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Delivery policy: an entry is tried at most maxAttempts times, waiting
// an exponential backoff with jitter between tries.
const (
	maxAttempts = 8
	baseBackoff = 500 * time.Millisecond
	maxBackoff  = 30 * time.Second
)

// Options configure an Outbox.
type Options struct {
	Store Store
	// Sender finds the platform of an entry; ok is false when none of
	// that name is running (the entry then waits for a Wake).
	Sender   func(platform string) (Sender, bool)
	Logger   *slog.Logger
	Observer Observer
}

// Outbox delivers entries through their platforms. Its zero value is not
// usable; make one with New.
type Outbox struct {
	store  Store
	sender func(string) (Sender, bool)
	log    *slog.Logger
	obs    Observer

	// ctx ends when the outbox closes; marks is ctx without its end, for
	// the records of deliveries, which are kept even while closing.
	ctx    context.Context
	cancel context.CancelFunc
	marks  context.Context
	wg     sync.WaitGroup

	mu      sync.Mutex
	lanes   map[laneKey]*lane
	running int
	// settled remembers the entries delivered or given up lately (the
	// newest settledKeep, oldest first in order), so that one queued
	// again from the store after it left its lane is not delivered twice
	// (see lane.insert).
	settled map[int64]struct{}
	order   []int64
}

// settledKeep is how many settled entries an outbox remembers: more than
// can be read from the store as pending while they are delivered.
const settledKeep = 4096

// laneKey orders deliveries: one chat on one platform gets its messages
// in the order they were stored, whichever bot wrote them.
type laneKey struct{ platform, chat string }

// lane is the queue of one chat. A running lane has a worker delivering
// items[0]; a parked one waits for its recipient (Wake).
type lane struct {
	items   []Entry
	running bool
	parked  bool
	// wakes counts Wake calls, so a wake that arrives while a delivery
	// is failing as unreachable is not lost.
	wakes int
	// parkedAt is when the lane last parked. expiry, set while parked on
	// a ParkLimiter platform, fails the entries that are due when it
	// fires; gen tells it whether it is still the lane's current timer.
	parkedAt time.Time
	expiry   *time.Timer
	gen      int
}

// New returns an outbox; Start queues what a previous run left.
func New(opts Options) *Outbox {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	o := &Outbox{store: opts.Store, sender: opts.Sender, log: opts.Logger, obs: opts.Observer, lanes: make(map[laneKey]*lane),
		settled: make(map[int64]struct{})}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	o.marks = context.WithoutCancel(o.ctx)
	return o
}

// Start queues the entries the store holds undelivered.
func (o *Outbox) Start(ctx context.Context) (int, error) {
	pending, err := o.store.PendingOutbox(ctx)
	if err != nil {
		return 0, fmt.Errorf("outbox start: %w", err)
	}
	o.Enqueue(pending...)
	return len(pending), nil
}

// Enqueue adds stored entries to their lanes, each after the entries of
// its lane stored before it.
func (o *Outbox) Enqueue(entries ...Entry) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range entries {
		if _, done := o.settled[e.OutboxID]; done && e.OutboxID != 0 {
			continue
		}
		key := laneKey{e.Platform, e.ChatID}
		l := o.lanes[key]
		if l == nil {
			l = &lane{}
			o.lanes[key] = l
		}
		l.insert(e)
		if o.startLocked(l) {
			go o.work(key, l)
		}
	}
}

// insert puts e in its place, by the order its message was stored in
// (entries stored concurrently may arrive out of order). The head of a
// running lane is being delivered and keeps its place. An entry the lane
// holds already (queued again from the store: on a database several
// processes share, a chat's undelivered entries are read when its
// recipient connects) is not added twice.
func (l *lane) insert(e Entry) {
	for _, have := range l.items {
		if have.OutboxID == e.OutboxID && e.OutboxID != 0 {
			return
		}
	}
	first := 0
	if l.running {
		first = 1
	}
	i := len(l.items)
	for i > first && e.before(l.items[i-1]) {
		i--
	}
	l.items = append(l.items, Entry{})
	copy(l.items[i+1:], l.items[i:])
	l.items[i] = e
}

// before says whether e goes out before f: its message was stored first.
// Entry IDs alone would not do: a store upgrade may have refiled older
// messages' entries under new IDs.
func (e Entry) before(f Entry) bool {
	if e.MessageID != f.MessageID {
		return e.MessageID < f.MessageID
	}
	return e.OutboxID < f.OutboxID
}

// Wake resumes the parked lanes of the given chats: their recipient can
// be reached again.
func (o *Outbox) Wake(platform string, chats ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, chat := range chats {
		key := laneKey{platform, chat}
		l, ok := o.lanes[key]
		if !ok {
			continue
		}
		l.wakes++
		if !l.parked {
			continue
		}
		l.parked = false
		l.gen++
		if l.expiry != nil {
			l.expiry.Stop()
			l.expiry = nil
		}
		if o.startLocked(l) {
			go o.work(key, l)
		}
	}
}

// startLocked marks the lane's worker started if it needs one; the
// caller then starts it. Callers hold mu.
func (o *Outbox) startLocked(l *lane) bool {
	if l.running || l.parked || len(l.items) == 0 || o.ctx.Err() != nil {
		return false
	}
	l.running = true
	o.running++
	o.wg.Add(1)
	return true
}

// stopLocked ends a lane's run, forgetting the lane if it is empty.
// Callers hold mu.
func (o *Outbox) stopLocked(key laneKey, l *lane) {
	if len(l.items) == 0 {
		delete(o.lanes, key)
	}
	l.running = false
	o.running--
}

// work delivers a lane's entries until it is empty or parked.
func (o *Outbox) work(key laneKey, l *lane) {
	defer o.wg.Done()
	o.mu.Lock()
	for {
		if len(l.items) == 0 || o.ctx.Err() != nil {
			o.stopLocked(key, l)
			o.mu.Unlock()
			return
		}
		e := l.items[0]
		wakes := l.wakes
		o.mu.Unlock()

		parked := o.deliver(&e)

		o.mu.Lock()
		if parked {
			// The head keeps what this try learned: the parts it sent
			// and the attempts it made.
			l.items[0] = e
		}
		if parked && l.wakes != wakes && o.ctx.Err() == nil {
			continue // the recipient came back while we failed to reach it
		}
		if parked {
			o.parkLocked(key, l)
			o.stopLocked(key, l)
			o.mu.Unlock()
			return
		}
		l.items = l.items[1:]
		o.settleLocked(e.OutboxID)
	}
}

// settleLocked remembers that the entry id was delivered or given up.
// Callers hold mu.
func (o *Outbox) settleLocked(id int64) {
	if id == 0 {
		return
	}
	if len(o.order) >= settledKeep {
		delete(o.settled, o.order[0])
		o.order = o.order[1:]
	}
	o.settled[id] = struct{}{}
	o.order = append(o.order, id)
}

// deliver tries one entry until it is sent, failed for good, or its
// recipient is unreachable (parked is then true and it stays pending). It
// records in e the parts sent and the attempts made.
func (o *Outbox) deliver(e *Entry) (parked bool) {
	log := o.log.With("outbox", e.OutboxID, "platform", e.Platform, "bot", e.Bot)
	for {
		p, ok := o.sender(e.Platform)
		if !ok {
			log.Warn("platform not running; reply kept for later")
			return true
		}
		id, err := o.sendParts(p, e)
		if err == nil {
			o.obs.EventOut(e.Platform)
			if err := o.store.MarkSent(o.marks, e.OutboxID, id); err != nil {
				log.Error("mark sent", "err", err)
			}
			return false
		}
		if o.ctx.Err() != nil {
			return true
		}
		var ra *RetryAfterError
		var wait time.Duration
		switch {
		case errors.Is(err, ErrUnreachable):
			return true
		case errors.Is(err, ErrPermanent):
			o.fail(log, *e, err)
			return false
		case errors.As(err, &ra):
			wait = ra.After
		default:
			e.Attempt++
			if e.Attempt >= maxAttempts {
				o.fail(log, *e, err)
				return false
			}
			if err := o.store.MarkAttempt(o.marks, e.OutboxID, err.Error()); err != nil {
				log.Error("mark attempt", "err", err)
			}
			wait = backoff(e.Attempt)
		}
		o.obs.OutboxRetry(e.Platform)
		log.Info("delivery retry", "attempt", e.Attempt, "wait", wait, "err", err)
		select {
		case <-o.ctx.Done():
			return true
		case <-time.After(wait):
		}
	}
}

// sendParts sends e, split to the platform's length limit, from the first
// part not yet delivered. Progress is stored after each part, so a retry
// or a restart never sends a part twice.
func (o *Outbox) sendParts(p Sender, e *Entry) (string, error) {
	parts := []string{e.Text}
	if l, ok := p.(MessageLimiter); ok {
		parts = SplitText(e.Text, l.MaxMessageLength())
	}
	var id string
	for i := e.PartsSent; i < len(parts); i++ {
		part := *e
		part.Text, part.Part = parts[i], i
		if i > 0 {
			part.ReplyTo = ""
		}
		var err error
		if id, err = p.Send(o.ctx, part); err != nil {
			return "", err
		}
		if i < len(parts)-1 {
			e.PartsSent = i + 1
			if err := o.store.MarkPart(o.marks, e.OutboxID, i+1, id); err != nil {
				o.log.Error("mark part sent", "outbox", e.OutboxID, "err", err)
			}
		}
	}
	return id, nil
}

func (o *Outbox) fail(log *slog.Logger, e Entry, err error) {
	log.Error("delivery failed; kept in outbox as failed", "attempts", e.Attempt, "err", err)
	if err := o.store.MarkFailed(o.marks, e.OutboxID, err.Error()); err != nil {
		log.Error("mark failed", "err", err)
	}
}

// backoff is the wait before retry n (1-based): exponential with jitter.
func backoff(n int) time.Duration {
	d := min(baseBackoff<<min(n-1, 10), maxBackoff)
	return d/2 + rand.N(d/2+1)
}

// Close waits until no lane is delivering or ctx ends, then stops every
// worker. Entries not delivered stay pending in the store.
func (o *Outbox) Close(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	var err error
wait:
	for {
		o.mu.Lock()
		busy := o.running
		o.mu.Unlock()
		if busy == 0 {
			break
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
			break wait
		case <-t.C:
		}
	}
	o.mu.Lock()
	o.cancel() // under mu: startLocked and expire check ctx under it
	for _, l := range o.lanes {
		if l.expiry != nil {
			l.expiry.Stop()
		}
	}
	o.mu.Unlock()
	o.wg.Wait()
	return err
}

type nopObserver struct{}

func (nopObserver) EventOut(string)    {}
func (nopObserver) OutboxRetry(string) {}
