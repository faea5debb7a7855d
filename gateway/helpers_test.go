package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
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
	"github.com/switchboard-chat/switchboard/world/actions"
	"github.com/switchboard-chat/switchboard/world/findings"
)

// brainFunc adapts a function to brains.Brain.
type brainFunc func(context.Context, brains.Turn) (brains.Reply, error)

func (f brainFunc) Reply(ctx context.Context, t brains.Turn) (brains.Reply, error) { return f(ctx, t) }

// echo answers "<bot>: <text>".
var echo = brainFunc(func(_ context.Context, t brains.Turn) (brains.Reply, error) {
	return brains.Reply{Text: t.Bot.ID + ": " + t.Text}, nil
})

// recorder is a fake platform that records what it is asked to send.
type recorder struct {
	name string
	mu   sync.Mutex
	sent []outbox.Entry
	// fail, when set, decides the error of each Send.
	fail func(outbox.Entry) error
	ch   chan outbox.Entry
	// maxParked is its outbox.ParkLimiter answer (0: keep forever).
	maxParked time.Duration
}

func (r *recorder) MaxParked() time.Duration { return r.maxParked }

func newRecorder(name string) *recorder {
	return &recorder{name: name, ch: make(chan outbox.Entry, 10000)}
}

func (r *recorder) Name() string { return r.name }

func (r *recorder) Run(ctx context.Context, _ gateway.Host) error { <-ctx.Done(); return nil }

func (r *recorder) Send(_ context.Context, m outbox.Entry) (string, error) {
	if r.fail != nil {
		if err := r.fail(m); err != nil {
			return "", err
		}
	}
	r.mu.Lock()
	r.sent = append(r.sent, m)
	r.mu.Unlock()
	r.ch <- m
	return fmt.Sprint(m.MessageID), nil
}

func (r *recorder) all() []outbox.Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]outbox.Entry(nil), r.sent...)
}

// next waits for the next sent message.
func (r *recorder) next(t testing.TB) outbox.Entry {
	t.Helper()
	select {
	case m := <-r.ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a reply")
		return outbox.Entry{}
	}
}

// harness is a gateway on a real store in a temp dir.
type harness struct {
	t     testing.TB
	path  string
	store *sqlite.Store
	gw    *gateway.Gateway
	plat  *recorder
	// platform, when set, is the platform the gateway gets in place of
	// plat (a wrapper of it).
	platform gateway.Platform
	// obs, when set, is the gateway's Observer.
	obs gateway.Observer
	// now, when set, is the gateway's clock.
	now func() time.Time
	// board is the findings board.
	board *findings.Board
}

func newHarness(t testing.TB, bots ...*gateway.Bot) *harness {
	t.Helper()
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "sb.db"), plat: newRecorder("web")}
	h.open(bots...)
	return h
}

func (h *harness) open(bots ...*gateway.Bot) {
	h.t.Helper()
	s, err := sqlite.Open(context.Background(), h.path)
	if err != nil {
		h.t.Fatal(err)
	}
	h.store = s
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.Default()
	}
	// The shared world as serve wires it: the registry with
	// request_help (the gateway's) and post_finding, the board on the
	// same store.
	reg := actions.New()
	board := findings.New(s, findings.Options{})
	h.board = board
	h.gw = gateway.New(gateway.Options{Store: s, Sessions: s, Outbox: s, Logger: logger, Observer: h.obs, Now: h.now,
		Actions: reg, Findings: board})
	for _, a := range []actions.Action{actions.Help(h.gw), findings.Action(board)} {
		if err := reg.Register(a); err != nil {
			h.t.Fatal(err)
		}
	}
	board.OnVisible(h.gw.FindingsVisible)
	h.gw.SetRoster(gateway.NewRoster(bots))
	if h.platform != nil {
		h.gw.AddPlatform(h.platform)
	} else {
		h.gw.AddPlatform(h.plat)
	}
	if err := h.gw.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(h.close)
}

// close stops the gateway and the store (idempotent).
func (h *harness) close() {
	if h.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.gw.Drain(ctx)
	h.gw.Flush(ctx)
	h.store.Close()
	h.store = nil
}

func bot(id string, b brains.Brain) *gateway.Bot {
	return &gateway.Bot{ID: id, Name: id, Brain: b, Platforms: []string{"web"}, SessionScope: sessions.ScopeUser, Timeout: 5 * time.Second}
}

// private is a private web message from user to bot.
func private(user, botID, msgID, text string) gateway.Event {
	return gateway.Event{
		Platform: "web", Bot: botID, ChatID: gateway.PrivateChatID(user, botID), ChatType: chat.Private,
		MessageID: msgID, Sender: gateway.Sender{PlatformID: user, Name: user}, Text: text,
	}
}

func (h *harness) deliver(ev gateway.Event) gateway.Receipt {
	h.t.Helper()
	r, err := h.gw.Deliver(context.Background(), ev)
	if err != nil {
		h.t.Fatalf("deliver %s: %v", ev.MessageID, err)
	}
	return r
}

// openRoom makes room an open web room with every web bot, as web-ann's
// join would, so that anyone may speak in it.
func (h *harness) openRoom(room string) {
	h.t.Helper()
	j := gateway.RoomJoin{Platform: "web", Room: room, PlatformID: "web-ann", Open: true}
	if _, err := h.gw.JoinRoom(context.Background(), j); err != nil {
		h.t.Fatalf("open room %s: %v", room, err)
	}
}

// unreachableUntil is a recorder's fail: every recipient is unreachable
// until online is set.
func unreachableUntil(online *atomic.Bool) func(outbox.Entry) error {
	return func(outbox.Entry) error {
		if !online.Load() {
			return outbox.ErrUnreachable
		}
		return nil
	}
}

// comeBack sets online, tells the gateway that user's chat with matty is
// reachable again, and checks that the next reply sent is want.
func (h *harness) comeBack(online *atomic.Bool, user, want string) {
	h.t.Helper()
	online.Store(true)
	h.gw.Reachable("web", gateway.PrivateChatID(user, "matty"))
	if got := h.plat.next(h.t).Text; got != want {
		h.t.Errorf("reply to %s = %q, want %q", user, got, want)
	}
}

// waitDelivered waits until the store has no reply pending.
func (h *harness) waitDelivered() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := h.store.PendingOutbox(context.Background())
		if err != nil {
			h.t.Fatal(err)
		}
		if len(p) == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%d replies still pending", len(p))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// kept is t with copies of its slices, which the gateway may share
// between turns (brains.Brain), for a test brain that keeps its turns.
func kept(t brains.Turn) brains.Turn {
	t.History = slices.Clone(t.History)
	t.GroupHistory = slices.Clone(t.GroupHistory)
	t.Team = slices.Clone(t.Team)
	t.Context = slices.Clone(t.Context)
	return t
}
