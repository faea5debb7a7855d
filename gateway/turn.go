package gateway

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/sessions"
)

// answer is the sessions' Answerer: it decides what the bot of turn t
// says and does. A person's message that hands work to another bot is
// answered with the hand-off (SPEC §5); a delegated task is run as one
// (delegated.go); anything else goes to the bot's brain, whose failure
// becomes an apology from the bot. ok is false when ctx ended first: the
// turn then stays unanswered for the next start.
func (g *Gateway) answer(ctx context.Context, t sessions.Turn) (sessions.Outcome, bool) {
	roster := g.roster.Load()
	bot, known := roster.Bot(t.Session.Key.Bot)
	log := g.log.With("turn", t.Ref.ID, "session", t.Ref.SessionID)
	ctx = g.withChainStep(ctx, t)
	var o sessions.Outcome
	switch {
	case !known:
		// The bot was removed from bots.yaml after the message came.
		log.Warn("turn for a bot no longer configured; closed without reply", "bot", t.Session.Key.Bot)
		if d := t.Delegation; d != nil && !isFollowUp(t.Session.Key.Bot, t) {
			o = g.failDelegation(o, roster, *d, "the bot is no longer configured")
		}
	case isFollowUp(bot.ID, t):
		o = g.helpFollowUp(ctx, log, roster, bot, t)
	case t.Delegation != nil && t.Delegation.Kind == delegation.KindHelp:
		o = g.helpTurn(ctx, log, roster, bot, t)
	case t.Delegation != nil:
		o = g.delegatedTurn(ctx, log, roster, bot, t)
	default:
		o = g.ordinaryTurn(ctx, log, roster, bot, t)
		// Its messages in a group may wake other bots (crossbot.go).
		g.noteChainReply(bot, t, o)
	}
	if ctx.Err() != nil {
		g.dropChainReply(t.Ref.ID)
	}
	return o, ctx.Err() == nil
}

// ordinaryTurn answers a message: with a hand-off when it holds one of
// the bot's triggers, else with the brain's reply.
func (g *Gateway) ordinaryTurn(ctx context.Context, log *slog.Logger, roster *Roster, bot *Bot, t sessions.Turn) sessions.Outcome {
	var o sessions.Outcome
	// Until the reply is routed (after the brain, where the person is
	// then), the chat of the message is where the bot works.
	to := t.Message.Chat()
	if text, ok := g.focusConfirmation(bot, t); ok {
		o.Posts = append(o.Posts, g.post(bot, t, to, text, ""))
		return o
	}
	if t.Message.From.Kind == chat.Human {
		if text, hs, ok := g.handOffs(ctx, roster, bot, handoffAsk{t: t, text: t.Text, to: to}); ok {
			// The acknowledgement carries the first hand-off's status.
			id := ""
			for _, h := range hs {
				if h.Record.Status == delegation.StatusQueued {
					id = h.Record.ID
					break
				}
			}
			o.Posts = append(o.Posts, g.post(bot, t, to, text, id))
			o.Handoffs = hs
			return o
		}
	}

	stop := g.startTyping(to.Platform, bot.ID, to.ID)
	reply, asked, err := g.think(ctx, log, bot, t, bot.Timeout, to)
	stop()
	if ctx.Err() != nil {
		return o
	}
	// The person may have moved to another chat while the bot thought.
	if now, rerr := g.route(ctx, t); rerr == nil {
		to = now
	} else {
		log.Error("route reply", "err", rerr)
	}
	text := strings.TrimSpace(reply.Text)
	if err != nil {
		log.Warn("brain failed", "bot", bot.ID, "kind", bot.BrainKind, "err", err)
		p := g.post(bot, t, to, apology(bot), "")
		p.Message.Failed = true
		o.Posts = append(o.Posts, p)
		return o
	}
	o.ResumeID = reply.ResumeID
	o.Artifacts = artifactRecords(reply.Artifacts, bot.ID)
	if text != "" || len(o.Artifacts) > 0 {
		o.Posts = append(o.Posts, g.post(bot, t, to, cmp.Or(text, attachedNote(o.Artifacts)), ""))
	}
	// A reply may itself hand work on (SPEC §1), in its text or by the
	// turn's delegate actions.
	if note, hs, ok := g.handOffs(ctx, roster, bot, handoffAsk{t: t, text: text, extra: asked, to: to, fromReply: true, made: o.Artifacts}); ok {
		o.Handoffs = hs
		if note != "" {
			o.Posts = append(o.Posts, g.post(bot, t, to, note, ""))
		}
	}
	return o
}

// post is a message from bot in chat to, in turn t's session.
func (g *Gateway) post(bot *Bot, t sessions.Turn, to chat.Ref, text, delegationID string) sessions.Post {
	m := chat.Message{
		Platform: to.Platform, ChatID: to.ID, ChatType: to.Type, Kind: chat.KindChat,
		From:   chat.Party{Kind: chat.Bot, ID: bot.ID, Name: bot.Name},
		UserID: t.Message.UserID, Bot: bot.ID, Text: text, Time: g.now(), DelegationID: delegationID,
	}
	if t.Delegation != nil {
		m.UserID = t.Delegation.UserID
	} else {
		m.ReplyToID = t.Message.ID
	}
	if to.ID == t.Message.ChatID && to.Platform == t.Message.Platform {
		m.ReplyTo = t.Message.PlatformMsgID
	}
	return sessions.Post{Message: m, Session: t.Ref.SessionID}
}

func apology(bot *Bot) string {
	return fmt.Sprintf("Sorry, %s couldn't answer just now. Please try again in a moment.", bot.Name)
}

// turnStored tells watchers of the delegations a stored outcome started
// or changed.
func (g *Gateway) turnStored(o sessions.Outcome, done sessions.Done) {
	for _, h := range o.Handoffs {
		g.notify(h.Record)
	}
	if u := o.Update; u != nil {
		g.notifyUpdate(context.Background(), u.ID)
	}
	g.judgeReplies(o, done)
}

// think runs the brain within timeout, with the shared world of the
// turn's space (world.go). where is the chat the turn's reply goes to
// (for a helper's turn, whose answer is shown nowhere, the chat its
// request came from): its actions act from there. It returns the
// brain's reply and the hand-offs the turn's delegate actions asked for.
func (g *Gateway) think(ctx context.Context, log *slog.Logger, bot *Bot, t sessions.Turn, timeout time.Duration, where chat.Ref) (brains.Reply, []brains.Handoff, error) {
	if bot.Brain == nil {
		return brains.Reply{}, nil, errors.New("bot has no brain")
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	window := bot.HistoryWindow
	if window <= 0 {
		window = defaultHistoryWindow
	}
	history := t.History
	if len(history) > window {
		history = history[len(history)-window:]
	}
	roster := g.roster.Load()
	turn := brains.Turn{
		SessionID: t.Session.ID,
		ResumeID:  t.Session.ResumeID,
		Bot:       brains.Bot{ID: bot.ID, Name: bot.Name, Persona: bot.Persona},
		User:      g.turnUser(bot, t),
		Platform:  t.Message.Platform,
		Group:     t.Message.ChatType == chat.Group,
		Text:      t.Text,
		History:   entries(history),
		Team:      roster.team(bot.ID),
	}
	if t.Delegation == nil {
		turn.Crossbot = crossbotOf(ctx, t, &turn.User)
	}
	// The group whose talk the turn sees, and the message it sees it up to.
	group, upTo := t.Message.Chat(), t.Message.ID
	if d := t.Delegation; d != nil {
		turn.Platform = d.Origin.Platform
		if turn.Platform == "" {
			turn.Platform = PlatformAPI
		}
		turn.Group = false
		switch {
		case d.Kind == delegation.KindHelp:
			turn.Help = g.helpOf(roster, bot, *d, t)
			if turn.Help.Answered() && d.Origin.Type == chat.Group {
				// The follow-up answers in the group the request came from.
				turn.Group, group, upTo = true, d.Origin, 0
			}
		default:
			if err := g.delegationOf(ctx, roster, &turn, t); err != nil {
				return brains.Reply{}, nil, err
			}
		}
	}
	if turn.Group {
		msgs, err := g.store.ChatMessages(ctx, group.Platform, group.ID, groupHistory)
		if err != nil {
			return brains.Reply{}, nil, fmt.Errorf("group history: %w", err)
		}
		if upTo != 0 {
			msgs = before(msgs, upTo)
		}
		turn.GroupHistory = entries(msgs)
	}
	acts := g.bindWorld(ctx, log, roster, bot, t, &turn, where)
	start := time.Now()
	reply, err := bot.Brain.Reply(ctx, turn)
	g.obs.BrainTurn(bot.ID, bot.BrainKind, time.Since(start))
	var asked []brains.Handoff
	if acts != nil {
		// The turn is over: its actions refuse further calls (an agent's
		// straggling tool call), and what it asked to hand off is routed
		// with its outcome.
		asked = acts.End()
	}
	return reply, asked, err
}

// delegationOf tells the brain of turn the hand-off t carries: who asks,
// the task, its inputs and the outputs it expects.
func (g *Gateway) delegationOf(ctx context.Context, roster *Roster, turn *brains.Turn, t sessions.Turn) error {
	d := t.Delegation
	inputs, err := g.store.Artifacts(ctx, d.Inputs)
	if err != nil {
		return fmt.Errorf("delegation inputs: %w", err)
	}
	turn.Delegation = &brains.Delegation{
		ID: d.ID, From: roster.Name(d.From), FromID: d.From, Task: d.Task, Depth: d.Depth,
		Wrapper: t.Message.Text,
	}
	for _, e := range d.Expected {
		turn.Delegation.Expected = append(turn.Delegation.Expected, brains.Expected{Name: e.Name, MediaType: e.MediaType})
	}
	for _, a := range inputs {
		turn.Delegation.Inputs = append(turn.Delegation.Inputs, brains.Artifact{ID: a.ID, Name: a.Name, MediaType: a.MediaType, Content: a.Content})
	}
	return nil
}

// groupHistory is how many of a group's recent messages a turn in it
// sees.
const groupHistory = 20

// turnUser names the person a turn answers.
func (g *Gateway) turnUser(bot *Bot, t sessions.Turn) brains.User {
	if d := t.Delegation; d != nil {
		return brains.User{ID: d.UserID, Name: d.UserName}
	}
	m := t.Message
	if bot.Public {
		return brains.User{ID: m.From.ID, Name: m.From.Name}
	}
	u, listed := g.users.Load().User(m.UserID)
	if listed && u.Name != "" {
		return brains.User{ID: u.ID, Name: u.Name}
	}
	if m.From.Kind != chat.Human {
		// A bot's message, in a chain: the name is not on it
		// (crossbotOf finds it).
		return brains.User{ID: m.UserID, Name: m.UserID}
	}
	return brains.User{ID: m.UserID, Name: m.From.Name}
}

// entries converts stored messages to brain history.
func entries(msgs []chat.Message) []brains.Entry {
	out := make([]brains.Entry, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, brains.Entry{Kind: m.From.Kind, From: m.From.Name, Text: m.Text, Time: m.Time})
	}
	return out
}

// before returns the messages older than id.
func before(msgs []chat.Message, id int64) []chat.Message {
	for i, m := range msgs {
		if m.ID >= id {
			return msgs[:i]
		}
	}
	return msgs
}

// artifactRecords hashes a turn's artifacts for storage.
func artifactRecords(arts []brains.Artifact, producer string) []chat.Artifact {
	out := make([]chat.Artifact, 0, len(arts))
	for _, a := range arts {
		sum := sha256.Sum256(a.Content)
		out = append(out, chat.Artifact{
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
