package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Outbox delivery policy.
const (
	maxAttempts = 8
	baseBackoff = 500 * time.Millisecond
	maxBackoff  = 30 * time.Second
)

// ParkLimiter is implemented by platforms whose undelivered messages need
// not wait for their recipient forever. An outbox entry that has waited
// MaxParked (when positive) for an unreachable recipient — counted from
// when it was made or when the recipient became unreachable, whichever is
// later — is marked failed and forgotten. The web implements it: a visitor who left is as likely never
// to come back, and one who does sees the reply in the chat's history.
type ParkLimiter interface {
	MaxParked() time.Duration
}

// laneKey orders deliveries: one chat on one platform gets its messages in
// the order they were stored, whichever bot wrote them.
type laneKey struct{ platform, chat string }

// lane is the queue of one laneKey. A lane is parked when its platform
// said the recipient is unreachable; it resumes when woken.
type lane struct {
	items   []Outbound
	running bool
	parked  bool
	// wakes counts wake calls, so a wake that arrives while a delivery is
	// failing as unreachable is not lost.
	wakes int
	// parkedAt is when the lane last parked. expiry, set while parked on
	// a ParkLimiter platform, fails the entries that are due when it
	// fires; gen tells it whether it is still the lane's current timer.
	parkedAt time.Time
	expiry   *time.Timer
	gen      int
}

// outbox delivers stored replies through their platforms, in order per
// chat, retrying with backoff and honouring rate-limit waits. Every entry
// is in the store before it gets here (its reply stored; the entry's own
// row may come later, but the store recovers it from the reply), so a
// crash loses nothing: Start re-enqueues what was pending.
type outbox struct {
	store    Store
	obs      Observer
	log      *slog.Logger
	platform func(string) (Platform, bool)
	spawn    func(func()) // starts a lane's worker (pool.Go)

	ctx    context.Context
	cancel context.CancelFunc
	// marks is ctx without its cancellation, for the records of
	// deliveries, which are kept even while shutting down.
	marks context.Context
	wg    sync.WaitGroup

	mu      sync.Mutex
	lanes   map[laneKey]*lane
	running int
}

func newOutbox(store Store, log *slog.Logger, platform func(string) (Platform, bool), obs Observer, spawn func(func())) *outbox {
	o := &outbox{store: store, obs: obs, log: log, platform: platform, spawn: spawn, lanes: make(map[laneKey]*lane)}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	o.marks = context.WithoutCancel(o.ctx)
	return o
}

// enqueue adds a stored entry to its lane.
func (o *outbox) enqueue(m Outbound) {
	key := laneKey{m.Platform, m.ChatID}
	o.mu.Lock()
	l := o.lanes[key]
	if l == nil {
		l = &lane{}
		o.lanes[key] = l
	}
	l.items = append(l.items, m)
	start := o.startLocked(l)
	first := start && len(l.items) == 1
	o.mu.Unlock()
	if !start {
		return
	}
	if first {
		if p, ok := o.asyncSender(m); ok {
			o.sendAsync(p, key, l, m)
			return
		}
	}
	o.spawn(func() { o.work(key, l) })
}

// asyncSender is m's platform as an AsyncSender, if it is one and m goes
// out whole in one try: a first attempt, in one part.
func (o *outbox) asyncSender(m Outbound) (AsyncSender, bool) {
	if m.Attempt > 0 || m.PartsSent > 0 {
		return nil, false
	}
	p, ok := o.platform(m.Platform)
	if !ok {
		return nil, false
	}
	as, ok := p.(AsyncSender)
	if !ok {
		return nil, false
	}
	if l, ok := p.(MessageLimiter); ok && len(SplitText(m.Text, l.MaxMessageLength())) > 1 {
		return nil, false
	}
	return as, true
}

// sendAsync hands m, the first entry of lane l, which startLocked marked
// running, to its platform without a worker. When it has gone out the
// lane moves on (a worker takes what was queued behind it meanwhile); if
// it has not, the lane's worker tries it again the usual way (Send, with
// retries, parking and failing as in deliver), so an error here loses
// nothing.
func (o *outbox) sendAsync(p AsyncSender, key laneKey, l *lane, m Outbound) {
	// The callback keeps what it needs of m, not m.
	e := entryOf(m)
	p.SendAsync(o.ctx, m, func(err error) {
		if err != nil {
			o.spawn(func() { o.work(key, l) })
			return
		}
		// A mark without a platform ID is a lazy write: it does not wait.
		o.sent(e, "")
		o.mu.Lock()
		l.items = l.items[1:]
		if len(l.items) > 0 && o.ctx.Err() == nil {
			o.mu.Unlock()
			o.spawn(func() { o.work(key, l) })
			return
		}
		o.stopLocked(key, l)
		o.mu.Unlock()
		o.wg.Done()
	})
}

// stopLocked ends lane l's run: its worker (or hand-over) is done with it,
// and it is forgotten if it has nothing left. The run's wg.Done is the
// caller's. Callers hold mu.
func (o *outbox) stopLocked(key laneKey, l *lane) {
	if len(l.items) == 0 {
		delete(o.lanes, key)
	}
	l.running = false
	o.running--
}

// entry names an outbox entry: its ID, platform and bot.
type entry struct {
	id            int64
	platform, bot string
}

func entryOf(m Outbound) entry { return entry{m.OutboxID, m.Platform, m.Bot} }

// logFor is the log of e's delivery.
func (o *outbox) logFor(e entry) logger {
	return with(o.log, "outbox", e.id, "platform", e.platform, "bot", e.bot)
}

// sent records e delivered, as the platform's message id. Recorded even
// while shutting down, or the reply would be sent again on the next start.
func (o *outbox) sent(e entry, id string) {
	o.obs.EventOut(e.platform)
	if err := o.store.MarkSent(o.marks, e.id, id); err != nil {
		o.logFor(e).Error("mark sent", "err", err)
	}
}

// wake resumes the parked lanes of the given chats.
func (o *outbox) wake(platform string, chats []string) {
	type laneOf struct {
		key laneKey
		l   *lane
	}
	var started []laneOf
	o.mu.Lock()
	defer func() {
		o.mu.Unlock()
		for _, s := range started {
			o.spawn(func() { o.work(s.key, s.l) })
		}
	}()
	for _, chat := range chats {
		key := laneKey{platform, chat}
		l, ok := o.lanes[key]
		if !ok {
			continue
		}
		l.wakes++
		if l.parked {
			l.parked = false
			l.gen++
			if l.expiry != nil {
				l.expiry.Stop()
				l.expiry = nil
			}
			if o.startLocked(l) {
				started = append(started, laneOf{key, l})
			}
		}
	}
}

// parkLocked marks a lane parked: its recipient is unreachable. On a
// ParkLimiter platform its entries expire. Callers hold mu.
func (o *outbox) parkLocked(key laneKey, l *lane) {
	l.parked = true
	l.parkedAt = time.Now()
	l.gen++
	o.armExpiryLocked(key, l)
}

// maxParked is the platform's ParkLimiter answer, 0 for none.
func (o *outbox) maxParked(platform string) time.Duration {
	if p, ok := o.platform(platform); ok {
		if pl, ok := p.(ParkLimiter); ok {
			return pl.MaxParked()
		}
	}
	return 0
}

// expiresAt is when m, waiting in parked lane l, expires after d.
func expiresAt(l *lane, m Outbound, d time.Duration) time.Time {
	from := m.Time
	if l.parkedAt.After(from) {
		from = l.parkedAt
	}
	return from.Add(d)
}

// armExpiryLocked sets the parked lane's timer for its first entry to
// expire, if its platform limits parking. Callers hold mu.
func (o *outbox) armExpiryLocked(key laneKey, l *lane) {
	d := o.maxParked(key.platform)
	if d <= 0 || len(l.items) == 0 {
		return
	}
	first := expiresAt(l, l.items[0], d)
	for _, m := range l.items[1:] {
		if at := expiresAt(l, m, d); at.Before(first) {
			first = at
		}
	}
	gen := l.gen
	l.expiry = time.AfterFunc(time.Until(first), func() { o.expire(key, l, gen, d) })
}

// expire fails the entries of a parked lane that have waited d, and
// forgets the lane when none is left. gen is the lane's generation when
// the timer was set: a timer that fires after a wake (or a newer park)
// does nothing.
func (o *outbox) expire(key laneKey, l *lane, gen int, d time.Duration) {
	o.mu.Lock()
	if o.lanes[key] != l || l.gen != gen || !l.parked || l.running || o.ctx.Err() != nil {
		o.mu.Unlock()
		return
	}
	now := time.Now()
	var due, keep []Outbound
	for _, m := range l.items {
		if expiresAt(l, m, d).After(now) {
			keep = append(keep, m)
		} else {
			due = append(due, m)
		}
	}
	l.expiry = nil
	if len(keep) == 0 {
		delete(o.lanes, key)
	} else {
		l.items = keep
		l.gen++
		o.armExpiryLocked(key, l)
	}
	if len(due) == 0 {
		o.mu.Unlock()
		return
	}
	o.wg.Add(1) // before close's cancel, which takes mu
	o.mu.Unlock()
	defer o.wg.Done()
	reason := fmt.Sprintf("recipient unreachable for %s", d)
	o.log.Info("undelivered replies expired", "platform", key.platform, "chat", key.chat, "entries", len(due), "after", d)
	for _, m := range due {
		if err := o.store.MarkFailed(o.marks, m.OutboxID, reason); err != nil {
			o.log.Error("mark failed", "outbox", m.OutboxID, "err", err)
		}
	}
}

// startLocked marks the lane's worker started if it has none; the caller
// then starts it (o.work, through spawn), once it has let go of mu. Callers hold mu.
func (o *outbox) startLocked(l *lane) bool {
	if l.running || l.parked || o.ctx.Err() != nil {
		return false
	}
	l.running = true
	o.running++
	o.wg.Add(1)
	return true
}

// work delivers a lane's entries until it is empty or parked.
func (o *outbox) work(key laneKey, l *lane) {
	defer o.wg.Done()
	o.mu.Lock()
	for {
		if len(l.items) == 0 || o.ctx.Err() != nil {
			o.stopLocked(key, l)
			o.mu.Unlock()
			return
		}
		m := l.items[0]
		wakes := l.wakes
		o.mu.Unlock()

		parked := o.deliver(m)

		o.mu.Lock()
		if parked && l.wakes != wakes && o.ctx.Err() == nil {
			continue // the recipient came back while we were failing to reach it
		}
		if parked {
			o.parkLocked(key, l)
			o.stopLocked(key, l)
			o.mu.Unlock()
			return
		}
		l.items = l.items[1:]
	}
}

// deliver tries one entry until it is sent, failed for good, or the
// recipient is unreachable (parked is then true and the entry stays
// pending).
func (o *outbox) deliver(m Outbound) (parked bool) {
	log := o.logFor(entryOf(m))
	for {
		p, ok := o.platform(m.Platform)
		if !ok {
			log.Warn("platform not running; reply kept for later")
			return true
		}
		id, err := o.sendParts(p, &m)
		if err == nil {
			o.sent(entryOf(m), id)
			return false
		}
		if o.ctx.Err() != nil {
			return true
		}
		var ra *RetryAfterError
		wait := time.Duration(0)
		switch {
		case errors.Is(err, ErrUnreachable):
			return true
		case errors.Is(err, ErrPermanent):
			o.fail(log, m, err)
			return false
		case errors.As(err, &ra):
			wait = ra.After
		default:
			m.Attempt++
			if m.Attempt >= maxAttempts {
				o.fail(log, m, err)
				return false
			}
			if err := o.store.MarkAttempt(o.ctx, m.OutboxID, err.Error()); err != nil {
				log.Error("mark attempt", "err", err)
			}
			wait = backoff(m.Attempt)
		}
		o.obs.OutboxRetry(m.Platform)
		log.Info("delivery retry", "attempt", m.Attempt, "wait", wait, "err", err)
		select {
		case <-o.ctx.Done():
			return true
		case <-time.After(wait):
		}
	}
}

// sendParts sends m, split to the platform's length limit, from the first
// part not yet delivered. Progress is stored after each part, so a retry or
// a restart never sends a part twice.
func (o *outbox) sendParts(p Platform, m *Outbound) (string, error) {
	parts := []string{m.Text}
	if l, ok := p.(MessageLimiter); ok {
		parts = SplitText(m.Text, l.MaxMessageLength())
	}
	var id string
	for i := m.PartsSent; i < len(parts); i++ {
		part := *m
		part.Text, part.Part = parts[i], i
		if i > 0 {
			part.ReplyTo = ""
		}
		var err error
		if id, err = p.Send(o.ctx, part); err != nil {
			return "", err
		}
		if i < len(parts)-1 {
			m.PartsSent = i + 1
			if err := o.store.MarkPart(o.marks, m.OutboxID, i+1, id); err != nil {
				o.log.Error("mark part sent", "outbox", m.OutboxID, "err", err)
			}
		}
	}
	return id, nil
}

func (o *outbox) fail(log logger, m Outbound, err error) {
	log.Error("delivery failed; kept in outbox as failed", "attempts", m.Attempt, "err", err)
	if err := o.store.MarkFailed(o.ctx, m.OutboxID, err.Error()); err != nil {
		log.Error("mark failed", "err", err)
	}
}

// backoff is the wait before retry n (1-based): exponential with jitter.
func backoff(n int) time.Duration {
	d := baseBackoff << min(n-1, 10)
	d = min(d, maxBackoff)
	return d/2 + rand.N(d/2+1)
}

// close waits until no lane is delivering or ctx ends, then stops every
// worker. Entries not delivered stay pending in the store.
func (o *outbox) close(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	var err error
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
		case <-t.C:
			continue
		}
		break
	}
	o.mu.Lock()
	o.cancel() // under mu: see expire and startLocked
	for _, l := range o.lanes {
		if l.expiry != nil {
			l.expiry.Stop()
		}
	}
	o.mu.Unlock()
	o.wg.Wait()
	return err
}
