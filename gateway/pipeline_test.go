package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/store/sqlite"
)

func TestDuplicateEventAnsweredOnce(t *testing.T) {
	h := newHarness(t, bot("matty", echo))
	first := h.deliver(private("web-ann", "matty", "m1", "hello"))
	second := h.deliver(private("web-ann", "matty", "m1", "hello"))
	if first.Duplicate || !second.Duplicate {
		t.Fatalf("duplicate flags = %v, %v; want false, true", first.Duplicate, second.Duplicate)
	}
	if first.MessageID != second.MessageID {
		t.Errorf("duplicate receipt names message %d, want the original %d", second.MessageID, first.MessageID)
	}
	if got := h.plat.next(t).Text; got != "matty: hello" {
		t.Errorf("reply = %q", got)
	}
	// The same message ID in another chat is a different message.
	h.deliver(private("web-bob", "matty", "m1", "hi"))
	h.plat.next(t)
	time.Sleep(100 * time.Millisecond)
	if n := len(h.plat.all()); n != 2 {
		t.Errorf("sent %d replies, want 2", n)
	}
}

func TestSessionRunsOneTurnAtATimeInOrder(t *testing.T) {
	var inside, maxInside atomic.Int32
	var mu sync.Mutex
	var seen []string
	slow := brainFunc(func(_ context.Context, tr brains.Turn) (brains.Reply, error) {
		n := inside.Add(1)
		defer inside.Add(-1)
		for {
			m := maxInside.Load()
			if n <= m || maxInside.CompareAndSwap(m, n) {
				break
			}
		}
		mu.Lock()
		seen = append(seen, tr.Text)
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		return brains.Reply{Text: "re " + tr.Text}, nil
	})
	h := newHarness(t, bot("matty", slow))

	const n = 40
	// Concurrent writers into one session: the store's order is the
	// arrival order, and the replies must follow it.
	var wg sync.WaitGroup
	var order sync.Map
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.deliver(private("web-ann", "matty", fmt.Sprint("m", i), fmt.Sprint("msg ", i)))
			order.Store(r.MessageID, fmt.Sprint("msg ", i))
		}()
	}
	wg.Wait()
	var replies []outbox.Entry
	for range n {
		replies = append(replies, h.plat.next(t))
	}
	if maxInside.Load() != 1 {
		t.Errorf("at most %d turns ran at once in one session, want 1", maxInside.Load())
	}
	// Replies arrive in the order the messages were stored.
	var prev int64
	for i, r := range replies {
		if r.MessageID <= prev {
			t.Fatalf("reply %d out of order", i)
		}
		prev = r.MessageID
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(seen); i++ {
		a, b := idOf(&order, seen[i-1]), idOf(&order, seen[i])
		if a > b {
			t.Fatalf("brain saw %q (message %d) before %q (message %d)", seen[i-1], a, seen[i], b)
		}
	}
}

func idOf(order *sync.Map, text string) int64 {
	var id int64
	order.Range(func(k, v any) bool {
		if v == text {
			id = k.(int64)
			return false
		}
		return true
	})
	return id
}

func TestSessionsRunInParallel(t *testing.T) {
	const sessions = 4
	var arrived sync.WaitGroup
	arrived.Add(sessions)
	release := make(chan struct{})
	barrier := brainFunc(func(ctx context.Context, tr brains.Turn) (brains.Reply, error) {
		arrived.Done()
		select {
		case <-release:
		case <-ctx.Done():
			return brains.Reply{}, ctx.Err()
		}
		return brains.Reply{Text: "done"}, nil
	})
	h := newHarness(t, bot("matty", barrier))
	for i := range sessions {
		user := fmt.Sprint("web-u", i)
		h.deliver(private(user, "matty", "m", "go"))
	}
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	select {
	case <-all:
		close(release)
	case <-time.After(5 * time.Second):
		t.Fatal("turns of different sessions did not run at the same time")
	}
	for range sessions {
		h.plat.next(t)
	}
}

func TestBrainFailureApologises(t *testing.T) {
	broken := brainFunc(func(context.Context, brains.Turn) (brains.Reply, error) {
		return brains.Reply{}, errors.New("model on fire")
	})
	b := bot("finn", broken)
	b.Name = "Finn Shipley"
	h := newHarness(t, b)
	h.deliver(private("web-ann", "finn", "m1", "build it"))
	got := h.plat.next(t).Text
	if !strings.Contains(got, "Finn Shipley") || !strings.Contains(strings.ToLower(got), "sorry") {
		t.Errorf("apology = %q; want one naming Finn Shipley", got)
	}
	// The session goes on.
	h.deliver(private("web-ann", "finn", "m2", "again"))
	h.plat.next(t)
}

func TestBrainTimeoutApologises(t *testing.T) {
	hang := brainFunc(func(ctx context.Context, _ brains.Turn) (brains.Reply, error) {
		<-ctx.Done()
		return brains.Reply{}, ctx.Err()
	})
	b := bot("finn", hang)
	b.Timeout = 50 * time.Millisecond
	h := newHarness(t, b)
	h.deliver(private("web-ann", "finn", "m1", "hi"))
	if got := h.plat.next(t).Text; !strings.Contains(got, "Sorry") {
		t.Errorf("reply after timeout = %q", got)
	}
}

func TestHistoryReachesBrain(t *testing.T) {
	var last brains.Turn
	var mu sync.Mutex
	rec := brainFunc(func(_ context.Context, tr brains.Turn) (brains.Reply, error) {
		mu.Lock()
		last = kept(tr)
		mu.Unlock()
		return brains.Reply{Text: "ok " + tr.Text}, nil
	})
	h := newHarness(t, bot("matty", rec))
	for i := range 3 {
		h.deliver(private("web-ann", "matty", fmt.Sprint(i), fmt.Sprint("n", i)))
		h.plat.next(t)
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, e := range last.History {
		got = append(got, e.Kind+":"+e.Text)
	}
	want := "human:n0 bot:ok n0 human:n1 bot:ok n1"
	if strings.Join(got, " ") != want {
		t.Errorf("history = %q, want %q", strings.Join(got, " "), want)
	}
}

func TestUnreachableReplyWaitsForReconnect(t *testing.T) {
	h := newHarness(t, bot("matty", echo))
	var online atomic.Bool
	h.plat.fail = unreachableUntil(&online)
	h.deliver(private("web-ann", "matty", "m1", "are you there"))
	time.Sleep(200 * time.Millisecond)
	if n := len(h.plat.all()); n != 0 {
		t.Fatalf("sent %d while unreachable", n)
	}
	h.comeBack(&online, "web-ann", "matty: are you there")
}

// TestUnreachableReplyExpires checks a ParkLimiter platform: a reply that
// has waited MaxParked for its unreachable recipient is marked failed and
// not delivered when they come back; a later reply in the same chat, not
// yet due, is; and a reply whose recipient comes back in time is
// delivered. The replies stay in the session's history.
func TestUnreachableReplyExpires(t *testing.T) {
	h := newHarness(t, bot("matty", echo))
	const limit = time.Second
	h.plat.maxParked = limit
	var online atomic.Bool
	h.plat.fail = unreachableUntil(&online)
	ctx := context.Background()
	pending := func() int {
		t.Helper()
		p, err := h.store.PendingOutbox(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(p)
	}
	h.deliver(private("web-ann", "matty", "m1", "are you there"))
	h.deliver(private("web-bob", "matty", "m1", "hello?"))
	time.Sleep(limit * 6 / 10)
	h.deliver(private("web-ann", "matty", "m2", "still there?")) // due 0.6 s after the first
	// Ann's first reply and Bob's expire; her second waits on.
	deadline := time.Now().Add(10 * time.Second)
	for pending() > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d replies still pending after the limit; want 1", pending())
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.comeBack(&online, "web-ann", "matty: still there?")
	// Bob's reply expired (he never came back): nothing is sent to him.
	for pending() > 0 { // Ann's delivery is being recorded
		if time.Now().After(deadline) {
			t.Fatalf("%d replies still pending after Ann's delivery; want 0", pending())
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.gw.Reachable("web", gateway.PrivateChatID("web-bob", "matty"))
	time.Sleep(100 * time.Millisecond)
	if sent := h.plat.all(); len(sent) != 1 {
		t.Errorf("sent %d replies; want only Ann's second", len(sent))
	}
	s, ok, err := h.store.FindSession(ctx, sessions.Key{Bot: "matty", Scope: sessions.ScopeUser, ScopeID: "web-ann"})
	if err != nil || !ok {
		t.Fatalf("Ann's session: %v %v", ok, err)
	}
	msgs, err := h.store.SessionMessages(ctx, s.ID, chat.KindChat, 10)
	if err != nil || len(msgs) != 4 || msgs[1].Text != "matty: are you there" {
		t.Errorf("Ann's history = %+v, %v", msgs, err)
	}
}

// TestUnreachableReplyDeliveredInTime checks that a reply whose recipient
// comes back before MaxParked is delivered.
func TestUnreachableReplyDeliveredInTime(t *testing.T) {
	h := newHarness(t, bot("matty", echo))
	h.plat.maxParked = time.Minute
	var online atomic.Bool
	h.plat.fail = unreachableUntil(&online)
	h.deliver(private("web-bob", "matty", "m1", "hello?"))
	time.Sleep(50 * time.Millisecond)
	h.comeBack(&online, "web-bob", "matty: hello?")
}

func TestOutboxRetriesAndHonoursRetryAfter(t *testing.T) {
	h := newHarness(t, bot("matty", echo))
	var calls atomic.Int32
	h.plat.fail = func(outbox.Entry) error {
		switch calls.Add(1) {
		case 1:
			return errors.New("502 bad gateway")
		case 2:
			return &outbox.RetryAfterError{After: 20 * time.Millisecond, Err: errors.New("429")}
		}
		return nil
	}
	h.deliver(private("web-ann", "matty", "m1", "hi"))
	h.plat.next(t)
	time.Sleep(50 * time.Millisecond)
	if n := len(h.plat.all()); n != 1 || calls.Load() != 3 {
		t.Errorf("delivered %d times after %d calls; want once after 3", n, calls.Load())
	}
}

// TestDeliverWaitsForStart checks that an event a platform delivers
// before the gateway has started waits until Start has queued what the
// previous run left, and is then answered once.
func TestDeliverWaitsForStart(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plat := newRecorder("web")
	gw := gateway.New(gateway.Options{Store: s, Sessions: s, Outbox: s, Logger: slog.New(slog.DiscardHandler)})
	gw.SetRoster(gateway.NewRoster([]*gateway.Bot{bot("matty", echo)}))
	gw.AddPlatform(plat)

	// A caller that gives up before Start gets an error, and nothing is stored.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	_, err = gw.Deliver(ctx, private("web-ann", "matty", "m0", "too early"))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deliver before start with a deadline: %v, want the deadline", err)
	}

	delivered := make(chan error, 1)
	go func() {
		_, err := gw.Deliver(t.Context(), private("web-ann", "matty", "m1", "hi"))
		delivered <- err
	}()
	select {
	case err := <-delivered:
		t.Fatalf("deliver returned before start: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := gw.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-delivered; err != nil {
		t.Fatalf("deliver after start: %v", err)
	}
	if got := plat.next(t).Text; got != "matty: hi" {
		t.Errorf("reply = %q", got)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	gw.Drain(ctx)
	gw.Flush(ctx)
	if n := len(plat.all()); n != 1 {
		t.Errorf("%d replies, want 1", n)
	}
}

func TestRestartResumesUnansweredTurns(t *testing.T) {
	block := make(chan struct{})
	var started atomic.Bool
	stuck := brainFunc(func(ctx context.Context, tr brains.Turn) (brains.Reply, error) {
		started.Store(true)
		select {
		case <-block:
		case <-ctx.Done():
			return brains.Reply{}, ctx.Err()
		}
		return brains.Reply{Text: "late"}, nil
	})
	h := newHarness(t, bot("matty", stuck))
	h.deliver(private("web-ann", "matty", "m1", "first"))
	h.deliver(private("web-ann", "matty", "m2", "second"))
	for !started.Load() {
		time.Sleep(time.Millisecond)
	}
	// Shut down while the first turn runs: the drain deadline cancels it.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	h.gw.Drain(ctx)
	cancel()
	h.close()
	if n := len(h.plat.all()); n != 0 {
		t.Fatalf("sent %d replies before restart", n)
	}

	h.open(bot("matty", echo))
	got := []string{h.plat.next(t).Text, h.plat.next(t).Text}
	if got[0] != "matty: first" || got[1] != "matty: second" {
		t.Errorf("after restart replies = %q", got)
	}
	close(block)
}

func TestGroupMessageNeedsAddress(t *testing.T) {
	// Finn is slow, so only ordering keeps his reply first.
	slowEcho := brainFunc(func(ctx context.Context, tr brains.Turn) (brains.Reply, error) {
		time.Sleep(100 * time.Millisecond)
		return echo(ctx, tr)
	})
	h := newHarness(t, bot("matty", echo), bot("finn", slowEcho))
	h.openRoom("lobby")
	room := func(id, text string) gateway.Event {
		return gateway.Event{
			Platform: "web", ChatID: "lobby", ChatType: chat.Group, MessageID: id,
			Sender: gateway.Sender{PlatformID: "web-ann", Name: "Ann"}, Text: text,
			Mentions: gateway.ParseMentions(text),
		}
	}
	h.deliver(room("1", "just chatting"))
	h.deliver(room("2", "@finn and @matty: status?"))
	// One reply from each, in the order addressed, address stripped.
	a, b := h.plat.next(t), h.plat.next(t)
	if a.Bot != "finn" || b.Bot != "matty" {
		t.Errorf("answered by %s then %s; want finn then matty", a.Bot, b.Bot)
	}
	if a.Text != "finn: and status?" || b.Text != "matty: and status?" {
		t.Errorf("replies = %q, %q", a.Text, b.Text)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(h.plat.all()); n != 2 {
		t.Errorf("%d replies, want 2", n)
	}
}

// A message that waited while the bot answered the one before it sees that
// answer in its history.
func TestQueuedTurnSeesEarlierReply(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var second []string
	b := brainFunc(func(_ context.Context, tr brains.Turn) (brains.Reply, error) {
		if tr.Text == "first" {
			<-release
		} else {
			mu.Lock()
			for _, e := range tr.History {
				second = append(second, e.Kind+":"+e.Text)
			}
			mu.Unlock()
		}
		return brains.Reply{Text: "re " + tr.Text}, nil
	})
	h := newHarness(t, bot("matty", b))
	h.deliver(private("web-ann", "matty", "1", "first"))
	h.deliver(private("web-ann", "matty", "2", "second"))
	close(release)
	h.plat.next(t)
	h.plat.next(t)
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(second, "|") != "human:first|bot:re first" {
		t.Errorf("second turn's history = %q", second)
	}
}

// limited is a recorder with a message length limit.
type limited struct{ *recorder }

func (limited) MaxMessageLength() int { return 12 }

func TestLongReplySplitAndResumedAfterFailure(t *testing.T) {
	rec := newRecorder("web")
	var calls atomic.Int32
	rec.fail = func(m outbox.Entry) error {
		if m.Part == 1 && calls.Add(1) == 1 {
			return errors.New("503 on the second part")
		}
		return nil
	}
	h := &harness{t: t, path: t.TempDir() + "/sb.db", plat: rec}
	h.open(bot("matty", brainFunc(func(context.Context, brains.Turn) (brains.Reply, error) {
		return brains.Reply{Text: "first part\n\nsecond part\n\nthird"}, nil
	})))
	h.gw.AddPlatform(limited{rec})
	h.deliver(private("web-ann", "matty", "1", "talk a lot"))
	var got []string
	for range 3 {
		got = append(got, rec.next(t).Text)
	}
	quiet(t, rec)
	if strings.Join(got, "|") != "first part|second part|third" {
		t.Errorf("parts = %q; each part once, in order", got)
	}
}

// typist is a recorder that also shows typing.
type typist struct {
	*recorder
	typed chan string
}

func (p typist) Typing(_ context.Context, bot, chat string) error {
	select {
	case p.typed <- bot + "@" + chat:
	default:
	}
	return nil
}

func TestTypingWhileTheBrainWorks(t *testing.T) {
	slow := brainFunc(func(_ context.Context, tr brains.Turn) (brains.Reply, error) {
		if tr.Text == "slow" {
			time.Sleep(600 * time.Millisecond)
		}
		return brains.Reply{Text: "ok"}, nil
	})
	h := newHarness(t, bot("matty", slow))
	tp := typist{recorder: h.plat, typed: make(chan string, 10)}
	h.gw.AddPlatform(tp)
	h.deliver(private("web-ann", "matty", "1", "quick"))
	h.plat.next(t)
	select {
	case got := <-tp.typed:
		t.Errorf("typing shown for a quick answer: %s", got)
	default:
	}
	h.deliver(private("web-ann", "matty", "2", "slow"))
	h.plat.next(t)
	select {
	case got := <-tp.typed:
		if got != "matty@web-ann:matty" {
			t.Errorf("typing in %s", got)
		}
	default:
		t.Error("no typing indicator during a slow turn")
	}
}

// Many deliveries to one session at once: every turn sees exactly the
// person's messages stored before its own.
func TestConcurrentDeliveriesToOneSessionStayInOrder(t *testing.T) {
	var mu sync.Mutex
	var turns []brains.Turn
	mb := bot("matty", brainFunc(func(_ context.Context, tr brains.Turn) (brains.Reply, error) {
		mu.Lock()
		turns = append(turns, kept(tr))
		mu.Unlock()
		return brains.Reply{Text: "re " + tr.Text}, nil
	}))
	mb.HistoryWindow = 200
	h := newHarness(t, mb)
	const senders, each = 4, 15
	ids := make(map[string]int64)
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				text := fmt.Sprintf("m%d-%d", s, i)
				r, err := h.gw.Deliver(context.Background(), private("web-ann", "matty", text, text))
				if err != nil {
					t.Errorf("deliver %s: %v", text, err)
					return
				}
				mu.Lock()
				ids[text] = r.MessageID
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for range senders * each {
		h.plat.next(t)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(turns) != senders*each {
		t.Fatalf("%d turns, want %d", len(turns), senders*each)
	}
	for _, tr := range turns {
		var want, got []string
		for text, id := range ids {
			if id < ids[tr.Text] {
				want = append(want, text)
			}
		}
		for _, e := range tr.History {
			if e.Kind == "human" {
				got = append(got, e.Text)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("turn %s (message %d) saw people's messages %q, want %q", tr.Text, ids[tr.Text], got, want)
		}
	}
}
