package retention

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// How often a Job sweeps: every MaxInterval, or every retention period
// when one is shorter, but never more often than MinInterval.
const (
	MaxInterval = time.Hour
	MinInterval = time.Second
)

// Interval is how long a Job waits between sweeps under p; 0 when p
// deletes nothing.
func Interval(p Policy) time.Duration {
	d := time.Duration(0)
	for _, period := range []time.Duration{p.Anonymous, p.Messages} {
		if period > 0 && (d == 0 || period < d) {
			d = period
		}
	}
	if d == 0 {
		return 0
	}
	return min(max(d, MinInterval), MaxInterval)
}

// Options configures a Job.
type Options struct {
	// Logger receives a line per sweep that deleted something, and
	// failures. Nil means slog.Default().
	Logger *slog.Logger
	// Now is the job's clock; nil means time.Now.
	Now func() time.Time
}

// Job sweeps a store: once when Run starts, then every Interval of its
// policy, and at once when Configure changes a retention period.
type Job struct {
	store Store
	log   *slog.Logger
	now   func() time.Time

	mu      sync.Mutex
	policy  Policy
	changed chan struct{}
}

// NewJob returns a job that applies p to s. Call Run to start it.
func NewJob(s Store, p Policy, o Options) *Job {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Job{store: s, log: o.Logger, now: o.Now, policy: p, changed: make(chan struct{}, 1)}
}

// Configure replaces the policy (gateway.retention is a live setting). A
// change of a period wakes the job, which sweeps under the new policy at
// once; a change of who is listed waits for the next sweep.
func (j *Job) Configure(p Policy) {
	j.mu.Lock()
	old := j.policy
	j.policy = p
	j.mu.Unlock()
	if old.Anonymous != p.Anonymous || old.Messages != p.Messages {
		select {
		case j.changed <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

func (j *Job) current() Policy {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.policy
}

// Run sweeps until ctx ends, then returns nil once the sweep under way
// (the store stops between two of its transactions) has returned. A
// failed sweep is logged and tried again at the next interval.
func (j *Job) Run(ctx context.Context) error {
	for {
		p := j.current()
		j.Sweep(ctx, p)
		var tick <-chan time.Time
		var t *time.Timer
		if d := Interval(p); d > 0 {
			t = time.NewTimer(d)
			tick = t.C
		}
		select {
		case <-ctx.Done():
		case <-j.changed:
		case <-tick:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// Sweep applies p once and returns what it deleted. Each rule's result
// is logged: at info level when it deleted something, at debug level
// otherwise; failures at error level.
func (j *Job) Sweep(ctx context.Context, p Policy) (Counts, error) {
	now := j.now()
	var total Counts
	var firstErr error
	run := func(rule string, period time.Duration, del func(time.Time) (Counts, error)) {
		if period <= 0 || ctx.Err() != nil {
			return
		}
		start := time.Now()
		cutoff := now.Add(-period)
		c, err := del(cutoff)
		total = total.Add(c)
		attrs := []any{"rule", rule, "before", cutoff.UTC().Format(time.RFC3339), "deleted", c, "took", time.Since(start).Round(time.Millisecond)}
		switch {
		case err != nil && ctx.Err() != nil:
			j.log.Info("retention: sweep interrupted by shutdown", attrs...)
		case err != nil:
			j.log.Error("retention: sweep failed; trying again at the next one", append(attrs, "err", err)...)
			if firstErr == nil {
				firstErr = err
			}
		case c.Zero():
			j.log.Debug("retention: nothing to delete", attrs...)
		default:
			j.log.Info("retention: deleted", attrs...)
		}
	}
	listed := p.Listed
	if listed == nil {
		listed = func(string) bool { return false }
	}
	run("anonymous", p.Anonymous, func(cutoff time.Time) (Counts, error) {
		return j.store.DeleteIdleVisitors(ctx, cutoff, listed)
	})
	run("messages", p.Messages, func(cutoff time.Time) (Counts, error) {
		return j.store.DeleteMessagesBefore(ctx, cutoff)
	})
	return total, firstErr
}
