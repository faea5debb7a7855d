package telegram

import (
	"context"
	"sync"
	"time"
)

// Rate allows N messages per Per, in bursts of up to N (a token bucket
// holding N tokens, refilled evenly over Per). In Limits the zero Rate
// takes the default, and a Rate with N < 0 does not limit.
type Rate struct {
	N   int
	Per time.Duration
}

// Limits are the outbound rates Send keeps to. Telegram's documented
// limits are the defaults.
type Limits struct {
	// PerChat paces each chat (default 1 per second).
	PerChat Rate
	// PerGroup paces each group chat further (default 20 per minute).
	PerGroup Rate
	// PerBot paces all of a bot's messages (default 30 per second).
	PerBot Rate
}

// DefaultLimits are Telegram's broadcast limits.
var DefaultLimits = Limits{
	PerChat:  Rate{N: 1, Per: time.Second},
	PerGroup: Rate{N: 20, Per: time.Minute},
	PerBot:   Rate{N: 30, Per: time.Second},
}

// withDefaults fills the zero rates of l from DefaultLimits.
func (l Limits) withDefaults() Limits {
	for _, r := range []struct{ set, def *Rate }{
		{&l.PerChat, &DefaultLimits.PerChat},
		{&l.PerGroup, &DefaultLimits.PerGroup},
		{&l.PerBot, &DefaultLimits.PerBot},
	} {
		if *r.set == (Rate{}) {
			*r.set = *r.def
		}
	}
	return l
}

// bucket is a token bucket's state.
type bucket struct {
	tokens float64
	at     time.Time
}

// refill brings b up to now under r.
func (b *bucket) refill(r Rate, now time.Time) {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens = min(float64(r.N), b.tokens+float64(r.N)*elapsed.Seconds()/r.Per.Seconds())
	}
	b.at = now
}

// need is how long until b holds one token (0 when it does).
func (b *bucket) need(r Rate) time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(r.Per) / float64(r.N))
}

type chatKey struct{ bot, chat string }

// pacer holds the token buckets of every bot, chat and group.
type pacer struct {
	limits Limits
	now    func() time.Time

	mu     sync.Mutex
	chats  map[chatKey]*bucket
	groups map[chatKey]*bucket
	bots   map[string]*bucket
	calls  int
}

func newPacer(l Limits, now func() time.Time) *pacer {
	return &pacer{
		limits: l, now: now,
		chats:  make(map[chatKey]*bucket),
		groups: make(map[chatKey]*bucket),
		bots:   make(map[string]*bucket),
	}
}

// wait blocks until bot may send to chat, or ctx ends.
func (p *pacer) wait(ctx context.Context, bot, chat string, group bool) error {
	for {
		d := p.reserve(bot, chat, group)
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// reserve takes a token from every bucket that applies and returns 0 when
// each has one; otherwise it takes none and returns how long to wait
// before asking again.
func (p *pacer) reserve(bot, chat string, group bool) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.calls++
	if p.calls%1024 == 0 {
		p.pruneLocked(now)
	}
	type use struct {
		b *bucket
		r Rate
	}
	key := chatKey{bot, chat}
	uses := []use{
		{bucketOf(p.chats, key, p.limits.PerChat, now), p.limits.PerChat},
		{bucketOf(p.bots, bot, p.limits.PerBot, now), p.limits.PerBot},
	}
	if group {
		uses = append(uses, use{bucketOf(p.groups, key, p.limits.PerGroup, now), p.limits.PerGroup})
	}
	var wait time.Duration
	for _, u := range uses {
		if u.r.N <= 0 {
			continue
		}
		u.b.refill(u.r, now)
		wait = max(wait, u.b.need(u.r))
	}
	if wait > 0 {
		return wait
	}
	for _, u := range uses {
		if u.r.N > 0 {
			u.b.tokens--
		}
	}
	return 0
}

// bucketOf returns m's bucket for key, a full one when new.
func bucketOf[K comparable](m map[K]*bucket, key K, r Rate, now time.Time) *bucket {
	b := m[key]
	if b == nil {
		b = &bucket{tokens: float64(r.N), at: now}
		m[key] = b
	}
	return b
}

// pruneLocked forgets buckets that have refilled: a new one starts full,
// so nothing changes but memory.
func (p *pacer) pruneLocked(now time.Time) {
	prune := func(r Rate, b *bucket) bool {
		b.refill(r, now)
		return b.tokens >= float64(r.N)
	}
	for k, b := range p.chats {
		if prune(p.limits.PerChat, b) {
			delete(p.chats, k)
		}
	}
	for k, b := range p.groups {
		if prune(p.limits.PerGroup, b) {
			delete(p.groups, k)
		}
	}
	for k, b := range p.bots {
		if prune(p.limits.PerBot, b) {
			delete(p.bots, k)
		}
	}
}
