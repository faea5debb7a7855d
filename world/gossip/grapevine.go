package gossip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
)

// Settings are shared.gossip (SPEC §10). They take effect live.
type Settings struct {
	// Enabled turns detection on; off, nothing new is checked (memories
	// already queued are still delivered, and those delivered are still
	// shown).
	Enabled bool
	// MinMessages is how many messages a person must have sent a bot
	// before it hears news about them.
	MinMessages int
	// Memories is how many of the newest memories a prompt shows; 0
	// shows none.
	Memories int
	// SensitiveTopics are the words that block an event (Sensitive).
	SensitiveTopics []string
	// Patterns are checked in order; the first that matches wins.
	Patterns []Pattern
	// Classifier is the ID of the bot whose brain judges the messages
	// no pattern matched; "" for none.
	Classifier string
}

// DefaultSettings are SPEC §10's defaults.
func DefaultSettings() Settings {
	s := Settings{Enabled: true, MinMessages: DefaultMinMessages, Memories: DefaultMemories,
		SensitiveTopics: slices.Clone(DefaultSensitiveTopics)}
	for _, p := range DefaultPatterns {
		s.Patterns = append(s.Patterns, Pattern{Match: regexp.MustCompile(p.Match), Topic: p.Topic})
	}
	return s
}

// Bot is a configured bot as gossip sees it.
type Bot struct {
	ID, Name, Persona string
	// Public bots take no part: news told to one is blocked, and none
	// hears news.
	Public bool
	// Brain and Timeout are used when the bot is the classifier.
	Brain   brains.Brain
	Timeout time.Duration
}

// Person is a person as users.yaml has them now.
type Person struct {
	Name string
	// Share is share_with_other_bots; Invisible is invisible. A person
	// users.yaml does not list shares and is visible.
	Share, Invisible bool
}

// Cast is the team and the people as they are configured now: the
// gateway's roster and user directory.
type Cast interface {
	// GossipBots lists the configured bots in configuration order.
	GossipBots() []Bot
	// GossipPerson is the person with user ID (or platform ID) id.
	GossipPerson(id string) Person
}

// Heard is a person's message, stored, that a bot answers: what the
// Grapevine checks.
type Heard struct {
	// MessageID is the stored message's ID, and Key names it as its
	// platform knows it (Event.Key).
	MessageID int64
	Key       string
	// User is the person's user ID as the bot sees it, UserName their
	// name.
	User, UserName string
	// Bot is the ID of the bot the person told (the first one the
	// message addresses).
	Bot      string
	Platform string
	// Text is the message as the bot sees it (its address stripped).
	Text string
}

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

// checkLoop checks heard messages one at a time (a classifier's brain
// runs one turn at a time), until closing, then the ones left.
func (g *Grapevine) checkLoop(ctx context.Context) {
	for {
		select {
		case h := <-g.heard:
			g.check(ctx, h)
		case <-g.closing:
			for {
				select {
				case h := <-g.heard:
					g.check(ctx, h)
				default:
					return
				}
			}
		case <-ctx.Done():
			return
		}
	}
}

// check decides what h is, stores it as an event when it is news, and
// wakes the deliverer for its memories.
func (g *Grapevine) check(ctx context.Context, h Heard) {
	if n := g.full.Swap(0); n > 1 {
		g.log.Warn("gossip: messages went unchecked, the queue being full", "count", n)
	}
	s := g.settings.Load()
	if !s.Enabled {
		return
	}
	cast := g.cast.Load()
	bots := cast.GossipBots()
	source, ok := botByID(bots, h.Bot)
	if !ok {
		return // removed from bots.yaml meanwhile
	}
	person := cast.GossipPerson(h.User)
	e := Event{
		User: h.User, UserName: firstOf(h.UserName, person.Name, h.User), SourceBot: source.ID,
		MessageID: h.MessageID, Key: h.Key, Depth: DepthOf(h.Text), CreatedAt: g.now(),
	}
	// These rules block whatever the message says: the classifier is
	// not asked then, so no other bot's brain reads the message.
	reason := blockedFor(e.Depth, source, person)
	topic, summary, matched := Match(s.Patterns, h.Text)
	if !matched && reason == "" && s.Classifier != "" {
		topic, summary, matched = g.classify(ctx, s, bots, source, h, e.UserName)
	}
	if !matched {
		return
	}
	e.Topic, e.Summary = topic, summary
	if reason == "" {
		if w, ok := Sensitive(s.SensitiveTopics, topic, h.Text+"\n"+summary); ok {
			reason = fmt.Sprintf("sensitive topic %q", w)
		}
	}
	var due []string
	switch {
	case reason != "":
		e.Status, e.Reason = StatusBlocked, reason
	default:
		var err error
		if due, err = g.recipients(ctx, s, bots, e); err != nil {
			g.log.Error("gossip: who knows the person could not be read; the event is dropped", "message", h.MessageID, "err", err)
			return
		}
		e.Status = StatusQueued
		if len(due) == 0 {
			e.Status = StatusDelivered
			e.Reason = fmt.Sprintf("no other bot has %d messages from %s yet (min_messages)", s.MinMessages, e.UserName)
		}
	}
	stored, created, err := g.store.AddGossip(ctx, e, due)
	if err != nil {
		g.log.Error("gossip: event not stored", "message", h.MessageID, "err", err)
		return
	}
	if !created {
		return
	}
	g.log.Info("gossip event", "event", stored.ID, "user", stored.User, "source", stored.SourceBot, "topic", stored.Topic,
		"status", stored.Status, "reason", stored.Reason, "due", len(due))
	if len(due) > 0 {
		g.Wake()
	}
}

// blockedFor is why news told to source about person at depth is
// blocked whatever it says, or "".
func blockedFor(depth int, source Bot, person Person) string {
	switch {
	case depth >= 1:
		return fmt.Sprintf("gossip about gossip never travels (depth %d)", depth)
	case source.Public:
		return fmt.Sprintf("told to public bot %s, which takes no part in the shared world", source.ID)
	case person.Invisible:
		return "the person is invisible (invisible: true)"
	case !person.Share:
		return "the person does not share with other bots (share_with_other_bots: false)"
	}
	return ""
}

// recipients are the other non-public bots to which e's person has sent
// at least s.MinMessages messages before e's, in configuration order.
func (g *Grapevine) recipients(ctx context.Context, s *Settings, bots []Bot, e Event) ([]string, error) {
	var candidates []string
	for _, b := range bots {
		if !b.Public && b.ID != e.SourceBot {
			candidates = append(candidates, b.ID)
		}
	}
	if len(candidates) == 0 || s.MinMessages <= 0 {
		return candidates, nil
	}
	counts, err := g.store.MessagesFrom(ctx, e.User, candidates, e.MessageID, s.MinMessages)
	if err != nil {
		return nil, err
	}
	var due []string
	for _, id := range candidates {
		if counts[id] >= s.MinMessages {
			due = append(due, id)
		}
	}
	return due, nil
}

// classify asks the classifier bot about h. A classifier that fails, or
// answers garbage, is logged and taken as none.
func (g *Grapevine) classify(ctx context.Context, s *Settings, bots []Bot, source Bot, h Heard, name string) (topic, summary string, ok bool) {
	c, found := botByID(bots, s.Classifier)
	if !found || c.Public || c.Brain == nil {
		g.log.Warn("gossip: the classifier is no non-public bot with a brain; messages no pattern matches are not news", "classifier", s.Classifier)
		return "", "", false
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := Classify(cctx, c.Brain, brains.Bot{ID: c.ID, Name: c.Name, Persona: c.Persona},
		brains.User{ID: h.User, Name: name}, source.Name, h.Platform, h.Text)
	switch {
	case errors.Is(err, ErrGarbage):
		g.log.Warn("gossip: the classifier's answer is garbage; taken as none", "classifier", c.ID, "message", h.MessageID, "why", err.Error())
		return "", "", false
	case err != nil:
		if ctx.Err() == nil {
			g.log.Warn("gossip: the classifier failed; taken as none", "classifier", c.ID, "message", h.MessageID, "err", err)
		}
		return "", "", false
	case res.None:
		return "", "", false
	}
	return res.Topic, res.Summary, true
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

// note is the system message a memory of d puts in its recipient's
// session, from the bot that was told (named as bots name it now).
func (g *Grapevine) note(bots []Bot, d Delivery) chat.Message {
	from := d.Event.SourceBot
	if b, ok := botByID(bots, from); ok && b.Name != "" {
		from = b.Name
	}
	return chat.Message{
		Kind: chat.KindSystem, From: chat.Party{Kind: chat.System, ID: d.Event.SourceBot, Name: NoteFrom},
		UserID: d.Event.User, Bot: d.Bot, Text: NoteText(from, d.Event), Time: g.now(),
	}
}
