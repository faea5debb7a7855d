package delegation

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Limits are the brakes on hand-offs (bots.yaml gateway.delegation, plus
// the pair rate limit that stops two bots ping-ponging).
type Limits struct {
	// MaxDepth is the longest chain: a user's hand-off has depth 1.
	MaxDepth int
	// Cooldown separates hand-offs from one bot to another for one user.
	Cooldown time.Duration
	// PairBurst hand-offs between two bots (either way) for one user
	// within PairWindow pause the pair, for that user, for PairPause.
	// Counting per user keeps one user's runaway chain from blocking
	// everyone else's hand-offs (delegation never crosses users).
	PairBurst  int
	PairWindow time.Duration
	PairPause  time.Duration
}

// DefaultLimits are SPEC §2's defaults with the pair limit of SPEC §5.
var DefaultLimits = Limits{MaxDepth: 3, Cooldown: 30 * time.Second, PairBurst: 20, PairWindow: time.Minute, PairPause: time.Minute}

// Request is a hand-off to check.
type Request struct {
	From, To         string
	FromName, ToName string
	User             string
	// Chain lists the bots of the delegations above this one, root first
	// (empty for a user's own hand-off); it is read from stored records.
	Chain []string
	// Depth is the depth the new delegation would have.
	Depth int
	// Allowed is whether To is in From's allow list.
	Allowed bool
	// Public is whether either bot is public.
	Public bool
	// Programmatic hand-offs (the API) skip the per-user cooldown, which
	// exists to stop chatty chains, not scripted callers; the pair rate
	// limit still applies.
	Programmatic bool
	// Help says the request is for help (KindHelp), which only changes
	// the words of a refusal: the limits are those of a hand-off.
	Help bool
}

// Refusal codes.
const (
	RefusedDepth    = "max_depth"
	RefusedLoop     = "loop"
	RefusedCooldown = "cooldown"
	RefusedAllow    = "not_allowed"
	RefusedPublic   = "public"
	RefusedPaused   = "paused"
	RefusedUnknown  = "unknown_bot"
	// RefusedInputs: an input the hand-off names is not there.
	RefusedInputs = "inputs"
)

// Refusal says why a hand-off was refused; Reason is the sentence the
// asking bot says to the user.
type Refusal struct {
	Code   string
	Reason string
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Reason }

// Policy applies Limits. Its memory of recent hand-offs (for cooldowns and
// pair rates) lives in the process; a restart forgets it, which only ever
// allows more. It is safe for concurrent use.
type Policy struct {
	now func() time.Time

	mu     sync.Mutex
	limits Limits
	last   map[[3]string]time.Time  // (from, to, user) → last hand-off
	pairs  map[[3]string]*pairState // (bot, bot, user)
}

type pairState struct {
	times       []time.Time
	pausedUntil time.Time
}

// NewPolicy returns a policy; now is the clock (time.Now when nil).
func NewPolicy(l Limits, now func() time.Time) *Policy {
	if now == nil {
		now = time.Now
	}
	return &Policy{now: now, limits: l, last: make(map[[3]string]time.Time), pairs: make(map[[3]string]*pairState)}
}

// SetLimits replaces the limits (configuration reload).
func (p *Policy) SetLimits(l Limits) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limits = l
}

// Admit checks r and, when it passes, records it against the cooldown and
// the pair rate in the same step. A refusal is a *Refusal.
func (p *Policy) Admit(r Request) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, now := p.limits, p.now()
	w := handoffWords
	if r.Help {
		w = helpWords
	}
	switch {
	case r.Public:
		return &Refusal{RefusedPublic, w.public}
	case !r.Allowed:
		return &Refusal{RefusedAllow, fmt.Sprintf(w.allow, r.ToName)}
	case r.From == r.To || slices.Contains(r.Chain, r.To):
		chain := strings.Join(append(append([]string(nil), r.Chain...), r.From, r.To), " → ")
		return &Refusal{RefusedLoop, fmt.Sprintf(w.loop, r.ToName, chain)}
	case r.Depth > l.MaxDepth:
		return &Refusal{RefusedDepth, fmt.Sprintf(w.depth, r.ToName, r.Depth, l.MaxDepth)}
	}
	key := [3]string{r.From, r.To, r.User}
	if last, ok := p.last[key]; ok && !r.Programmatic && now.Sub(last) < l.Cooldown {
		wait := l.Cooldown - now.Sub(last)
		return &Refusal{RefusedCooldown, fmt.Sprintf(w.cooldown, r.ToName, roundUp(wait))}
	}
	pk := pairKey(r.From, r.To, r.User)
	ps := p.pairs[pk]
	if ps == nil {
		ps = &pairState{}
		p.pairs[pk] = ps
	}
	if now.Before(ps.pausedUntil) {
		return &Refusal{RefusedPaused, fmt.Sprintf(w.paused, r.FromName, r.ToName, roundUp(ps.pausedUntil.Sub(now)))}
	}
	// Forget hand-offs outside the window, then count this one.
	ps.times = slices.DeleteFunc(ps.times, func(t time.Time) bool { return now.Sub(t) >= l.PairWindow })
	if l.PairBurst > 0 && len(ps.times) >= l.PairBurst {
		ps.pausedUntil = now.Add(l.PairPause)
		ps.times = nil
		return &Refusal{RefusedPaused, fmt.Sprintf(w.paused, r.FromName, r.ToName, roundUp(l.PairPause))}
	}
	ps.times = append(ps.times, now)
	p.last[key] = now
	return nil
}

// words are the sentences of refusals, for hand-offs or help requests.
type words struct {
	public, allow, loop, depth, cooldown, paused string
}

var (
	handoffWords = words{
		public:   "Hand-offs are not available with public bots.",
		allow:    "I'm not allowed to hand work to %s.",
		loop:     "I won't hand this to %s: that would loop back (%s).",
		depth:    "I can't hand this on to %s: the chain of hand-offs would be %d deep and the limit is %d.",
		cooldown: "I handed %s a task for you moments ago; I can hand over another in %s.",
		paused:   "Hand-offs between %s and %s are paused for %s: too many in the last minute.",
	}
	helpWords = words{
		public:   "Help requests are not available with public bots.",
		allow:    "I'm not allowed to ask %s for help.",
		loop:     "I won't ask %s for help: that would loop back (%s).",
		depth:    "I can't ask %s for help: the chain of requests would be %d deep and the limit is %d.",
		cooldown: "I asked %s for you moments ago; I can ask again in %s.",
		paused:   "Requests between %s and %s are paused for %s: too many in the last minute.",
	}
)

// Note records a hand-off another process admitted (several gateways
// sharing a database tell each other of each new delegation), so that
// the cooldown and the pair rate hold across all of them. It refuses
// nothing: the other process decided.
func (p *Policy) Note(from, to, user string, at time.Time, programmatic bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !programmatic {
		key := [3]string{from, to, user}
		if at.After(p.last[key]) {
			p.last[key] = at
		}
	}
	pk := pairKey(from, to, user)
	ps := p.pairs[pk]
	if ps == nil {
		ps = &pairState{}
		p.pairs[pk] = ps
	}
	now := p.now()
	ps.times = slices.DeleteFunc(ps.times, func(t time.Time) bool { return now.Sub(t) >= p.limits.PairWindow })
	if now.Sub(at) < p.limits.PairWindow {
		ps.times = append(ps.times, at)
	}
}

func pairKey(a, b, user string) [3]string {
	if a > b {
		a, b = b, a
	}
	return [3]string{a, b, user}
}

// roundUp shows a wait in whole seconds, at least 1s.
func roundUp(d time.Duration) time.Duration {
	return max(time.Second, d.Round(time.Second))
}
