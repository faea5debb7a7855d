package discord

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Pace is the most messages one bot sends into one channel: Messages per
// Per, as a token bucket (a burst of Messages, then one every
// Per/Messages).
type Pace struct {
	Messages int
	Per      time.Duration
}

// DefaultPace is Discord's limit for posting messages: 5 per 5 s per
// channel.
var DefaultPace = Pace{Messages: 5, Per: 5 * time.Second}

// maxIdleBuckets bounds the pacer's memory: beyond it, buckets that have
// refilled completely (and so hold no state worth keeping) are dropped.
const maxIdleBuckets = 1024

// pacer paces sends per key with token buckets, a rate.Limiter per key.
// Each caller reserves its token at once and then waits its turn, so
// waiting callers are served in the order they arrived.
type pacer struct {
	now   func() time.Time
	limit rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newPacer(p Pace, now func() time.Time) *pacer {
	if p.Messages <= 0 || p.Per <= 0 {
		p = DefaultPace
	}
	return &pacer{
		now:     now,
		limit:   rate.Every(p.Per / time.Duration(p.Messages)),
		burst:   p.Messages,
		buckets: make(map[string]*rate.Limiter),
	}
}

// wait blocks until key may send, or ctx ends. A wait that ends with ctx
// gives its token back, unless a later caller has reserved behind it: that
// caller's turn was set by this one's, so the token stays spent and the
// pace is never exceeded.
func (p *pacer) wait(ctx context.Context, key string) error {
	r := p.reserve(key)
	if err := sleep(ctx, r.DelayFrom(p.now())); err != nil {
		r.CancelAt(p.now())
		return err
	}
	return nil
}

// sleep waits d (nothing when d ≤ 0), or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reserve takes a token for key; the reservation says when to use it.
func (p *pacer) reserve(key string) *rate.Reservation {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if len(p.buckets) > maxIdleBuckets {
		for k, l := range p.buckets {
			if l.TokensAt(now) >= float64(p.burst) {
				delete(p.buckets, k)
			}
		}
	}
	l := p.buckets[key]
	if l == nil {
		l = rate.NewLimiter(p.limit, p.burst)
		p.buckets[key] = l
	}
	return l.ReserveN(now, 1)
}
