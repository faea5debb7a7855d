package outbox

import (
	"fmt"
	"time"
)

// parkLocked marks a lane parked: its recipient is unreachable. On a
// ParkLimiter platform its entries expire. Callers hold mu.
func (o *Outbox) parkLocked(key laneKey, l *lane) {
	l.parked = true
	l.parkedAt = time.Now()
	l.gen++
	o.armExpiryLocked(key, l)
}

// maxParked is the platform's ParkLimiter answer, 0 for none.
func (o *Outbox) maxParked(platform string) time.Duration {
	if p, ok := o.sender(platform); ok {
		if pl, ok := p.(ParkLimiter); ok {
			return pl.MaxParked()
		}
	}
	return 0
}

// expiresAt is when e, waiting in parked lane l, expires after d.
func expiresAt(l *lane, e Entry, d time.Duration) time.Time {
	from := e.Time
	if l.parkedAt.After(from) {
		from = l.parkedAt
	}
	return from.Add(d)
}

// armExpiryLocked sets the parked lane's timer for its first entry to
// expire, if its platform limits parking. Callers hold mu.
func (o *Outbox) armExpiryLocked(key laneKey, l *lane) {
	d := o.maxParked(key.platform)
	if d <= 0 || len(l.items) == 0 {
		return
	}
	first := expiresAt(l, l.items[0], d)
	for _, e := range l.items[1:] {
		if at := expiresAt(l, e, d); at.Before(first) {
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
func (o *Outbox) expire(key laneKey, l *lane, gen int, d time.Duration) {
	o.mu.Lock()
	if o.lanes[key] != l || l.gen != gen || !l.parked || l.running || o.ctx.Err() != nil {
		o.mu.Unlock()
		return
	}
	now := time.Now()
	var due, keep []Entry
	for _, e := range l.items {
		if expiresAt(l, e, d).After(now) {
			keep = append(keep, e)
		} else {
			due = append(due, e)
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
	o.wg.Add(1) // before Close's cancel, which takes mu
	o.mu.Unlock()
	defer o.wg.Done()
	reason := fmt.Sprintf("recipient unreachable for %s", d)
	o.log.Info("undelivered replies expired", "platform", key.platform, "chat", key.chat, "entries", len(due), "after", d)
	for _, e := range due {
		if err := o.store.MarkFailed(o.marks, e.OutboxID, reason); err != nil {
			o.log.Error("mark failed", "outbox", e.OutboxID, "err", err)
		}
	}
}
