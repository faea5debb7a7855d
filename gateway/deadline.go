package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// turnDeadline is a brain turn's context: it ends at its deadline or
// with its parent, like context.WithDeadline's, but arms no timer and
// joins none of its parent's children until something asks for its Done
// channel. A brain that only polls Err (the script brain's templates do,
// at each write) costs the turn no timer, and no visit to the lock its
// parent, shared by every turn, keeps its children under.
//
// Err is nil until the deadline passes, the parent ends or the context
// is released, and then the reason of whichever came first, which does
// not change: context.DeadlineExceeded, the parent's, or
// context.Canceled. Once something asks for Done, or the context ends,
// it answers from the context.WithDeadline it armed then.
type turnDeadline struct {
	parent   context.Context
	deadline time.Time
	mu       sync.Mutex // serializes arm and release
	armed    atomic.Pointer[armedDeadline]
	// done is set by release: the turn is over.
	done atomic.Bool
}

// armedDeadline is the context.WithDeadline a turnDeadline becomes.
type armedDeadline struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// withTurnDeadline returns a context that ends d from now or with parent,
// and the function that releases it (as a context's cancel does).
func withTurnDeadline(parent context.Context, d time.Duration) (*turnDeadline, func()) {
	c := &turnDeadline{parent: parent, deadline: time.Now().Add(d)}
	return c, c.release
}

// arm makes the context.WithDeadline that answers from now on, unless
// the context was released first (nil then).
func (c *turnDeadline) arm() *armedDeadline {
	if a := c.armed.Load(); a != nil {
		return a
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.armed.Load(); a != nil || c.done.Load() {
		return a
	}
	ctx, cancel := context.WithDeadline(c.parent, c.deadline)
	a := &armedDeadline{ctx, cancel}
	c.armed.Store(a)
	return a
}

// release ends the context, cancelling the armed one if there is one.
// A context whose deadline or parent ended before release keeps that
// reason: it is armed first, so that it holds it.
func (c *turnDeadline) release() {
	now := time.Now()
	if c.armed.Load() == nil && (!now.Before(c.deadline) || c.parent.Err() != nil) {
		c.arm()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done.Store(true)
	if a := c.armed.Load(); a != nil {
		a.cancel()
	}
}

// Deadline is the earlier of the turn's deadline and its parent's.
func (c *turnDeadline) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done arms the deadline (once) and returns its channel; once released
// without having been armed, a closed channel.
func (c *turnDeadline) Done() <-chan struct{} {
	if a := c.arm(); a != nil {
		return a.ctx.Done()
	}
	return closedDone
}

// Err is the reason the context ended, nil while it has not. A context
// that ends unarmed (its deadline passed, or its parent ended) is armed
// then, once, so that its reason is fixed as WithDeadline fixes it.
func (c *turnDeadline) Err() error {
	// The time is read first: a context armed after it sees a deadline
	// passed by then, and ends as it is made.
	now := time.Now()
	if a := c.armed.Load(); a != nil {
		return a.ctx.Err()
	}
	if c.done.Load() {
		return context.Canceled // released before its deadline and its parent
	}
	if now.Before(c.deadline) && c.parent.Err() == nil {
		return nil
	}
	if a := c.arm(); a != nil {
		return a.ctx.Err()
	}
	return context.Canceled // released meanwhile
}

// Value is the armed context's value for key, or the parent's before
// it is armed. The two differ only in the context package's own keys,
// which it asks for after Done (to join a child to its parent); its
// Cause falls back to Err.
func (c *turnDeadline) Value(key any) any {
	if a := c.armed.Load(); a != nil {
		return a.ctx.Value(key)
	}
	return c.parent.Value(key)
}

// closedDone is the Done channel of a turnDeadline released before it
// was armed.
var closedDone = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()
