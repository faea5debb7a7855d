package gateway

import (
	"sync/atomic"
	"testing"
	"time"
)

// handedOver reports whether fn was taken by a goroutine of p waiting for
// work, trying until d has passed.
func handedOver(p *pool, fn func(), d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		select {
		case p.work <- fn:
			return true
		default:
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// settle waits until p has no goroutine left. (The process's goroutine
// count would not do: other tests' goroutines come and go meanwhile.)
func settle(t *testing.T, p *pool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.live.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := p.live.Load(); got > 0 {
		t.Fatalf("%d goroutines of the pool left", got)
	}
}

func TestPool(t *testing.T) {
	tests := []struct {
		name string
		// idle is the pool's wait for work; close closes the pool once the
		// first function has run.
		idle  time.Duration
		close bool
		// reused says the first function's goroutine takes the second:
		// otherwise it has exited and the second gets a new one.
		reused bool
	}{
		{name: "it exits once idle", idle: 10 * time.Millisecond},
		{name: "close lets it go", idle: time.Minute, close: true},
		{name: "a goroutine waits for the next function", idle: time.Minute, reused: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(tc.idle)
			defer p.close()
			var ran atomic.Int32
			first := make(chan struct{})
			p.Go(func() { ran.Add(1); close(first) })
			<-first
			if tc.close {
				p.close()
			}
			second := make(chan struct{})
			fn := func() { ran.Add(1); close(second) }
			if tc.reused {
				if !handedOver(p, fn, 5*time.Second) {
					t.Fatal("no goroutine waits for work after the first function")
				}
			} else {
				settle(t, p)
				if handedOver(p, func() {}, 0) {
					t.Fatal("a goroutine still waits for work")
				}
				p.Go(fn)
			}
			<-second
			if n := ran.Load(); n != 2 {
				t.Errorf("%d functions ran, want 2", n)
			}
			if !tc.reused {
				settle(t, p)
			}
		})
	}
}

// TestPoolNeverBlocks: Go returns at once while every goroutine is busy,
// and every function runs.
func TestPoolNeverBlocks(t *testing.T) {
	p := newPool(time.Minute)
	defer p.close()
	release := make(chan struct{})
	var ran atomic.Int32
	const n = 50
	finished := make(chan struct{}, n)
	for range n {
		p.Go(func() { <-release; ran.Add(1); finished <- struct{}{} })
	}
	close(release)
	for range n {
		<-finished
	}
	if got := ran.Load(); got != n {
		t.Errorf("%d of %d functions ran", got, n)
	}
}
