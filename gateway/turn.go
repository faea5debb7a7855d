package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/brains"
)

// logger is a *slog.Logger with attributes for every record (see with).
type logger struct {
	base *slog.Logger
	args []any
}

// with returns l's logger with args added to every record. Unlike
// slog.Logger.With it formats nothing until a record is logged: With on
// a text handler costs about as much as a message's trip through the
// core, and these loggers are made for every turn and delivery.
func with(l *slog.Logger, args ...any) logger { return logger{base: l, args: args} }

func (l logger) all(args []any) []any {
	return append(l.args[:len(l.args):len(l.args)], args...)
}

func (l logger) Debug(msg string, args ...any) { l.base.Debug(msg, l.all(args)...) }
func (l logger) Info(msg string, args ...any)  { l.base.Info(msg, l.all(args)...) }
func (l logger) Warn(msg string, args ...any)  { l.base.Warn(msg, l.all(args)...) }
func (l logger) Error(msg string, args ...any) { l.base.Error(msg, l.all(args)...) }

// A running turn shows the typing indicator once it has taken typingAfter
// (a brain that answers at once shows none: no flicker, no wasted frame)
// and refreshes it every typingEvery.
const (
	typingAfter = 250 * time.Millisecond
	typingEvery = 4 * time.Second
)

// The history a turn sees: the bot's window, defaultHistoryWindow when it
// sets none.
const defaultHistoryWindow = 20

// Store failures inside a turn are retried (holding the session, so its
// order is kept) with this backoff until the gateway stops.
const (
	storeRetryMin = 50 * time.Millisecond
	storeRetryMax = 5 * time.Second
)

// runTurn answers one queued turn: load it, decide what the bot says (a
// hand-off, or its brain's reply), and store that with the turn marked
// done in one transaction, then hand the messages to the outbox. A brain
// failure becomes an apology from the bot. A store failure is retried;
// a turn interrupted by shutdown stays pending and runs on the next start.
func (g *Gateway) runTurn(ref TurnRef) {
	defer g.finished(ref.ID)
	ctx := g.turnCtx
	log := with(g.log, "turn", ref.ID, "session", ref.SessionID)
	if ref.After != 0 {
		// Turn IDs only wait on smaller IDs and queues run in ID order, so
		// the oldest pending turn never waits: no deadlock.
		if err := g.waitFor(ctx, ref.After); err != nil {
			return
		}
	}

	var data TurnData
	if !g.retryStore(ctx, log, "load turn", func() (err error) {
		data, err = g.store.LoadTurn(ctx, ref.ID, g.historyLimit())
		return err
	}) {
		return
	}
	roster := g.roster.Load()
	bot, ok := roster.Bot(data.Session.Key.Bot)

	var c Completion
	switch {
	case !ok:
		// The bot was removed from bots.yaml after the message arrived.
		log.Warn("turn for a bot no longer configured; closed without reply", "bot", data.Session.Key.Bot)
		c = Completion{Turn: ref, Session: ref.SessionID}
		if d := data.Delegation; d != nil {
			c = g.failDelegation(c, roster, *d, "the bot is no longer configured")
		}
	case data.Delegation != nil:
		c = g.delegatedTurn(ctx, log, roster, bot, data)
	default:
		c, _ = g.ordinaryTurn(ctx, log, roster, bot, data) // stored: always made
	}
	if ctx.Err() != nil {
		return // shutting down: the turn stays pending and runs next start
	}
	g.complete(ctx, log, c)
}

// ordinaryTurn answers a person's message: a hand-off when it holds one of
// the bot's triggers, else the brain's reply. On the instant path (the
// message not yet stored: data.Message.ID is 0) a reply that hands work
// on is not made: ok is false, and the message takes the stored path, so
// the hand-off's admission (which counts against the policy's limits)
// happens only for a message that is stored.
func (g *Gateway) ordinaryTurn(ctx context.Context, log logger, roster *Roster, bot *Bot, data TurnData) (c Completion, ok bool) {
	c = Completion{Turn: data.Ref, Session: data.Ref.SessionID}
	instant := data.Message.ID == 0
	// Until the reply is routed (after the brain, where the person is
	// then), the chat of the message is where the bot works.
	to := ChatRef{Platform: data.Message.Platform, ChatID: data.Message.ChatID, Type: data.Message.ChatType}
	// (An instant turn's message holds no trigger: deliverInstant takes
	// only such messages, see instantBot.)
	if data.Message.From.Kind == "human" && !instant {
		if text, ds, ok := g.handOffs(ctx, roster, bot, data, data.Text, nil, nil, to, false); ok {
			// The acknowledgement carries the first hand-off's status.
			id := ""
			for _, d := range ds {
				if d.Record.Status == StatusQueued {
					id = d.Record.ID
					break
				}
			}
			c.Posts = append(c.Posts, g.post(bot, data, to, text, id))
			c.Delegations = ds
			return c, true
		}
	}

	// An instant turn's brain answers well before a typing indicator
	// would show (typingAfter): its timer would only cost.
	stop := func() {}
	if !instant {
		stop = g.startTyping(to.Platform, bot.ID, to.ChatID)
	}
	reply, err := g.think(ctx, bot, data, bot.Timeout)
	stop()
	if ctx.Err() != nil {
		return c, true
	}
	// The person may have moved to another chat while the bot thought.
	// (Not on the instant path: its message, not yet stored, is the
	// person's latest.)
	if !instant {
		if now, err := g.route(ctx, data); err == nil {
			to = now
		} else {
			log.Error("route reply", "err", err)
		}
	}
	text := strings.TrimSpace(reply.Text)
	if err != nil {
		log.Warn("brain failed", "bot", bot.ID, "kind", bot.BrainKind, "err", err)
		text, reply = apology(bot), brains.Reply{}
	}
	if instant && mayHandOff(roster, bot, text, reply.Handoffs) {
		return c, false
	}
	c.ResumeID = reply.ResumeID
	c.Artifacts = artifactRecords(reply.Artifacts, bot.ID)
	if text != "" {
		c.Posts = append(c.Posts, g.post(bot, data, to, text, ""))
	}
	// A reply may itself hand work on (SPEC §1), in its text or by a
	// brain's tool call. (Not an instant one: see above.)
	if instant {
		return c, true
	}
	if note, ds, ok := g.handOffs(ctx, roster, bot, data, text, reply.Handoffs, nil, to, true); ok {
		c.Delegations = ds
		if note != "" {
			c.Posts = append(c.Posts, g.post(bot, data, to, note, ""))
		}
	}
	return c, true
}

// post is a message from bot in chat to, in the turn's session.
func (g *Gateway) post(bot *Bot, data TurnData, to ChatRef, text, delegationID string) Post {
	m := Message{
		Platform: to.Platform, ChatID: to.ChatID, ChatType: to.Type, Kind: KindChat,
		From:   Party{Kind: "bot", ID: bot.ID, Name: bot.Name},
		UserID: data.Message.UserID, Bot: bot.ID, Text: text, Time: g.now(), DelegationID: delegationID,
	}
	if data.Delegation != nil {
		m.UserID = data.Delegation.UserID
	}
	if to.ChatID == data.Message.ChatID && to.Platform == data.Message.Platform {
		m.ReplyTo = data.Message.PlatformMsgID
	}
	return Post{Message: m, Session: data.Ref.SessionID}
}

func apology(bot *Bot) string {
	return fmt.Sprintf("Sorry, %s couldn't answer just now. Please try again in a moment.", bot.Name)
}

// complete stores a turn's outcome, retrying store failures, then hands
// its messages to the outbox, queues the turns it started and pushes the
// delegation changes to watchers.
func (g *Gateway) complete(ctx context.Context, log logger, c Completion) {
	c.OnStored = g.completionStored(&c)
	if !g.retryStore(ctx, log, "complete turn", func() error {
		_, err := g.store.CompleteTurn(ctx, c)
		return err
	}) {
		return
	}
	g.obs.TurnDone(PathQueued)
	if u := c.Update; u != nil {
		g.notifyUpdate(ctx, u.ID)
	}
}

// completionStored is the callback of c's write. Replies and new turns
// are queued there, in the order they were stored; watchers see "queued"
// before the target's turn can say "running".
func (g *Gateway) completionStored(c *Completion) func(Completed) {
	delegations := c.Delegations
	return func(done Completed) {
		for _, d := range delegations {
			g.notify(d.Record)
		}
		for _, o := range done.Outbox {
			g.outbox.enqueue(o)
		}
		for _, t := range done.Turns {
			g.push(t)
		}
	}
}

// retryStore runs fn until it succeeds or ctx ends; false means ctx ended.
func (g *Gateway) retryStore(ctx context.Context, log logger, what string, fn func() error) bool {
	wait := storeRetryMin
	for {
		err := fn()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if errors.Is(err, ErrNotFound) {
			log.Error(what+" failed; giving up", "err", err)
			return false
		}
		log.Error(what+" failed; retrying", "err", err, "wait", wait)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, storeRetryMax)
	}
}

// historyLimit is the most history any bot in force is shown, which the
// store's cache keeps per session.
func (g *Gateway) historyLimit() int { return g.roster.Load().historyLimit }

// think runs the brain within timeout.
func (g *Gateway) think(ctx context.Context, bot *Bot, data TurnData, timeout time.Duration) (brains.Reply, error) {
	if bot.Brain == nil {
		return brains.Reply{}, errors.New("bot has no brain")
	}
	if timeout > 0 {
		var release func()
		ctx, release = withTurnDeadline(ctx, timeout)
		defer release()
	}
	window := bot.HistoryWindow
	if window <= 0 {
		window = defaultHistoryWindow
	}
	history := data.History
	if len(history) > window {
		history = history[len(history)-window:]
	}
	turn := brains.Turn{
		SessionID: data.Session.ID,
		ResumeID:  data.Session.ResumeID,
		Bot:       brains.Bot{ID: bot.ID, Name: bot.Name, Persona: bot.Persona},
		User:      g.turnUser(bot, data),
		Platform:  data.Message.Platform,
		Group:     data.Message.ChatType == ChatGroup,
		Text:      data.Text,
	}
	// The history's entries go back to the pool once the brain has
	// answered: a brain keeps none of a turn's slices (brains.Brain).
	buf := entryPool.Get().(*[]brains.Entry)
	defer func() {
		clear(*buf)
		entryPool.Put(buf)
	}()
	*buf = appendEntries((*buf)[:0], history)
	turn.History = *buf
	roster := g.roster.Load()
	turn.Team = roster.team(bot.ID)
	if d := data.Delegation; d != nil {
		turn.Platform = d.Origin.Platform
		if turn.Platform == "" {
			turn.Platform = PlatformAPI
		}
		turn.Group = false
		inputs, err := g.store.Artifacts(ctx, d.Inputs)
		if err != nil {
			return brains.Reply{}, fmt.Errorf("delegation inputs: %w", err)
		}
		turn.Delegation = &brains.Delegation{
			ID: d.ID, From: roster.Name(d.From), FromID: d.From, Task: d.Task, Depth: d.Depth,
			Wrapper: data.Message.Text,
		}
		for _, e := range d.Expected {
			turn.Delegation.Expected = append(turn.Delegation.Expected, brains.Expected{Name: e.Name, MediaType: e.MediaType})
		}
		for _, a := range inputs {
			turn.Delegation.Inputs = append(turn.Delegation.Inputs, brains.Artifact{ID: a.ID, Name: a.Name, MediaType: a.MediaType, Content: a.Content})
		}
	}
	if turn.Group {
		group, err := g.store.ChatMessages(ctx, data.Message.Platform, data.Message.ChatID, 20)
		if err != nil {
			return brains.Reply{}, fmt.Errorf("group history: %w", err)
		}
		turn.GroupHistory = entries(before(group, data.Message.ID))
	}
	start := time.Now()
	defer func() { g.obs.BrainTurn(bot.ID, bot.BrainKind, time.Since(start)) }()
	return bot.Brain.Reply(ctx, turn)
}

// turnUser names the person a turn answers.
func (g *Gateway) turnUser(bot *Bot, data TurnData) brains.User {
	if d := data.Delegation; d != nil {
		return brains.User{ID: d.UserID, Name: d.UserName}
	}
	m := data.Message
	if bot.Public {
		return brains.User{ID: m.From.ID, Name: m.From.Name}
	}
	u, listed := g.users.Load().User(m.UserID)
	if listed && u.Name != "" {
		return brains.User{ID: u.ID, Name: u.Name}
	}
	return brains.User{ID: m.UserID, Name: m.From.Name}
}

// startTyping refreshes the platform's typing indicator until the returned
// function is called. Nothing runs before typingAfter: most turns of a
// quick brain end before then and cost only a timer.
func (g *Gateway) startTyping(platform, bot, chatID string) func() {
	p, ok := g.platform(platform)
	typer, can := p.(Typer)
	if !ok || !can {
		return func() {}
	}
	var (
		mu      sync.Mutex
		stopped bool
		cancel  context.CancelFunc
		done    chan struct{}
	)
	first := time.AfterFunc(typingAfter, func() {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		var ctx context.Context
		ctx, cancel = context.WithCancel(g.turnCtx)
		done = make(chan struct{})
		mu.Unlock()
		defer close(done)
		t := time.NewTicker(typingEvery)
		defer t.Stop()
		for ctx.Err() == nil {
			if err := typer.Typing(ctx, bot, chatID); err != nil && ctx.Err() == nil {
				g.log.Debug("typing indicator", "platform", platform, "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() {
		if first.Stop() {
			return // it never ran
		}
		mu.Lock()
		stopped = true
		c, d := cancel, done
		mu.Unlock()
		if c != nil {
			c()
			<-d
		}
	}
}

// entries converts stored messages to brain history.
func entries(msgs []Message) []brains.Entry {
	return appendEntries(make([]brains.Entry, 0, len(msgs)), msgs)
}

// appendEntries appends msgs to out as brain history.
func appendEntries(out []brains.Entry, msgs []Message) []brains.Entry {
	for _, m := range msgs {
		out = append(out, brains.Entry{Kind: m.From.Kind, From: m.From.Name, Text: m.Text, Time: m.Time})
	}
	return out
}

// entryPool holds the arrays of turns' histories (think).
var entryPool = sync.Pool{New: func() any { return new([]brains.Entry) }}

// before returns the messages older than id.
func before(msgs []Message, id int64) []Message {
	for i, m := range msgs {
		if m.ID >= id {
			return msgs[:i]
		}
	}
	return msgs
}

// artifactRecords hashes a turn's artifacts for storage.
func artifactRecords(arts []brains.Artifact, producer string) []ArtifactRecord {
	out := make([]ArtifactRecord, 0, len(arts))
	for _, a := range arts {
		sum := sha256.Sum256(a.Content)
		out = append(out, ArtifactRecord{
			ID:        "art-" + uuid.NewString(),
			Name:      a.Name,
			MediaType: a.MediaType,
			Size:      int64(len(a.Content)),
			SHA256:    hex.EncodeToString(sum[:]),
			Producer:  producer,
			Content:   a.Content,
		})
	}
	return out
}
