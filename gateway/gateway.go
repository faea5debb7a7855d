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
)

// Options configure a Gateway.
type Options struct {
	Store  Store
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Observer receives metrics events; none when nil.
	Observer Observer
}

// Gateway is the pipeline of SPEC §1: it stores each event, resolves its
// sender, decides which bots answer, queues their turns per session, runs
// the brains and hands replies to the outbox.
//
// Its configuration (the roster of bots and the user directory) is swapped
// atomically by SetRoster and SetDirectory while it runs.
type Gateway struct {
	store  Store
	obs    Observer
	log    *slog.Logger
	now    func() time.Time
	roster atomic.Pointer[Roster]
	users  atomic.Pointer[identity.Directory]

	platformsMu     sync.RWMutex
	platforms       map[string]Platform
	delegationHooks []func(Delegation)

	queues  *queues
	outbox  *outbox
	workers *pool // the goroutines of queues and outbox

	// inflight maps a queued turn's ID to a channel closed when it ends;
	// a turn with After waits on it.
	inflight sync.Map
	// claims orders the deliveries of each session (instant.go).
	claims claims

	policy     *delegation.Policy
	delegation atomic.Pointer[DelegationSettings]

	stopped atomic.Bool
	// turnCtx is the parent of every brain turn; cancelled when the drain
	// deadline passes.
	turnCtx    context.Context
	cancelTurn context.CancelFunc
}

// New returns a gateway over opts.Store. Call Start before Deliver.
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
		store:     opts.Store,
		obs:       opts.Observer,
		log:       opts.Logger,
		now:       opts.Now,
		platforms: make(map[string]Platform),
	}
	g.turnCtx, g.cancelTurn = context.WithCancel(context.Background())
	g.roster.Store(NewRoster(nil))
	g.users.Store(&identity.Directory{})
	g.policy = delegation.NewPolicy(delegation.DefaultLimits, opts.Now)
	g.delegation.Store(&DelegationSettings{Limits: delegation.DefaultLimits, ContextMessages: 3, Timeout: 5 * time.Minute})
	g.workers = newPool(poolIdle)
	g.queues = newQueues(g.runTurn, g.workers.Go)
	g.outbox = newOutbox(g.store, g.log, g.platform, g.obs, g.workers.Go)
	return g
}

// SetRoster publishes a new set of bots; turns already running finish with
// the bot they started with.
func (g *Gateway) SetRoster(r *Roster) { g.roster.Store(r) }

// Roster returns the bots in force.
func (g *Gateway) Roster() *Roster { return g.roster.Load() }

// DelegationSettings are gateway.delegation from bots.yaml.
type DelegationSettings struct {
	Limits delegation.Limits
	// ContextMessages is how many recent messages the wrapper carries.
	ContextMessages int
	// Timeout bounds a delegated turn.
	Timeout time.Duration
}

// SetDelegation publishes new delegation settings.
func (g *Gateway) SetDelegation(s DelegationSettings) {
	g.delegation.Store(&s)
	g.policy.SetLimits(s.Limits)
}

// SetDirectory publishes a new user directory.
func (g *Gateway) SetDirectory(d *identity.Directory) { g.users.Store(d) }

// Directory returns the user directory in force.
func (g *Gateway) Directory() *identity.Directory { return g.users.Load() }

// AddPlatform registers p for outbound delivery. Platforms are added before
// Start.
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

// Start resumes the work a previous run left: turns not yet answered and
// replies not yet delivered.
func (g *Gateway) Start(ctx context.Context) error {
	// Replies first: a turn run now must not find its reply already in
	// the outbox list and have it queued twice.
	pending, err := g.store.PendingOutbox(ctx)
	if err != nil {
		return fmt.Errorf("gateway start: %w", err)
	}
	for _, o := range pending {
		g.outbox.enqueue(o)
	}
	if err := g.settleOpenDelegations(ctx); err != nil {
		return fmt.Errorf("gateway start: %w", err)
	}
	turns, err := g.store.PendingTurns(ctx)
	if err != nil {
		return fmt.Errorf("gateway start: %w", err)
	}
	for _, t := range turns {
		g.push(t)
	}

	if len(turns)+len(pending) > 0 {
		g.log.Info("resumed unfinished work", "turns", len(turns), "outbox", len(pending))
	}
	return nil
}

// StopIntake makes Deliver refuse new events.
func (g *Gateway) StopIntake() { g.stopped.Store(true) }

// Drain stops intake and waits until the session queues are empty or ctx
// ends; turns still queued then stay stored and run on the next start.
// Running turns are cancelled when ctx ends.
func (g *Gateway) Drain(ctx context.Context) error {
	g.StopIntake()
	err := g.queues.drain(ctx)
	g.cancelTurn()
	// A brain that ignores its context could hold us forever; its turn
	// stays pending and runs on the next start.
	waited := make(chan struct{})
	go func() { g.queues.wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(time.Second):
		g.log.Warn("a brain turn did not stop when cancelled; leaving it behind")
	}
	return err
}

// Flush waits until the outbox has nothing it can deliver now, or ctx
// ends, then stops its workers. Undelivered entries stay stored.
func (g *Gateway) Flush(ctx context.Context) error {
	err := g.outbox.close(ctx)
	g.workers.close()
	return err
}

// QueueDepth is the number of turns waiting or running.
func (g *Gateway) QueueDepth() int64 { return g.queues.depth.Load() }

// Deliver is the pipeline's entry (Host.Deliver).
func (g *Gateway) Deliver(ctx context.Context, ev Event) (Receipt, error) {
	if g.stopped.Load() {
		return Receipt{}, ErrStopped
	}
	if err := ev.Validate(); err != nil {
		return Receipt{}, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	if ev.Time.IsZero() {
		ev.Time = g.now()
	}
	roster := g.roster.Load()
	if ev.Bot != "" {
		if _, ok := roster.Bot(ev.Bot); !ok {
			return Receipt{}, fmt.Errorf("deliver: %w: %q", ErrUnknownBot, ev.Bot)
		}
	}
	user := g.resolve(ev.Sender, ev.Bot, roster)

	var candidates []string
	if ev.ChatType == ChatGroup {
		if ev.Bot != "" {
			candidates = []string{ev.Bot}
		} else {
			var err error
			candidates, err = g.store.EnsureRoom(ctx, ev.Platform, ev.ChatID, ev.Sender.PlatformID, botIDs(roster, ev.Platform))
			if err != nil {
				return Receipt{}, fmt.Errorf("deliver: %w", err)
			}
		}
	}
	var turns []TurnRequest
	if !ev.Sender.IsBot {
		addrs, err := g.addressed(ctx, ev, roster, candidates)
		if err != nil {
			return Receipt{}, fmt.Errorf("deliver: %w", err)
		}
		for _, a := range addrs {
			turns = append(turns, TurnRequest{Session: g.sessionKey(ev, a.bot, user.ID), Text: a.text})
		}
	}

	if bot, ok := instantBot(ev, roster, turns); ok {
		if rec, taken, err := g.deliverInstant(ctx, ev, user, roster, bot, turns[0]); taken {
			return rec, err
		}
	}
	if len(turns) > 0 {
		keys := make([]SessionKey, len(turns))
		for i, t := range turns {
			keys[i] = t.Session
		}
		release, err := g.claims.shared(ctx, keys)
		if err != nil {
			return Receipt{}, fmt.Errorf("deliver: %w", err)
		}
		defer release()
	}
	return g.appendStored(ctx, ev, user, turns)
}

// appendStored stores ev and the turns it starts: the stored path.
func (g *Gateway) appendStored(ctx context.Context, ev Event, user UserRef, turns []TurnRequest) (Receipt, error) {
	// Turns are queued by the store's callback, in the order they were
	// stored, so a session's queue follows its messages.
	res, err := g.store.AppendInbound(ctx, Inbound{
		Event: ev, UserID: user.ID, UserName: user.Name, Turns: turns,
		OnStored: g.inboundStored(&ev),
	})
	if err != nil {
		return Receipt{}, fmt.Errorf("deliver: %w", err)
	}
	return Receipt{MessageID: res.Message.ID, Time: res.Message.Time, Duplicate: res.Duplicate}, nil
}

// inboundStored is the callback of ev's write: it tells the platform and
// queues the turns the message queued.
func (g *Gateway) inboundStored(ev *Event) func(InboundResult) {
	onStored, platform := ev.OnStored, ev.Platform
	return func(res InboundResult) {
		if onStored != nil {
			onStored(Receipt{MessageID: res.Message.ID, Time: res.Message.Time, Duplicate: res.Duplicate})
		}
		if !res.Duplicate {
			g.obs.EventIn(platform)
			for _, t := range res.Turns {
				g.push(t)
			}
		}
	}
}

// push queues a stored turn in its session.
func (g *Gateway) push(t TurnRef) {
	g.inflight.Store(t.ID, make(chan struct{}))
	g.queues.push(t)
}

// finished marks a turn ended (answered or not) for the turns after it.
func (g *Gateway) finished(id int64) {
	if ch, ok := g.inflight.LoadAndDelete(id); ok {
		close(ch.(chan struct{}))
	}
}

// waitFor blocks until turn id has ended, if it is still queued.
func (g *Gateway) waitFor(ctx context.Context, id int64) error {
	ch, ok := g.inflight.Load(id)
	if !ok {
		return nil
	}
	select {
	case <-ch.(chan struct{}):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// resolve maps the sender to a user. Public bots see raw platform IDs.
func (g *Gateway) resolve(s Sender, bot string, roster *Roster) UserRef {
	if b, ok := roster.Bot(bot); ok && b.Public {
		return UserRef{ID: s.PlatformID, Name: s.Name}
	}
	u, listed := g.users.Load().Resolve(s.PlatformID)
	if !listed || u.Name == "" {
		return UserRef{ID: u.ID, Name: s.Name}
	}
	return UserRef{ID: u.ID, Name: u.Name}
}

// sessionKey keys b's session for an event: (bot, user) in private chats
// and user-scoped groups, (bot, group chat) in group-scoped ones.
func (g *Gateway) sessionKey(ev Event, b *Bot, userID string) SessionKey {
	if ev.ChatType == ChatGroup && b.SessionScope == ScopeGroup {
		return SessionKey{Bot: b.ID, Scope: ScopeGroup, ScopeID: ev.Platform + ":" + ev.ChatID}
	}
	if b.Public {
		userID = ev.Sender.PlatformID
	}
	return SessionKey{Bot: b.ID, Scope: ScopeUser, ScopeID: userID}
}
