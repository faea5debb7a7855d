package gateway

import (
	"sync"
	"sync/atomic"
	"time"
)

// poolIdle is how long a pool's goroutine waits for more work before it
// exits.
const poolIdle = 2 * time.Second

// pool runs functions on goroutines that stay warm between them. A
// session's turns and a chat's deliveries each get a goroutine while they
// have work; a new goroutine would start with a small stack and grow it
// (copying it each time) on its way through a turn, which costs more than
// the turn's own work for an instant brain. A goroutine of the pool waits
// poolIdle for another function before it exits, so an idle gateway keeps
// none, and close lets the waiting ones go at once.
type pool struct {
	work chan func() // unbuffered: a send succeeds only to a waiting goroutine
	quit chan struct{}
	once sync.Once
	idle time.Duration // poolIdle, shorter in tests
	live atomic.Int64  // goroutines running or waiting for work (for tests)
}

func newPool(idle time.Duration) *pool {
	return &pool{work: make(chan func()), quit: make(chan struct{}), idle: idle}
}

// Go runs fn on a waiting goroutine, or on a new one if none waits. It
// never blocks.
func (p *pool) Go(fn func()) {
	select {
	case p.work <- fn:
	default:
		p.live.Add(1)
		go p.run(fn)
	}
}

// run runs fn and then whatever is handed to it until it has waited
// p.idle for work, or the pool is closed.
func (p *pool) run(fn func()) {
	defer p.live.Add(-1)
	var idle *time.Timer
	for {
		fn()
		if idle == nil {
			idle = time.NewTimer(p.idle)
		} else {
			idle.Reset(p.idle)
		}
		select {
		case fn = <-p.work:
		case <-idle.C:
			return
		case <-p.quit:
			idle.Stop()
			return
		}
	}
}

// close lets the waiting goroutines exit; functions given to Go later run
// on goroutines of their own.
func (p *pool) close() { p.once.Do(func() { close(p.quit) }) }
