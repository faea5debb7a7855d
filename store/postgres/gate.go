package postgres

import (
	"context"
	"slices"
	"sync"
)

// class says how urgent a use of a connection is.
type class int

const (
	// finishing work carries on with what the gateway accepted already:
	// a turn's reads and outcome, a delivery's mark, every other read.
	finishing class = iota
	// intake stores a new message, which makes more work.
	intake
)

// gate hands out the pool's connections, finishing work before intake.
// Without it the pool serves its callers in the order they asked: under
// a burst of messages (3,000 widget visitors sending at once) every
// message's intake runs before any turn's next step, then every turn's
// first read before any outcome, and the first answer comes when nearly
// all are done, tens of seconds later. With it a message once taken is
// carried through while new ones wait, so answers flow at the store's
// rate from the start, and intake slows down, as backpressure, when the
// turns fall behind.
//
// Intake only waits while finishing work waits, and finishing work only
// follows from intake, so neither waits for ever.
type gate struct {
	mu   sync.Mutex
	free int
	// waiting holds, by class, the callers waiting for a connection, in
	// the order they came; a caller is let in by closing its channel.
	waiting [2][]chan struct{}
}

func newGate(n int) *gate { return &gate{free: n} }

// enter waits for a connection of the pool for work of class c, or for
// ctx to end. A nil error must be followed by leave.
func (g *gate) enter(ctx context.Context, c class) error {
	g.mu.Lock()
	if g.free > 0 && len(g.waiting[finishing]) == 0 && (c == finishing || len(g.waiting[intake]) == 0) {
		g.free--
		g.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	g.waiting[c] = append(g.waiting[c], ch)
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		i := slices.Index(g.waiting[c], ch)
		if i >= 0 {
			g.waiting[c] = slices.Delete(g.waiting[c], i, i+1)
		}
		g.mu.Unlock()
		if i < 0 {
			g.leave() // let in meanwhile: pass it on
		}
		return ctx.Err()
	}
}

// leave gives a connection back: to the first finishing caller waiting,
// else to the first intake, else to the next to come.
func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.waiting {
		if q := g.waiting[c]; len(q) > 0 {
			close(q[0])
			q[0] = nil
			g.waiting[c] = q[1:]
			return
		}
	}
	g.free++
}
