package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/brains"
)

// typingEvery is how often a running turn refreshes the typing indicator.
const typingEvery = 4 * time.Second

// The history a turn sees: the bot's window, defaultHistoryWindow when it
// sets none, never more than maxHistoryWindow.
const (
	defaultHistoryWindow = 20
	maxHistoryWindow     = 200
)

// runTurn answers one queued turn: load it, ask the bot's brain, store the
// reply with the turn marked done, and hand the reply to the outbox. A
// brain failure becomes an apology from the bot; a store failure leaves
// the turn pending so the next start runs it again.
func (g *Gateway) runTurn(ref TurnRef) {
	defer g.finished(ref.ID)
	ctx := g.turnCtx
	log := g.log.With("turn", ref.ID, "session", ref.SessionID)
	if ref.After != 0 {
		// Turn IDs only wait on smaller IDs and queues run in ID order, so
		// the oldest pending turn never waits: no deadlock.
		if err := g.waitFor(ctx, ref.After); err != nil {
			return
		}
	}

	roster := g.roster.Load()
	data, err := g.store.LoadTurn(ctx, ref.ID, maxHistoryWindow)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			log.Error("load turn", "err", err)
		}
		return
	}
	bot, ok := roster.Bot(data.Session.Key.Bot)
	if !ok {
		// The bot was removed from bots.yaml after the message arrived.
		log.Warn("turn for a bot no longer configured; closed without reply", "bot", data.Session.Key.Bot)
		if _, err := g.store.CompleteTurn(ctx, Completion{Turn: ref, Session: ref.SessionID}); err != nil {
			log.Error("complete turn", "err", err)
		}
		return
	}
	window := bot.HistoryWindow
	if window <= 0 {
		window = defaultHistoryWindow
	}
	if window < len(data.History) {
		data.History = data.History[len(data.History)-window:]
	}

	stopTyping := g.startTyping(data.Message.Platform, bot.ID, data.Message.ChatID)
	reply, err := g.think(ctx, bot, data)
	stopTyping()

	if ctx.Err() != nil {
		return // shutting down: the turn stays pending and runs next start
	}
	text := strings.TrimSpace(reply.Text)
	if err != nil {
		log.Warn("brain failed", "bot", bot.ID, "kind", bot.BrainKind, "err", err)
		text = fmt.Sprintf("Sorry, %s couldn't answer just now. Please try again in a moment.", bot.Name)
		reply = brains.Reply{}
	}
	to, err := g.route(ctx, data)
	if err != nil {
		log.Error("route reply", "err", err)
		return
	}
	msg := &Message{
		Platform: to.Platform,
		ChatID:   to.ChatID,
		ChatType: to.Type,
		Kind:     KindChat,
		From:     Party{Kind: "bot", ID: bot.ID, Name: bot.Name},
		UserID:   data.Message.UserID,
		Bot:      bot.ID,
		Text:     text,
		Time:     g.now(),
	}
	if to.ChatID == data.Message.ChatID && to.Platform == data.Message.Platform {
		msg.ReplyTo = data.Message.PlatformMsgID
	}
	if text == "" {
		msg = nil
	}
	out, err := g.store.CompleteTurn(ctx, Completion{
		Turn:      ref,
		Session:   ref.SessionID,
		ResumeID:  reply.ResumeID,
		Reply:     msg,
		Artifacts: artifactRecords(reply.Artifacts, bot.ID),
	})
	if err != nil {
		log.Error("complete turn", "err", err)
		return
	}
	for _, o := range out {
		g.outbox.enqueue(o)
	}
}

// think runs the brain within the bot's timeout.
func (g *Gateway) think(ctx context.Context, bot *Bot, data TurnData) (brains.Reply, error) {
	if bot.Brain == nil {
		return brains.Reply{}, errors.New("bot has no brain")
	}
	if bot.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bot.Timeout)
		defer cancel()
	}
	turn := brains.Turn{
		SessionID: data.Session.ID,
		ResumeID:  data.Session.ResumeID,
		Bot:       brains.Bot{ID: bot.ID, Name: bot.Name, Persona: bot.Persona},
		User:      g.turnUser(bot, data.Message),
		Platform:  data.Message.Platform,
		Group:     data.Message.ChatType == ChatGroup,
		Text:      data.Text,
		History:   entries(data.History),
	}
	if turn.Group {
		group, err := g.store.ChatMessages(ctx, data.Message.Platform, data.Message.ChatID, 20)
		if err != nil {
			return brains.Reply{}, fmt.Errorf("group history: %w", err)
		}
		turn.GroupHistory = entries(before(group, data.Message.ID))
	}
	return bot.Brain.Reply(ctx, turn)
}

// turnUser names the person a turn answers.
func (g *Gateway) turnUser(bot *Bot, m Message) brains.User {
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
// function is called.
func (g *Gateway) startTyping(platform, bot, chatID string) func() {
	p, ok := g.platform(platform)
	typer, can := p.(Typer)
	if !ok || !can {
		return func() {}
	}
	ctx, cancel := context.WithCancel(g.turnCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(typingEvery)
		defer t.Stop()
		for {
			if err := typer.Typing(ctx, bot, chatID); err != nil && ctx.Err() == nil {
				g.log.Debug("typing indicator", "platform", platform, "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// entries converts stored messages to brain history.
func entries(msgs []Message) []brains.Entry {
	out := make([]brains.Entry, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, brains.Entry{Kind: m.From.Kind, From: m.From.Name, Text: m.Text, Time: m.Time})
	}
	return out
}

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
