package gossip

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Grapevine.
type Options struct {
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// QueueSize bounds the messages waiting to be checked (default
	// 1024); past it a message goes unchecked, with a warning.
	QueueSize int
	// Poll is how often the delivery queue is read besides when an
	// event is stored here (default 30s): another gateway on the same
	// database may have left deliveries behind.
	Poll time.Duration
	// BeforeDeliver, when set, is called before each delivery is
	// carried out; an error leaves the delivery in the queue for later.
	// Tests stop a gateway mid-delivery with it.
	BeforeDeliver func(ctx context.Context, d Delivery) error
}

// Grapevine checks people's messages for news, stores what it finds and
// delivers the memories. Create it with New, give it its settings with
// Configure, and Start it; Close stops it. It is safe for concurrent
// use.
type Grapevine struct {
	store    Store
	log      *slog.Logger
	now      func() time.Time
	poll     time.Duration
	before   func(context.Context, Delivery) error
	settings atomic.Pointer[Settings]
	cast     atomic.Pointer[castRef]

	// heard holds the messages to check; wake asks the deliverer to read
	// the queue.
	heard chan Heard
	wake  chan struct{}
	// closing stops intake; the checker drains heard and ends.
	closing   chan struct{}
	closeOnce sync.Once
	closed    atomic.Bool
	cancel    context.CancelFunc
	checked   chan struct{}
	wg        sync.WaitGroup
	// full counts the messages dropped for a full queue since the last
	// warning.
	full atomic.Int64
	// decided holds the keys of the newest messages the checker decided
	// on; only the checker uses it.
	decided recentKeys
}

// castRef holds a Cast for an atomic pointer.
type castRef struct{ Cast }

// New returns a grapevine over s with DefaultSettings.
func New(s Store, opts Options) *Grapevine {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 1024
	}
	if opts.Poll <= 0 {
		opts.Poll = 30 * time.Second
	}
	g := &Grapevine{
		store: s, log: opts.Logger, now: opts.Now, poll: opts.Poll, before: opts.BeforeDeliver,
		heard: make(chan Heard, opts.QueueSize), wake: make(chan struct{}, 1),
		closing: make(chan struct{}), checked: make(chan struct{}),
	}
	d := DefaultSettings()
	g.settings.Store(&d)
	return g
}

// Configure replaces the settings; checks and prompts use them from now
// on.
func (g *Grapevine) Configure(s Settings) {
	s.Patterns = slices.Clone(s.Patterns)
	s.SensitiveTopics = slices.Clone(s.SensitiveTopics)
	g.settings.Store(&s)
}

// Settings returns the settings in force.
func (g *Grapevine) Settings() Settings { return *g.settings.Load() }

// Start starts checking and delivering, with the bots and people of
// cast, and resumes the deliveries a previous run left in the queue. It
// returns at once; Close stops what it started.
func (g *Grapevine) Start(cast Cast) {
	g.cast.Store(&castRef{cast})
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	g.wg.Add(2)
	go func() {
		defer g.wg.Done()
		defer close(g.checked)
		g.checkLoop(ctx)
	}()
	go func() {
		defer g.wg.Done()
		g.deliverLoop(ctx)
	}()
}

// Close stops intake, checks the messages already heard until ctx ends,
// then stops delivering and waits for every goroutine it started.
// Deliveries not carried out stay in the queue for the next start.
func (g *Grapevine) Close(ctx context.Context) {
	g.closeOnce.Do(func() {
		g.closed.Store(true)
		close(g.closing)
		if g.cancel == nil {
			return // never started
		}
		select {
		case <-g.checked:
		case <-ctx.Done():
			g.log.Warn("gossip: messages left unchecked at shutdown", "count", len(g.heard))
		}
		g.cancel()
		g.wg.Wait()
	})
}

// Heard hands the grapevine a stored message to check, without waiting:
// it never delays the reply. With gossip off, or the queue full, the
// message goes unchecked.
func (g *Grapevine) Heard(h Heard) {
	if g.closed.Load() || !g.settings.Load().Enabled {
		return
	}
	select {
	case g.heard <- h:
	default:
		if g.full.Add(1) == 1 {
			g.log.Warn("gossip: the queue of messages to check is full; messages go unchecked until it empties", "size", cap(g.heard))
		}
	}
}

// Memories lists the newest memories bot has about user, oldest first,
// as many as the settings show; none for a person who now is invisible
// or does not share.
func (g *Grapevine) Memories(ctx context.Context, bot, user string) ([]Memory, error) {
	n := g.settings.Load().Memories
	cast := g.cast.Load()
	if n <= 0 || cast == nil {
		return nil, nil
	}
	if p := cast.GossipPerson(user); p.Invisible || !p.Share {
		return nil, nil
	}
	return g.store.Memories(ctx, bot, user, n)
}

// Events lists events as q selects them, newest first.
func (g *Grapevine) Events(ctx context.Context, q Query) ([]Event, error) {
	q.Limit = max(q.Limit, 1)
	return g.store.GossipEvents(ctx, q)
}

// botByID finds a bot of bots.
func botByID(bots []Bot, id string) (Bot, bool) {
	for _, b := range bots {
		if b.ID == id {
			return b, true
		}
	}
	return Bot{}, false
}

// firstOf is the first of ss that is not empty.
func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
