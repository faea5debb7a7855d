package gateway

import (
	"context"
	"fmt"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/sessions"
)

// Deliver is the pipeline's entry (Host.Deliver): it checks ev, resolves
// its sender, decides which bots it addresses, stores it with their turns
// and wakes their sessions. Before Start is done it waits for it, or for
// ctx.
func (g *Gateway) Deliver(ctx context.Context, ev Event) (Receipt, error) {
	if g.stopped.Load() {
		return Receipt{}, ErrStopped
	}
	select {
	case <-g.started:
	case <-ctx.Done():
		return Receipt{}, fmt.Errorf("deliver: waiting for the gateway to start: %w", ctx.Err())
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

	// The bots that may answer: a private chat's bot, a platform group's
	// bot (each bot receives its own copy), or a room's bots. A room (a
	// group event without a bot) takes messages from its members only,
	// or from anyone when it is open (SPEC §12).
	var present []string
	if ev.ChatType == chat.Group {
		if ev.Bot != "" {
			present = []string{ev.Bot}
		} else {
			room, err := g.enterRoom(ctx, ev.Platform, ev.ChatID, ev.Sender.PlatformID)
			if err != nil {
				return Receipt{}, fmt.Errorf("deliver: %w", g.refused("send", ev.Platform, ev.ChatID, ev.Sender.PlatformID, err))
			}
			present = room.Bots
		}
	}
	// A stage command is the gateway's to answer, not a bot's.
	stage, isStage := g.stageCommandOf(ev, roster)
	var turns []sessions.Request
	var focused *FocusKey
	if !ev.Sender.IsBot && !isStage {
		addrs, err := g.addressed(ctx, ev, roster, present)
		if err == nil && ev.ChatType == chat.Group {
			// A person's focus in the group (SPEC §10.3).
			addrs, focused, err = g.applyFocus(ctx, ev, roster, present, addrs)
		}
		if err != nil {
			return Receipt{}, fmt.Errorf("deliver: %w", err)
		}
		for _, a := range addrs {
			scopeID := user.ID
			if a.bot.Public {
				scopeID = ev.Sender.PlatformID
			}
			key := sessions.KeyFor(a.bot.ID, a.bot.SessionScope, ev.Chat(), scopeID)
			turns = append(turns, sessions.Request{Session: key, Text: a.text})
		}
	}

	res, err := g.store.AppendInbound(ctx, Inbound{Message: inboundMessage(ev, user), ChatName: ev.ChatName, Turns: turns, Focused: focused})
	if err != nil {
		return Receipt{}, fmt.Errorf("deliver: %w", err)
	}
	rec := Receipt{MessageID: res.Message.ID, Time: res.Message.Time, Duplicate: res.Duplicate}
	if len(res.Turns) > 0 {
		rec.Turn = true
		if len(res.Ahead) > 0 {
			rec.Queued = res.Ahead[0]
		}
	}
	if ev.OnStored != nil {
		ev.OnStored(rec)
	}
	if !res.Duplicate {
		g.obs.EventIn(ev.Platform)
		woken := make([]string, 0, len(res.Turns))
		for _, t := range res.Turns {
			woken = append(woken, t.SessionID)
		}
		g.runner.Wake(woken...)
		g.gossipHeard(ev, user, res.Message, turns)
		if isStage {
			g.runStageCommand(ctx, ev, user, res.Message, stage)
		}
	}
	return rec, nil
}

// inboundMessage is the message ev stores, said by user.
func inboundMessage(ev Event, user UserRef) chat.Message {
	m := chat.Message{
		Platform: ev.Platform, ChatID: ev.ChatID, ChatType: ev.ChatType,
		PlatformMsgID: ev.MessageID, Kind: chat.KindChat,
		From:   chat.Party{Kind: chat.Human, ID: ev.Sender.PlatformID, Name: user.Name},
		UserID: user.ID, Bot: ev.Bot, Text: ev.Text, ReplyTo: ev.ReplyTo, Time: ev.Time,
	}
	if ev.Sender.IsBot {
		m.From.Kind = chat.Bot
	}
	for _, mn := range ev.Mentions {
		name := mn.Bot
		if name == "" {
			name = mn.Name
		}
		m.Mentions = append(m.Mentions, name)
	}
	return m
}

// resolve maps the sender to a person. Public bots see raw platform IDs.
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

// botIDs lists the IDs of the roster's bots on platform.
func botIDs(r *Roster, platform string) []string {
	var ids []string
	for _, b := range r.Bots() {
		if b.On(platform) {
			ids = append(ids, b.ID)
		}
	}
	return ids
}
