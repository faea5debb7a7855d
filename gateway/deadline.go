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
// Err is nil until the deadline passes or the parent ends, and then the
// error Done's context would give: context.DeadlineExceeded, or the
// parent's. After the first call of Done, every method answers from the
// context that call armed.
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
func (c *turnDeadline) release() {
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

// Err is the reason the context ended, nil while it has not.
func (c *turnDeadline) Err() error {
	if a := c.armed.Load(); a != nil {
		return a.ctx.Err()
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	if c.done.Load() {
		return context.Canceled
	}
	return nil
}

// Value is the armed context's value for key, or the parent's while the
// deadline has not passed and nothing armed it. The two differ only in
// the context package's own keys: it asks for them after Done (to join
// a child to its parent) and in context.Cause, which past the deadline
// must find the armed context's cause.
func (c *turnDeadline) Value(key any) any {
	if a := c.armed.Load(); a != nil {
		return a.ctx.Value(key)
	}
	if !time.Now().Before(c.deadline) {
		if a := c.arm(); a != nil {
			return a.ctx.Value(key)
		}
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
