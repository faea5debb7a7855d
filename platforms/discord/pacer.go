package discord

import (
	"context"
	"sync"
	"time"
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

// pacer paces sends per key with token buckets. Tokens may go negative:
// each caller reserves its token at once and then waits its turn, so
// waiting callers are served in the order they arrived.
type pacer struct {
	now      func() time.Time
	burst    float64
	interval time.Duration // time to earn one token

	mu      sync.Mutex
	buckets map[string]*tokenBucket
}

type tokenBucket struct {
	tokens float64
	last   time.Time
}

func newPacer(p Pace, now func() time.Time) *pacer {
	if p.Messages <= 0 || p.Per <= 0 {
		p = DefaultPace
	}
	return &pacer{
		now:      now,
		burst:    float64(p.Messages),
		interval: p.Per / time.Duration(p.Messages),
		buckets:  make(map[string]*tokenBucket),
	}
}

// wait blocks until key may send, or ctx ends (the token is then given
// back).
func (p *pacer) wait(ctx context.Context, key string) error {
	if err := sleep(ctx, p.reserve(key)); err != nil {
		p.unreserve(key)
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

// reserve takes a token for key and says how long to wait before using it.
func (p *pacer) reserve(key string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if len(p.buckets) > maxIdleBuckets {
		for k, b := range p.buckets {
			if p.refill(b, now); b.tokens >= p.burst {
				delete(p.buckets, k)
			}
		}
	}
	b := p.buckets[key]
	if b == nil {
		b = &tokenBucket{tokens: p.burst, last: now}
		p.buckets[key] = b
	}
	p.refill(b, now)
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens * float64(p.interval))
}

// unreserve gives back a token reserve took.
func (p *pacer) unreserve(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b := p.buckets[key]; b != nil {
		b.tokens = min(b.tokens+1, p.burst)
	}
}

// refill adds the tokens earned since b.last.
func (p *pacer) refill(b *tokenBucket, now time.Time) {
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(p.burst, b.tokens+float64(elapsed)/float64(p.interval))
		b.last = now
	}
}
