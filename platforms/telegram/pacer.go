package telegram

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
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

// limit is r as a rate.Limit: N tokens earned over Per. A Rate with Per ≤ 0
// does not wait at all.
func (r Rate) limit() rate.Limit {
	if r.Per <= 0 {
		return rate.Inf
	}
	return rate.Limit(float64(r.N) / r.Per.Seconds())
}

type chatKey struct{ bot, chat string }

// pruneEvery is how many reservations pass between two prunings of the
// buckets that have refilled.
const pruneEvery = 1024

// pacer holds the token buckets of every bot, chat and group: a
// rate.Limiter per key, made full when first needed.
type pacer struct {
	limits Limits
	now    func() time.Time

	mu     sync.Mutex
	chats  map[chatKey]*rate.Limiter
	groups map[chatKey]*rate.Limiter
	bots   map[string]*rate.Limiter
	calls  int
}

func newPacer(l Limits, now func() time.Time) *pacer {
	return &pacer{
		limits: l, now: now,
		chats:  make(map[chatKey]*rate.Limiter),
		groups: make(map[chatKey]*rate.Limiter),
		bots:   make(map[string]*rate.Limiter),
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
// each had one; otherwise it takes none and returns how long to wait
// before asking again. (Taking none keeps a send that waits for its chat
// from holding a token of its bot's bucket meanwhile, which would hold up
// the bot's other chats.)
func (p *pacer) reserve(bot, chat string, group bool) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.calls++
	if p.calls%pruneEvery == 0 {
		p.pruneLocked(now)
	}
	key := chatKey{bot, chat}
	limiters := make([]*rate.Limiter, 0, 3)
	limiters = appendLimiter(limiters, p.chats, key, p.limits.PerChat)
	limiters = appendLimiter(limiters, p.bots, bot, p.limits.PerBot)
	if group {
		limiters = appendLimiter(limiters, p.groups, key, p.limits.PerGroup)
	}
	reservations := make([]*rate.Reservation, len(limiters))
	var wait time.Duration
	for i, l := range limiters {
		reservations[i] = l.ReserveN(now, 1)
		wait = max(wait, reservations[i].DelayFrom(now))
	}
	if wait > 0 {
		// Under p.mu no other reservation came between: cancelling
		// gives each bucket back exactly the token it gave.
		for _, r := range reservations {
			r.CancelAt(now)
		}
	}
	return wait
}

// appendLimiter appends m's limiter for key under r to limiters, making a
// full one when there is none; a Rate with N ≤ 0 does not limit and adds
// nothing.
func appendLimiter[K comparable](limiters []*rate.Limiter, m map[K]*rate.Limiter, key K, r Rate) []*rate.Limiter {
	if r.N <= 0 {
		return limiters
	}
	l := m[key]
	if l == nil {
		l = rate.NewLimiter(r.limit(), r.N)
		m[key] = l
	}
	return append(limiters, l)
}

// pruneLocked forgets buckets that have refilled: a new one starts full,
// so nothing changes but memory.
func (p *pacer) pruneLocked(now time.Time) {
	pruneFull(p.chats, now)
	pruneFull(p.groups, now)
	pruneFull(p.bots, now)
}

// pruneFull deletes m's limiters that hold a full burst at now.
func pruneFull[K comparable](m map[K]*rate.Limiter, now time.Time) {
	for k, l := range m {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(m, k)
		}
	}
}
