// Package gateway is Switchboard's pipeline (SPEC §1). Deliver takes each
// normalized event from a platform adapter, checks it, resolves its
// sender to a person, decides which bots it addresses, stores it with the
// turns it asks for and wakes their sessions. For the sessions' runner
// the gateway answers each turn: a hand-off to another bot when the
// message asks for one, else the bot's brain, whose reply it routes to
// the chat it belongs in and hands to the outbox. It knows no concrete
// platform, brain kind or database.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/identity"
	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world/chains"
)

// Errors returned by Deliver and the Host methods.
var (
	// ErrStopped: the gateway no longer takes intake (shutting down).
	ErrStopped = errors.New("gateway: stopped")
	// ErrUnknownBot: the event or request names a bot that is not
	// configured on that platform.
	ErrUnknownBot = errors.New("unknown bot")
	// ErrInvalidEvent: the event lacks a field or is malformed; sending
	// it again will not help.
	ErrInvalidEvent = errors.New("invalid event")
	// ErrInvalidRequest: a request names a room or a user in a way the
	// rules refuse (CheckRoomName); asking again will not help.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrNotAllowed: the person may not enter, read or write that chat:
	// a closed room they are not a member of, or another person's
	// private chat (SPEC §12).
	ErrNotAllowed = errors.New("not allowed")
	// ErrUnknownChat: no room has that name.
	ErrUnknownChat = errors.New("unknown chat")
)

// Options configure a Gateway. The three stores are usually one.
type Options struct {
	// Store is what the gateway reads and writes itself.
	Store Store
	// Sessions holds the sessions and their turns.
	Sessions SessionStore
	// Outbox records deliveries.
	Outbox outbox.Store
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Observer receives metrics events; none when nil.
	Observer Observer
	// Shared is set when other processes share the database (SPEC §11):
	// see Noticed, Resync and TakeOver.
	Shared SharedStore
	// Actions binds the action registry to each turn; turns get no
	// actions when nil.
	Actions ActionBinder
	// Findings is the findings board; turns see no findings and stage
	// commands are ordinary messages when nil.
	Findings Findings
	// Insights are what bots noticed about people (SPEC §10.4); turns
	// find none when nil.
	Insights Insights
	// Gossip is the grapevine (gossip.go); no message is checked for
	// news and turns get no memories when nil.
	Gossip Gossip
	// Context is the shared context of spaces (context.go); turns see
	// none when nil.
	Context SpaceContext
}

// Gateway is the pipeline. Its configuration (the roster of bots, the
// user directory, the delegation settings) is swapped atomically while
// it runs.
type Gateway struct {
	store    Store
	sessions SessionStore
	runner   *sessions.Runner
	outbox   *outbox.Outbox
	obs      Observer
	log      *slog.Logger
	now      func() time.Time
	actions  ActionBinder
	findings Findings
	insights Insights
	gossip   Gossip
	// sharedCtx is the spaces' shared context, and contextPush the
	// rooms whose context is to be shown anew (context.go).
	sharedCtx   SpaceContext
	contextPush contextPush

	roster     atomic.Pointer[Roster]
	users      atomic.Pointer[identity.Directory]
	delegation atomic.Pointer[DelegationSettings]
	policy     *delegation.Policy
	// crossbot holds the bot-to-bot chain settings (crossbot.go);
	// chainReplies the turns whose group messages are judged once
	// stored (turn ID → chainReply).
	crossbot     atomic.Pointer[chains.Settings]
	chainReplies sync.Map

	// shared is set on a database other processes share.
	shared SharedStore
	// bg holds the goroutines goBackground starts (notices, catching
	// up, showing contexts); bgClosed, under bgMu, is set once Flush
	// waits for them, after which none starts.
	bg       sync.WaitGroup
	bgMu     sync.Mutex
	bgClosed bool

	platformsMu     sync.RWMutex
	platforms       map[string]Platform
	delegationHooks []func(delegation.Record)

	// started is closed once Start has queued what a previous run left:
	// Deliver waits for it, so that no turn runs and queues a reply
	// the outbox then finds pending and queues again.
	started chan struct{}
	stopped atomic.Bool
}

// DelegationSettings are gateway.delegation from bots.yaml.
type DelegationSettings struct {
	Limits delegation.Limits
	// ContextMessages is how many recent messages a wrapper carries.
	ContextMessages int
	// Timeout bounds a delegated turn.
	Timeout time.Duration
}

// New returns a gateway. Add its platforms, then Start it.
func New(opts Options) *Gateway {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	g := &Gateway{
		store: opts.Store, sessions: opts.Sessions, obs: opts.Observer, log: opts.Logger, now: opts.Now, shared: opts.Shared,
		actions: opts.Actions, findings: opts.Findings, insights: opts.Insights, gossip: opts.Gossip, sharedCtx: opts.Context,
		platforms: make(map[string]Platform), started: make(chan struct{}),
		policy: delegation.NewPolicy(delegation.DefaultLimits, opts.Now),
	}
	g.roster.Store(NewRoster(nil))
	g.SetCrossbot(DefaultCrossbot)
	g.users.Store(&identity.Directory{})
	g.delegation.Store(&DelegationSettings{Limits: delegation.DefaultLimits, ContextMessages: 3, Timeout: 5 * time.Minute})
	g.outbox = outbox.New(outbox.Options{
		Store: opts.Outbox, Logger: opts.Logger, Observer: opts.Observer,
		Sender: func(name string) (outbox.Sender, bool) { return g.platform(name) },
	})
	g.runner = sessions.NewRunner(sessions.Options{
		Store: opts.Sessions, Answerer: sessions.AnswerFunc(g.answer), Outbox: g.outbox, Logger: opts.Logger,
		HistoryLimit: func() int { return g.roster.Load().historyLimit },
		Stored:       g.turnStored,
	})
	return g
}

// SetRoster publishes a new set of bots; turns already running finish
// with the bot they started with. Each platform that is a RosterWatcher
// is then told its bots.
func (g *Gateway) SetRoster(r *Roster) {
	g.roster.Store(r)
	g.platformsMu.RLock()
	var watchers []RosterWatcher
	var names []string
	for name, p := range g.platforms {
		if w, ok := p.(RosterWatcher); ok {
			watchers, names = append(watchers, w), append(names, name)
		}
	}
	g.platformsMu.RUnlock()
	for i, w := range watchers {
		w.RosterChanged(g.Bots(names[i]))
	}
}

// Roster returns the bots in force.
func (g *Gateway) Roster() *Roster { return g.roster.Load() }

// SetDirectory publishes a new user directory.
func (g *Gateway) SetDirectory(d *identity.Directory) { g.users.Store(d) }

// Directory returns the user directory in force.
func (g *Gateway) Directory() *identity.Directory { return g.users.Load() }

// SetDelegation publishes new delegation settings.
func (g *Gateway) SetDelegation(s DelegationSettings) {
	g.delegation.Store(&s)
	g.policy.SetLimits(s.Limits)
}

// AddPlatform registers p for delivery. Platforms are added before Start.
func (g *Gateway) AddPlatform(p Platform) {
	g.platformsMu.Lock()
	defer g.platformsMu.Unlock()
	g.platforms[p.Name()] = p
}

func (g *Gateway) platform(name string) (Platform, bool) {
	g.platformsMu.RLock()
	defer g.platformsMu.RUnlock()
	p, ok := g.platforms[name]
	return p, ok
}

// Start resumes the work a previous run left: replies not yet delivered,
// hand-offs a restart interrupted, and turns not yet answered. Platforms
// may run before it; their events wait in Deliver until it is done.
func (g *Gateway) Start(ctx context.Context) error {
	// Replies first: a turn run now must not find its reply already
	// listed and have it queued twice.
	replies, err := g.outbox.Start(ctx)
	if err != nil {
		return fmt.Errorf("gateway start: %w", err)
	}
	if err := g.settleOpenDelegations(ctx); err != nil {
		return fmt.Errorf("gateway start: %w", err)
	}
	busy, err := g.runner.Start(ctx)
	if err != nil {
		return fmt.Errorf("gateway start: %w", err)
	}
	if replies+busy > 0 {
		g.log.Info("resumed unfinished work", "sessions", busy, "outbox", replies)
	}
	close(g.started)
	return nil
}

// StopIntake makes Deliver refuse new events.
func (g *Gateway) StopIntake() { g.stopped.Store(true) }

// Drain stops intake and waits until the sessions have answered every
// turn, or ctx ends; turns left then stay stored and run on the next
// start.
func (g *Gateway) Drain(ctx context.Context) error {
	g.StopIntake()
	return g.runner.Drain(ctx)
}

// Flush waits until the outbox has nothing it can deliver now, or ctx
// ends, then stops it. Undelivered entries stay stored.
func (g *Gateway) Flush(ctx context.Context) error {
	g.bgMu.Lock()
	g.bgClosed = true
	g.bgMu.Unlock()
	g.bg.Wait()
	return g.outbox.Close(ctx)
}

// goBackground runs fn on a goroutine of the gateway's that Flush waits
// for, and reports whether it did: once Flush has begun, nothing new
// starts.
func (g *Gateway) goBackground(fn func()) bool {
	g.bgMu.Lock()
	defer g.bgMu.Unlock()
	if g.bgClosed {
		return false
	}
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		fn()
	}()
	return true
}

// QueueDepth counts the turns not yet answered.
func (g *Gateway) QueueDepth(ctx context.Context) (int, error) { return g.sessions.QueueDepth(ctx) }
