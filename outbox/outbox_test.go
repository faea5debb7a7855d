package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/outbox"
)

// The outbox is tested with an in-memory store that records its marks
// and fake platforms that record what they are sent and fail as a case
// needs. Retries use RetryAfterError with tiny waits, or at most one
// ordinary backoff (250–500 ms). The path that gives up after
// maxAttempts (8) ordinary failures is not tested: its seven backoffs
// add up to a minute at least.

// waitLimit bounds every wait for something the outbox should do.
const waitLimit = 5 * time.Second

// platform is the name of the fake platform most tests deliver to.
const platform = "tg"

// TestOutboxDeliversChatInOrder checks that each chat's entries go out
// one at a time in the order of their IDs, even behind a slow send, and
// that chats are delivered in parallel: each chat's first send waits
// until the other chat's has started.
func TestOutboxDeliversChatInOrder(t *testing.T) {
	tests := []struct {
		name string
		// oneByOne enqueues each entry by itself, while the chats' first
		// sends are in flight; otherwise all at once.
		oneByOne bool
	}{
		{name: "enqueued at once"},
		{name: "enqueued one by one", oneByOne: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			inFlight := map[string]int{}
			var started atomic.Int32
			both := make(chan struct{})
			sender := &fakeSender{send: func(ctx context.Context, e outbox.Entry) (string, error) {
				mu.Lock()
				if inFlight[e.ChatID]++; inFlight[e.ChatID] > 1 {
					t.Errorf("chat %s: entry %d sent while another was in flight", e.ChatID, e.OutboxID)
				}
				mu.Unlock()
				defer func() {
					mu.Lock()
					inFlight[e.ChatID]--
					mu.Unlock()
				}()
				if e.OutboxID <= 2 { // each chat's first entry is slow
					if started.Add(1) == 2 {
						close(both)
					}
					select {
					case <-both:
					case <-time.After(waitLimit):
						t.Errorf("chat %s: the other chat's first send did not start meanwhile", e.ChatID)
					}
				}
				runtime.Gosched()
				return fmt.Sprint("p", e.OutboxID), nil
			}}
			s := newStore()
			o, obs := start(t, s, running(sender))
			var entries []outbox.Entry
			for id := int64(1); id <= 10; id++ {
				entries = append(entries, entry(id, []string{"a", "b"}[(id-1)%2], "hello"))
			}
			if tc.oneByOne {
				for _, e := range entries {
					o.Enqueue(e)
				}
			} else {
				o.Enqueue(entries...)
			}
			s.wait(t, "all sent", func(m []mark) bool { return len(m) == 10 })

			for _, c := range []string{"a", "b"} {
				var ids []int64
				for _, e := range sender.Sent() {
					if e.ChatID == c {
						ids = append(ids, e.OutboxID)
					}
				}
				if !slices.IsSorted(ids) || len(ids) != 5 {
					t.Errorf("chat %s sent %v, want five in ID order", c, ids)
				}
			}
			if n := obs.eventOut.Load(); n != 10 {
				t.Errorf("EventOut counted %d, want 10", n)
			}
		})
	}
}

// TestOutboxDeliversOnce: an entry queued again (read from the store
// once more, on a database several processes share) while it is queued,
// or after it was delivered, is not delivered twice.
func TestOutboxDeliversOnce(t *testing.T) {
	release := make(chan struct{})
	sender := &fakeSender{send: func(ctx context.Context, e outbox.Entry) (string, error) {
		if e.OutboxID == 1 {
			<-release
		}
		return fmt.Sprint("p", e.OutboxID), nil
	}}
	s := newStore()
	o, _ := start(t, s, running(sender))
	o.Enqueue(entry(1, "a", "one"), entry(2, "a", "two"))
	o.Enqueue(entry(2, "a", "two"), entry(1, "a", "one")) // queued still
	close(release)
	s.wait(t, "both sent", func(m []mark) bool { return len(m) == 2 })
	o.Enqueue(entry(1, "a", "one"), entry(2, "a", "two"), entry(3, "a", "three")) // delivered already, but 3
	s.wait(t, "the third sent", func(m []mark) bool { return len(m) == 3 })
	if got := ids(sender.Sent()); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("sent %v, want each once: [1 2 3]", got)
	}
}

// TestOutboxInsertsByID checks that entries enqueued out of order while
// a lane's head is in flight are delivered after it in the order their
// messages were stored (entry IDs follow it, but for entries a store
// upgrade refiled): the head keeps its place, even ahead of a lower ID.
func TestOutboxInsertsByID(t *testing.T) {
	tests := []struct {
		name  string
		later []int64 // enqueued one by one while entry 10 is in flight
		// refiled maps an entry to the message it delivers, when that
		// is not 1000 + its ID.
		refiled map[int64]int64
		want    []int64
	}{
		{name: "higher then lower", later: []int64{30, 20}, want: []int64{10, 20, 30}},
		{name: "lower than the head", later: []int64{5}, want: []int64{10, 5}},
		{name: "scattered", later: []int64{40, 20, 30, 15}, want: []int64{10, 15, 20, 30, 40}},
		{name: "refiled under a higher ID", later: []int64{20, 90, 30}, refiled: map[int64]int64{90: 1015},
			want: []int64{10, 90, 20, 30}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inFlight, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			sender := &fakeSender{send: func(ctx context.Context, e outbox.Entry) (string, error) {
				if e.OutboxID == 10 {
					once.Do(func() { close(inFlight) })
					<-release
				}
				return "", nil
			}}
			s := newStore()
			o, _ := start(t, s, running(sender))
			o.Enqueue(entry(10, "a", "head"))
			await(t, inFlight, "the head's send")
			for _, id := range tc.later {
				e := entry(id, "a", "later")
				if m, ok := tc.refiled[id]; ok {
					e.MessageID = m
				}
				o.Enqueue(e)
			}
			close(release)
			s.wait(t, "all sent", func(m []mark) bool { return len(m) == len(tc.want) })
			if got := ids(sender.Sent()); !slices.Equal(got, tc.want) {
				t.Errorf("sent %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOutboxSplitsLongText checks that a text over the platform's limit
// goes out in parts, in order, with progress marked after each part but
// the last; that only the first part answers ReplyTo; that an entry
// resumes from PartsSent; and that a part that fails is retried alone.
func TestOutboxSplitsLongText(t *testing.T) {
	const text = "aaaa bbbb cccc" // three parts at 4
	tests := []struct {
		name      string
		limit     int
		partsSent int
		// failPart is a part whose first send is rate limited (-1: none).
		failPart  int
		wantParts []int
		wantMarks []string
	}{
		{name: "fits", limit: 0, failPart: -1, wantParts: []int{0},
			wantMarks: []string{"sent 1 p1.0"}},
		{name: "split", limit: 4, failPart: -1, wantParts: []int{0, 1, 2},
			wantMarks: []string{"part 1 1 p1.0", "part 1 2 p1.1", "sent 1 p1.2"}},
		{name: "resumes from PartsSent", limit: 4, partsSent: 1, failPart: -1, wantParts: []int{1, 2},
			wantMarks: []string{"part 1 2 p1.1", "sent 1 p1.2"}},
		{name: "failed part retried alone", limit: 4, failPart: 1, wantParts: []int{0, 1, 1, 2},
			wantMarks: []string{"part 1 1 p1.0", "part 1 2 p1.1", "sent 1 p1.2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parts := outbox.SplitText(text, tc.limit)
			failed := false
			sender := &fakeSender{limit: tc.limit, send: func(ctx context.Context, e outbox.Entry) (string, error) {
				if e.Part == tc.failPart && !failed {
					failed = true // sends of one entry are sequential
					return "", &outbox.RetryAfterError{After: time.Millisecond, Err: errors.New("slow down")}
				}
				return fmt.Sprintf("p%d.%d", e.OutboxID, e.Part), nil
			}}
			s := newStore()
			o, _ := start(t, s, running(sender))
			e := entry(1, "a", text)
			e.PartsSent = tc.partsSent
			o.Enqueue(e)
			got := s.wait(t, "sent", func(m []mark) bool { return slices.ContainsFunc(m, isFinal) })

			if marks := render(got); !slices.Equal(marks, tc.wantMarks) {
				t.Errorf("marks %q, want %q", marks, tc.wantMarks)
			}
			var sentParts []int
			for _, p := range sender.Sent() {
				sentParts = append(sentParts, p.Part)
				if p.Text != parts[p.Part] {
					t.Errorf("part %d text %q, want %q", p.Part, p.Text, parts[p.Part])
				}
				if want := map[bool]string{true: e.ReplyTo, false: ""}[p.Part == 0]; p.ReplyTo != want {
					t.Errorf("part %d replies to %q, want %q", p.Part, p.ReplyTo, want)
				}
			}
			if !slices.Equal(sentParts, tc.wantParts) {
				t.Errorf("parts sent %v, want %v", sentParts, tc.wantParts)
			}
		})
	}
}

// TestOutboxRetries checks how a failed send is retried: a rate limit is
// waited out as asked and counted as a retry without counting an
// attempt; an ordinary error is marked as an attempt and retried after
// a backoff; a permanent error fails the entry at once. Either way the
// lane then goes on with its next entry.
func TestOutboxRetries(t *testing.T) {
	tests := []struct {
		name string
		errs []error // the results of entry 1's first sends
		// wantAttempts are the Attempt values of entry 1's sends.
		wantAttempts []int
		wantRetries  int32
		wantMarks    []string
		minWait      time.Duration
	}{
		{
			name: "rate limited twice",
			errs: []error{
				&outbox.RetryAfterError{After: 20 * time.Millisecond, Err: errors.New("429")},
				fmt.Errorf("telegram send: %w", &outbox.RetryAfterError{After: 20 * time.Millisecond, Err: errors.New("429")}),
			},
			wantAttempts: []int{0, 0, 0}, wantRetries: 2,
			wantMarks: []string{"sent 1 p1", "sent 2 p2"},
			minWait:   40 * time.Millisecond,
		},
		{
			name:         "ordinary error once",
			errs:         []error{errors.New("bad gateway")},
			wantAttempts: []int{0, 1}, wantRetries: 1,
			wantMarks: []string{"attempt 1 bad gateway", "sent 1 p1", "sent 2 p2"},
			minWait:   250 * time.Millisecond, // half the first backoff, at least
		},
		{
			name:         "permanent",
			errs:         []error{fmt.Errorf("chat gone: %w", outbox.ErrPermanent)},
			wantAttempts: []int{0}, wantRetries: 0,
			wantMarks: []string{"failed 1 chat gone: permanent delivery failure", "sent 2 p2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tries := 0
			sender := &fakeSender{send: func(ctx context.Context, e outbox.Entry) (string, error) {
				if e.OutboxID == 1 && tries < len(tc.errs) {
					tries++
					return "", tc.errs[tries-1]
				}
				return fmt.Sprint("p", e.OutboxID), nil
			}}
			s := newStore()
			o, obs := start(t, s, running(sender))
			began := time.Now()
			o.Enqueue(entry(1, "a", "one"), entry(2, "a", "two"))
			got := s.wait(t, "entry 2 sent", func(m []mark) bool { return slices.ContainsFunc(m, func(m mark) bool { return m.id == 2 }) })
			if took := time.Since(began); took < tc.minWait {
				t.Errorf("delivered after %s, want a wait of %s at least", took, tc.minWait)
			}

			if marks := render(got); !slices.Equal(marks, tc.wantMarks) {
				t.Errorf("marks %q, want %q", marks, tc.wantMarks)
			}
			var attempts []int
			for _, e := range sender.Sent() {
				if e.OutboxID == 1 {
					attempts = append(attempts, e.Attempt)
				}
			}
			if !slices.Equal(attempts, tc.wantAttempts) {
				t.Errorf("entry 1 sent with attempts %v, want %v", attempts, tc.wantAttempts)
			}
			if got := ids(sender.Sent()); got[len(got)-1] != 2 {
				t.Errorf("sends %v: entry 2 not last", got)
			}
			if n := obs.retries.Load(); n != tc.wantRetries {
				t.Errorf("OutboxRetry counted %d, want %d", n, tc.wantRetries)
			}
		})
	}
}

// TestOutboxParks checks that a lane whose recipient cannot be reached,
// or whose platform is not running, parks: its entries wait, also those
// enqueued meanwhile, and only a Wake of that chat on that platform
// delivers them, each once and in order.
func TestOutboxParks(t *testing.T) {
	tests := []struct {
		name string
		// unreachable fails entry 1's first send as unreachable;
		// otherwise the platform is not running until the wake.
		unreachable bool
		wantSends   []int64
	}{
		{name: "recipient unreachable", unreachable: true, wantSends: []int64{1, 1, 2}},
		{name: "platform not running", wantSends: []int64{1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			failed := false
			sender := &fakeSender{send: func(ctx context.Context, e outbox.Entry) (string, error) {
				if tc.unreachable && !failed {
					failed = true
					return "", fmt.Errorf("no connection: %w", outbox.ErrUnreachable)
				}
				return fmt.Sprint("p", e.OutboxID), nil
			}}
			s := newStore()
			p := running(sender)
			p.setRunning(tc.unreachable)
			o, obs := start(t, s, p)
			o.Enqueue(entry(1, "a", "one"))
			p.waitParked(t)
			o.Enqueue(entry(2, "a", "two"))
			o.Wake(platform, "b")
			o.Wake("other", "a")
			if sent := len(sender.Sent()); sent > 1 {
				t.Errorf("%d sends while parked", sent)
			}
			if marks := s.Marks(); len(marks) != 0 {
				t.Errorf("marks while parked: %q", render(marks))
			}

			p.setRunning(true)
			o.Wake(platform, "a")
			got := s.wait(t, "both sent", func(m []mark) bool { return len(m) == 2 })
			if marks := render(got); !slices.Equal(marks, []string{"sent 1 p1", "sent 2 p2"}) {
				t.Errorf("marks %q", marks)
			}
			if got := ids(sender.Sent()); !slices.Equal(got, tc.wantSends) {
				t.Errorf("sends %v, want %v", got, tc.wantSends)
			}
			if n := obs.retries.Load(); n != 0 {
				t.Errorf("OutboxRetry counted %d for a parked lane", n)
			}
		})
	}
}

// TestOutboxWakeWhileSending checks that a Wake that arrives while a send
// is in flight is not lost: when that send then fails as unreachable, the
// entry is tried again at once instead of parking.
func TestOutboxWakeWhileSending(t *testing.T) {
	tests := []struct {
		name      string
		result    error // of the send in flight
		wantSends int
	}{
		{name: "send fails as unreachable", result: outbox.ErrUnreachable, wantSends: 2},
		{name: "send succeeds", result: nil, wantSends: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inFlight, release := make(chan struct{}), make(chan struct{})
			first := true
			sender := &fakeSender{send: func(ctx context.Context, e outbox.Entry) (string, error) {
				if first {
					first = false
					close(inFlight)
					<-release
					if tc.result != nil {
						return "", tc.result
					}
				}
				return "p1", nil
			}}
			s := newStore()
			o, _ := start(t, s, running(sender))
			o.Enqueue(entry(1, "a", "one"))
			await(t, inFlight, "the send")
			o.Wake(platform, "a")
			close(release)
			got := s.wait(t, "sent without another wake", func(m []mark) bool { return len(m) > 0 })
			if marks := render(got); !slices.Equal(marks, []string{"sent 1 p1"}) {
				t.Errorf("marks %q", marks)
			}
			if n := len(sender.Sent()); n != tc.wantSends {
				t.Errorf("%d sends, want %d", n, tc.wantSends)
			}
		})
	}
}

// TestOutboxParkExpiry checks that on a ParkLimiter platform the entries
// of a parked lane are marked failed, with the reason, once they have
// waited MaxParked, counted from the park for an entry made before it
// and from when it was made for one made after; and that the lane is
// then forgotten, so the chat's next entry is sent at once.
func TestOutboxParkExpiry(t *testing.T) {
	const maxParked = 50 * time.Millisecond
	var reachable atomic.Bool
	sender := &fakeSender{maxParked: maxParked, send: func(ctx context.Context, e outbox.Entry) (string, error) {
		if !reachable.Load() {
			return "", outbox.ErrUnreachable
		}
		return fmt.Sprint("p", e.OutboxID), nil
	}}
	s := newStore()
	p := running(sender)
	o, _ := start(t, s, p)
	began := time.Now()
	old := entry(1, "a", "one")
	old.Time = began.Add(-time.Hour) // made long before the park (a restart's)
	o.Enqueue(old)
	p.waitParked(t)
	later := entry(2, "a", "two")
	later.Time = time.Now().Add(maxParked / 2) // made well after the park
	o.Enqueue(later)
	got := s.wait(t, "both failed", func(m []mark) bool { return len(m) == 2 })
	reason := "recipient unreachable for 50ms"
	if marks := render(got); !slices.Equal(marks, []string{"failed 1 " + reason, "failed 2 " + reason}) {
		t.Fatalf("marks %q", marks)
	}
	if waited := got[0].at.Sub(began); waited < maxParked {
		t.Errorf("entry 1 failed after %s, before MaxParked %s", waited, maxParked)
	}
	if early := later.Time.Add(maxParked).Sub(got[1].at); early > 0 {
		t.Errorf("entry 2 failed %s before it had waited MaxParked since it was made", early)
	}

	reachable.Store(true)
	o.Wake(platform, "a") // the lane is gone: nothing to resume
	o.Enqueue(entry(3, "a", "three"))
	s.wait(t, "entry 3 sent", func(m []mark) bool { return len(m) == 3 })
	if got := ids(sender.Sent()); !slices.Equal(got, []int64{1, 3}) {
		t.Errorf("sends %v, want 1 then 3", got)
	}
}

// TestOutboxClose checks that Close waits for lanes that are delivering
// (not parked ones) until its ctx ends, then cancels their sends and
// returns ctx's error; that a delivery the platform completes as it is
// cancelled is still marked, with a ctx that has not ended; that an entry
// whose send was cancelled is not marked; and that nothing is sent after
// Close.
func TestOutboxClose(t *testing.T) {
	tests := []struct {
		name string
		// send is entry 1's send; release, closed after Close is called,
		// lets it finish.
		send func(ctx context.Context, release chan struct{}) (string, error)
		// park parks the lane before Close.
		park      bool
		timeout   time.Duration
		wantErr   error
		wantMarks []string
	}{
		{name: "idle", timeout: waitLimit},
		{name: "parked lane", park: true, timeout: waitLimit},
		{
			name: "busy lane finishes",
			send: func(ctx context.Context, release chan struct{}) (string, error) {
				select {
				case <-release:
					return "p1", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			},
			timeout: waitLimit, wantMarks: []string{"sent 1 p1"},
		},
		{
			name: "send stuck until cancelled",
			send: func(ctx context.Context, _ chan struct{}) (string, error) {
				<-ctx.Done()
				return "", ctx.Err()
			},
			timeout: 50 * time.Millisecond, wantErr: context.DeadlineExceeded,
		},
		{
			name: "send completes as cancelled",
			send: func(ctx context.Context, _ chan struct{}) (string, error) {
				<-ctx.Done()
				return "late", nil
			},
			timeout: 50 * time.Millisecond, wantErr: context.DeadlineExceeded, wantMarks: []string{"sent 1 late"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inFlight, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			sender := &fakeSender{send: func(ctx context.Context, e outbox.Entry) (string, error) {
				if tc.park {
					return "", outbox.ErrUnreachable
				}
				once.Do(func() { close(inFlight) })
				return tc.send(ctx, release)
			}}
			s := newStore()
			p := running(sender)
			o, _ := start(t, s, p)
			switch {
			case tc.park:
				o.Enqueue(entry(1, "a", "one"))
				p.waitParked(t)
			case tc.send != nil:
				o.Enqueue(entry(1, "a", "one"))
				await(t, inFlight, "the send")
			}

			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			closed := make(chan error)
			go func() { closed <- o.Close(ctx) }()
			close(release)
			select {
			case err := <-closed:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("Close = %v, want %v", err, tc.wantErr)
				}
			case <-time.After(waitLimit):
				t.Fatal("Close did not return")
			}

			marks := s.Marks()
			if got := render(marks); !slices.Equal(got, tc.wantMarks) {
				t.Errorf("marks %q, want %q", got, tc.wantMarks)
			}
			for _, m := range marks {
				if !m.live {
					t.Errorf("mark %q made with a ctx that had ended", render([]mark{m}))
				}
			}
			before := len(sender.Sent())
			o.Enqueue(entry(2, "b", "after close"))
			o.Wake(platform, "a")
			if after := len(sender.Sent()); after != before {
				t.Errorf("%d sends after Close", after-before)
			}
		})
	}
}

// TestOutboxStart checks that Start enqueues what the store lists as
// pending and delivers it, each chat in order, and that it reports a
// store failure.
func TestOutboxStart(t *testing.T) {
	tests := []struct {
		name    string
		pending []outbox.Entry
		err     error
		wantN   int
	}{
		{name: "pending entries", wantN: 4, pending: []outbox.Entry{
			entry(1, "a", "one"), entry(2, "b", "two"), entry(3, "a", "three"), entry(4, "b", "four"),
		}},
		{name: "nothing pending"},
		{name: "store fails", err: errors.New("disk trouble")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sender := &fakeSender{}
			s := newStore()
			s.pending, s.pendingErr = tc.pending, tc.err
			o, _ := start(t, s, running(sender))
			n, err := o.Start(context.Background())
			if n != tc.wantN || !errors.Is(err, tc.err) {
				t.Fatalf("Start = %d, %v; want %d, %v", n, err, tc.wantN, tc.err)
			}
			s.wait(t, "all sent", func(m []mark) bool { return len(m) == tc.wantN })
			for _, c := range []string{"a", "b"} {
				var got []int64
				for _, e := range sender.Sent() {
					if e.ChatID == c {
						got = append(got, e.OutboxID)
					}
				}
				if !slices.IsSorted(got) {
					t.Errorf("chat %s sent %v, out of order", c, got)
				}
			}
		})
	}
}

// TestOutboxParkedSplitResumesFromSentPart checks that a split entry
// whose lane parked after some parts were delivered resumes, once woken,
// from the first part not delivered: a retry never sends a part twice.
func TestOutboxParkedSplitResumesFromSentPart(t *testing.T) {
	failed := false
	sender := &fakeSender{limit: 4, send: func(ctx context.Context, e outbox.Entry) (string, error) {
		if e.Part == 1 && !failed {
			failed = true
			return "", outbox.ErrUnreachable
		}
		return fmt.Sprintf("p%d.%d", e.OutboxID, e.Part), nil
	}}
	s := newStore()
	p := running(sender)
	o, _ := start(t, s, p)
	o.Enqueue(entry(1, "a", "aaaa bbbb cccc"))
	p.waitParked(t)
	o.Wake(platform, "a")
	s.wait(t, "sent", func(m []mark) bool { return slices.ContainsFunc(m, isFinal) })
	var parts []int
	for _, e := range sender.Sent() {
		parts = append(parts, e.Part)
	}
	if !slices.Equal(parts, []int{0, 1, 1, 2}) {
		t.Errorf("parts sent %v, want 0, 1 (unreachable), 1, 2", parts)
	}
}

// entry is a stored reply in chat of the fake platform.
func entry(id int64, chatID, text string) outbox.Entry {
	return outbox.Entry{
		OutboxID: id, MessageID: 1000 + id, Platform: platform, Bot: "matty", ChatID: chatID, ChatType: chat.Private,
		From: chat.Party{Kind: chat.Bot, ID: "matty", Name: "matty"}, Text: text, ReplyTo: fmt.Sprint("in", id),
		Time: time.Now(),
	}
}

// start makes a quiet outbox over s and p, closed when the test ends.
func start(t *testing.T, s *fakeStore, p *platforms) (*outbox.Outbox, *observer) {
	t.Helper()
	obs := &observer{}
	o := outbox.New(outbox.Options{Store: s, Sender: p.lookup, Observer: obs, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		o.Close(ctx)
	})
	return o, obs
}

// await waits for ch to close.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("waited %s for %s", waitLimit, what)
	}
}

func ids(entries []outbox.Entry) []int64 {
	var out []int64
	for _, e := range entries {
		out = append(out, e.OutboxID)
	}
	return out
}

// mark is one of the store's records of an entry.
type mark struct {
	kind   string // sent, part, attempt or failed
	id     int64
	n      int // parts, for a part
	msgID  string
	reason string
	// live says the mark's ctx had not ended.
	live bool
	at   time.Time
}

// isFinal reports whether m ends its entry's delivery.
func isFinal(m mark) bool { return m.kind == "sent" || m.kind == "failed" }

// render writes marks as "kind id [n] msgID|reason", to compare.
func render(marks []mark) []string {
	var out []string
	for _, m := range marks {
		switch m.kind {
		case "part":
			out = append(out, fmt.Sprintf("part %d %d %s", m.id, m.n, m.msgID))
		case "sent":
			out = append(out, fmt.Sprintf("sent %d %s", m.id, m.msgID))
		default:
			out = append(out, fmt.Sprintf("%s %d %s", m.kind, m.id, m.reason))
		}
	}
	return out
}

// fakeStore is an in-memory outbox.Store: it lists pending entries for
// Start and records every mark, in order.
type fakeStore struct {
	pending    []outbox.Entry
	pendingErr error

	mu      sync.Mutex
	marks   []mark
	changed chan struct{} // closed and replaced at each mark
}

var _ outbox.Store = (*fakeStore)(nil)

func newStore() *fakeStore { return &fakeStore{changed: make(chan struct{})} }

func (s *fakeStore) PendingOutbox(ctx context.Context) ([]outbox.Entry, error) {
	if s.pendingErr != nil {
		return nil, fmt.Errorf("fake store: %w", s.pendingErr)
	}
	return slices.Clone(s.pending), nil
}

func (s *fakeStore) MarkSent(ctx context.Context, id int64, msgID string) error {
	return s.record(ctx, mark{kind: "sent", id: id, msgID: msgID})
}

func (s *fakeStore) MarkPart(ctx context.Context, id int64, n int, msgID string) error {
	return s.record(ctx, mark{kind: "part", id: id, n: n, msgID: msgID})
}

func (s *fakeStore) MarkAttempt(ctx context.Context, id int64, reason string) error {
	return s.record(ctx, mark{kind: "attempt", id: id, reason: reason})
}

func (s *fakeStore) MarkFailed(ctx context.Context, id int64, reason string) error {
	return s.record(ctx, mark{kind: "failed", id: id, reason: reason})
}

func (s *fakeStore) record(ctx context.Context, m mark) error {
	m.live, m.at = ctx.Err() == nil, time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marks = append(s.marks, m)
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

// Marks returns the marks so far.
func (s *fakeStore) Marks() []mark {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.marks)
}

// wait waits until the marks satisfy done and returns them.
func (s *fakeStore) wait(t *testing.T, what string, done func([]mark) bool) []mark {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		s.mu.Lock()
		marks, changed := slices.Clone(s.marks), s.changed
		s.mu.Unlock()
		if done(marks) {
			return marks
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("waited %s for %s; marks %q", waitLimit, what, render(marks))
		}
	}
}

// fakeSender is a platform: it records each entry it is sent and answers
// with send (nil: delivered as "p<OutboxID>"). It is a MessageLimiter
// (limit 0: none) and a ParkLimiter (0: parked forever).
type fakeSender struct {
	limit     int
	maxParked time.Duration
	send      func(ctx context.Context, e outbox.Entry) (string, error)

	mu   sync.Mutex
	sent []outbox.Entry
}

var (
	_ outbox.Sender         = (*fakeSender)(nil)
	_ outbox.MessageLimiter = (*fakeSender)(nil)
	_ outbox.ParkLimiter    = (*fakeSender)(nil)
)

func (f *fakeSender) Send(ctx context.Context, e outbox.Entry) (string, error) {
	f.mu.Lock()
	f.sent = append(f.sent, e)
	f.mu.Unlock()
	if f.send == nil {
		return fmt.Sprint("p", e.OutboxID), nil
	}
	return f.send(ctx, e)
}

func (f *fakeSender) MaxMessageLength() int    { return f.limit }
func (f *fakeSender) MaxParked() time.Duration { return f.maxParked }

// Sent returns the entries sent so far, in order.
func (f *fakeSender) Sent() []outbox.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

// platforms is the outbox's Sender lookup over one fake platform, which
// may be stopped. It counts lookups: the outbox looks a platform up
// before each try and again when a lane parks (to ask for its
// ParkLimiter), so the second lookup after an enqueue says the lane has
// parked.
type platforms struct {
	sender *fakeSender

	mu      sync.Mutex
	running bool
	lookups int
	changed chan struct{}
}

func running(s *fakeSender) *platforms {
	return &platforms{sender: s, running: true, changed: make(chan struct{})}
}

func (p *platforms) lookup(name string) (outbox.Sender, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lookups++
	close(p.changed)
	p.changed = make(chan struct{})
	if name != platform || !p.running {
		return nil, false
	}
	return p.sender, true
}

func (p *platforms) setRunning(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = on
}

// waitParked waits for the outbox's second lookup: the one a lane's first
// entry makes when it parks.
func (p *platforms) waitParked(t *testing.T) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		p.mu.Lock()
		n, changed := p.lookups, p.changed
		p.mu.Unlock()
		if n >= 2 {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the lane did not park within %s", waitLimit)
		}
	}
}

// observer counts what the outbox reports.
type observer struct{ eventOut, retries atomic.Int32 }

func (o *observer) EventOut(string)    { o.eventOut.Add(1) }
func (o *observer) OutboxRetry(string) { o.retries.Add(1) }
