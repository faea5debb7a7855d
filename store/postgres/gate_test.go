package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestGateOrder: a connection given back goes to finishing work first,
// then to intake, each in the order they came.
func TestGateOrder(t *testing.T) {
	g := newGate(1)
	ctx := context.Background()
	if err := g.enter(ctx, intake); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	wait := func(name string, c class) {
		wg.Go(func() {
			if err := g.enter(ctx, c); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			g.leave()
		})
		// Each waits before the next comes.
		for deadline := time.Now().Add(5 * time.Second); ; {
			g.mu.Lock()
			n := len(g.waiting[finishing]) + len(g.waiting[intake])
			g.mu.Unlock()
			if n == len(name) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not wait", name)
			}
			time.Sleep(time.Millisecond)
		}
	}
	wait("i", intake)
	wait("ii", intake)
	wait("fff", finishing)
	wait("ffff", finishing)
	g.leave()
	wg.Wait()
	want := []string{"fff", "ffff", "i", "ii"}
	if len(order) != len(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
	if g.free != 1 {
		t.Errorf("free = %d after all left, want 1", g.free)
	}
}

// TestGateIntakeWaitsBehindFinishing: intake does not pass finishing
// work that waits, even with a connection free at that moment.
func TestGateIntakeWaitsBehindFinishing(t *testing.T) {
	g := newGate(1)
	g.waiting[finishing] = append(g.waiting[finishing], make(chan struct{}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.enter(ctx, intake); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("intake entered past waiting finishing work: %v", err)
	}
	if len(g.waiting[intake]) != 0 {
		t.Error("a caller that gave up is still queued")
	}
}

// TestGateCancel: a caller whose context ends leaves the queue, and a
// connection handed to it as it gave up goes to the next.
func TestGateCancel(t *testing.T) {
	g := newGate(1)
	bg := context.Background()
	if err := g.enter(bg, finishing); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error, 1)
	go func() { errc <- g.enter(ctx, intake) }()
	for {
		g.mu.Lock()
		n := len(g.waiting[intake])
		g.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("enter = %v, want canceled", err)
	}
	g.leave()
	if g.free != 1 {
		t.Fatalf("free = %d, want 1", g.free)
	}
	// Races of a cancel with leave: the connection is never lost.
	for range 200 {
		if err := g.enter(bg, finishing); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(bg)
		done := make(chan struct{})
		go func() {
			if g.enter(ctx, finishing) == nil {
				g.leave()
			}
			close(done)
		}()
		go cancel()
		g.leave()
		<-done
		cancel()
	}
	if g.free != 1 {
		t.Fatalf("free = %d after the races, want 1", g.free)
	}
}
