package gateway

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type ctxKey struct{}

// TestTurnDeadline: a turn's context ends as context.WithTimeout's would,
// at its deadline, with its parent or when released, and arms no timer
// for a brain that only polls Err.
func TestTurnDeadline(t *testing.T) {
	t.Run("polled", func(t *testing.T) {
		ctx, release := withTurnDeadline(context.Background(), 200*time.Millisecond)
		defer release()
		if err := ctx.Err(); err != nil {
			t.Fatalf("Err before the deadline = %v", err)
		}
		if ctx.armed.Load() != nil {
			t.Error("polling Err armed a timer")
		}
		time.Sleep(250 * time.Millisecond)
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err after the deadline = %v, want DeadlineExceeded", err)
		}
		if err := context.Cause(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Cause after the deadline = %v, want DeadlineExceeded", err)
		}
		select {
		case <-ctx.Done():
		default:
			t.Error("Done asked for after the deadline is not closed")
		}
	})
	t.Run("waited on", func(t *testing.T) {
		ctx, release := withTurnDeadline(context.Background(), 20*time.Millisecond)
		defer release()
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		if !closes(child.Done()) {
			t.Fatal("a child of the turn's context did not end at its deadline")
		}
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.Canceled) && !errors.Is(child.Err(), context.DeadlineExceeded) {
			t.Errorf("Err = %v, child's = %v", ctx.Err(), child.Err())
		}
	})
	t.Run("parent ends", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		ctx, release := withTurnDeadline(parent, time.Hour)
		defer release()
		cancel()
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("Err after the parent ended = %v, want Canceled", err)
		}
		if !closes(ctx.Done()) {
			t.Error("Done did not close after the parent ended")
		}
	})
	t.Run("parent ends while armed", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		ctx, release := withTurnDeadline(parent, time.Hour)
		defer release()
		done := ctx.Done()
		cancel()
		if !closes(done) {
			t.Error("Done did not close after the parent ended")
		}
	})
	t.Run("released", func(t *testing.T) {
		ctx, release := withTurnDeadline(context.Background(), time.Hour)
		release()
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("Err after release = %v, want Canceled", err)
		}
		select {
		case <-ctx.Done():
		default:
			t.Error("Done after release is not closed")
		}
		armed, release := withTurnDeadline(context.Background(), time.Hour)
		done := armed.Done()
		release()
		if !closes(done) {
			t.Error("releasing an armed context did not close its Done")
		}
	})
	// Whichever ends the context first is its reason for good.
	t.Run("deadline, then the parent ends", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		ctx, release := withTurnDeadline(parent, 10*time.Millisecond)
		defer release()
		time.Sleep(20 * time.Millisecond)
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Err after the deadline = %v", err)
		}
		cancel()
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err after the parent ended too = %v, want DeadlineExceeded still", err)
		}
	})
	t.Run("released, then the deadline passes", func(t *testing.T) {
		ctx, release := withTurnDeadline(context.Background(), 10*time.Millisecond)
		release()
		time.Sleep(20 * time.Millisecond)
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("Err = %v, want Canceled: it was released before its deadline", err)
		}
	})
	t.Run("deadline passes, then released", func(t *testing.T) {
		ctx, release := withTurnDeadline(context.Background(), 10*time.Millisecond)
		time.Sleep(20 * time.Millisecond)
		release()
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err = %v, want DeadlineExceeded: its deadline passed before release", err)
		}
	})
	t.Run("deadline and values", func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "v"), time.Minute)
		defer cancel()
		ctx, release := withTurnDeadline(parent, time.Hour)
		defer release()
		pd, _ := parent.Deadline()
		if d, ok := ctx.Deadline(); !ok || !d.Equal(pd) {
			t.Errorf("Deadline = %v, %v; want the parent's earlier %v", d, ok, pd)
		}
		short, release2 := withTurnDeadline(parent, time.Second)
		defer release2()
		if d, _ := short.Deadline(); !d.Before(pd) {
			t.Errorf("Deadline = %v, want its own, before the parent's %v", d, pd)
		}
		if v := ctx.Value(ctxKey{}); v != "v" {
			t.Errorf("Value = %v, want the parent's", v)
		}
		ctx.Done()
		if v := ctx.Value(ctxKey{}); v != "v" {
			t.Errorf("Value once armed = %v, want the parent's", v)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		for range 50 {
			ctx, release := withTurnDeadline(context.Background(), time.Millisecond)
			var wg sync.WaitGroup
			wg.Go(func() { <-ctx.Done() })
			wg.Go(func() {
				for ctx.Err() == nil {
					time.Sleep(100 * time.Microsecond)
				}
			})
			wg.Go(func() { _ = ctx.Value(ctxKey{}) })
			wg.Wait()
			// Once ended, it stays ended, for the same reason.
			if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Err = %v, want DeadlineExceeded", err)
			}
			release()
			if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Err after release = %v, want DeadlineExceeded", err)
			}
		}
	})
}

// closes says whether done closes within 5 s.
func closes(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}
