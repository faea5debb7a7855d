package retention

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestInterval(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		want time.Duration
	}{
		{"nothing to delete", Policy{}, 0},
		{"the default: hourly", Policy{Anonymous: 30 * 24 * time.Hour}, MaxInterval},
		{"a short period", Policy{Anonymous: 2 * time.Second, Messages: 90 * 24 * time.Hour}, 2 * time.Second},
		{"the shorter of two", Policy{Anonymous: 20 * time.Minute, Messages: 10 * time.Minute}, 10 * time.Minute},
		{"never under a second", Policy{Messages: time.Millisecond}, MinInterval},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Interval(tc.p); got != tc.want {
				t.Errorf("Interval(%+v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

// call is one deletion a fakeStore was asked for.
type call struct {
	rule   string
	cutoff time.Time
	listed bool // whether listed("web-anon-lee") held
}

// fakeStore records the deletions asked of it: the job's own test; the
// stores' deletions are store/storetest's.
type fakeStore struct {
	mu    sync.Mutex
	calls []call
	fail  error
	ch    chan call
}

func (f *fakeStore) record(c call) (Counts, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	if f.ch != nil {
		f.ch <- c
	}
	return Counts{Visitors: 1, Messages: 3}, f.fail
}

func (f *fakeStore) DeleteIdleVisitors(ctx context.Context, idleSince time.Time, listed func(string) bool) (Counts, error) {
	return f.record(call{"anonymous", idleSince, listed("web-anon-lee")})
}

func (f *fakeStore) DeleteMessagesBefore(ctx context.Context, before time.Time) (Counts, error) {
	return f.record(call{"messages", before, false})
}

var clock = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestSweep(t *testing.T) {
	lee := func(id string) bool { return id == "web-anon-lee" }
	tests := []struct {
		name string
		p    Policy
		want []call
	}{
		{"anonymous only", Policy{Anonymous: 30 * 24 * time.Hour, Listed: lee},
			[]call{{"anonymous", clock.Add(-30 * 24 * time.Hour), true}}},
		{"both", Policy{Anonymous: time.Hour, Messages: 24 * time.Hour},
			[]call{{"anonymous", clock.Add(-time.Hour), false}, {"messages", clock.Add(-24 * time.Hour), false}}},
		{"nothing", Policy{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &fakeStore{}
			var logs bytes.Buffer
			j := NewJob(s, tc.p, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: func() time.Time { return clock }})
			got, err := j.Sweep(context.Background(), tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.calls) != len(tc.want) {
				t.Fatalf("calls = %+v, want %+v", s.calls, tc.want)
			}
			for i := range tc.want {
				if s.calls[i] != tc.want[i] {
					t.Errorf("call %d = %+v, want %+v", i, s.calls[i], tc.want[i])
				}
			}
			if want := len(tc.want); got.Visitors != want || got.Messages != 3*want {
				t.Errorf("counts = %+v, want the sum of %d deletions", got, want)
			}
			if n := strings.Count(logs.String(), "retention: deleted"); n != len(tc.want) {
				t.Errorf("logged %d deletions, want %d:\n%s", n, len(tc.want), logs.String())
			}
			if len(tc.want) > 0 && !strings.Contains(logs.String(), "deleted.visitors=1 deleted.skipped=0 deleted.messages=3") {
				t.Errorf("the log does not say what was deleted:\n%s", logs.String())
			}
		})
	}
}

func TestSweepFailureIsLogged(t *testing.T) {
	s := &fakeStore{fail: errors.New("disk on fire")}
	var logs bytes.Buffer
	j := NewJob(s, Policy{}, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if _, err := j.Sweep(context.Background(), Policy{Anonymous: time.Hour}); err == nil {
		t.Error("a failed sweep returned no error")
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "disk on fire") {
		t.Errorf("log = %s", logs.String())
	}
}

// TestRunSweepsAtStartAndOnChange: Run sweeps at once, sweeps again
// under a new period as soon as Configure changes it, and returns when
// its context ends.
func TestRunSweepsAtStartAndOnChange(t *testing.T) {
	s := &fakeStore{ch: make(chan call, 10)}
	j := NewJob(s, Policy{Anonymous: 30 * 24 * time.Hour}, Options{Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return clock }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	next := func() call {
		t.Helper()
		select {
		case c := <-s.ch:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no sweep")
		}
		return call{}
	}
	if c := next(); c.cutoff != clock.Add(-30*24*time.Hour) {
		t.Errorf("first sweep's cutoff = %v", c.cutoff)
	}
	// Another listed person alone does not wake the job.
	j.Configure(Policy{Anonymous: 30 * 24 * time.Hour, Listed: func(string) bool { return true }})
	select {
	case c := <-s.ch:
		t.Errorf("a change of who is listed swept at once: %+v", c)
	case <-time.After(100 * time.Millisecond):
	}
	j.Configure(Policy{Anonymous: time.Hour})
	if c := next(); c.cutoff != clock.Add(-time.Hour) {
		t.Errorf("sweep after the change: cutoff %v, want an hour before", c.cutoff)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// TestRunRepeats: with a short period the job sweeps again after it.
func TestRunRepeats(t *testing.T) {
	s := &fakeStore{ch: make(chan call, 10)}
	j := NewJob(s, Policy{Anonymous: time.Millisecond}, Options{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	for i := range 2 {
		select {
		case <-s.ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("sweep %d did not come", i+1)
		}
	}
	cancel()
	<-done
}
