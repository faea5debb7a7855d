package gateway

import (
	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/sessions"
)

// Actor is who takes the actions of one turn (SPEC §10.1): the turn's
// bot, for the turn's person, in the turn's space. The gateway makes one
// for each turn and binds the turn's brains.Actions to it, so an action
// never says who acts: a model or an agent cannot act as another bot,
// for another person or in another space.
type Actor struct {
	// Bot is the acting bot's ID.
	Bot string
	// User is the person the turn answers.
	User brains.User
	// Space is where shared things of the turn live: "user:<id>" for a
	// person's private chats, "chat:<platform>:<chat id>" for a group;
	// a delegated or help turn works in the space its request came from.
	Space string
	// Session is the turn's session ID: a help request's answer comes
	// back there.
	Session string
	// Chat is the chat the turn works for: where its reply goes, and so
	// where a help request's follow-up answers; for a helper's turn, whose
	// answer is shown to nobody, the chat the request came from. Empty for
	// work asked outside any chat (the API).
	Chat chat.Ref
	// Sender is the person's platform ID in Chat, when known.
	Sender string
	// Delegation is the ID of the delegation record the turn works for
	// (a hand-off, a help request or its follow-up): a delegation the
	// turn starts is one deeper. "" for a turn on a person's message.
	Delegation string
}

// Binder makes the actions of one turn, bound to its actor; it returns
// nil when the turn may take none.
type Binder func(Actor) brains.Actions

// SetActions installs the binder the turns' Actions come from (the
// actions registry). Until one is set, and for public bots always, turns
// have no actions.
func (g *Gateway) SetActions(b Binder) {
	if b == nil {
		g.binder.Store(nil)
		return
	}
	g.binder.Store(&b)
}

// actions binds turn t's actions: t's bot, for its person, speaking in
// where.
func (g *Gateway) actions(bot *Bot, t sessions.Turn, where chat.Ref) brains.Actions {
	b := g.binder.Load()
	if b == nil || bot.Public {
		return nil
	}
	return (*b)(g.actor(bot, t, where))
}

// actor is the Actor of turn t of bot, whose reply goes to where.
func (g *Gateway) actor(bot *Bot, t sessions.Turn, where chat.Ref) Actor {
	a := Actor{Bot: bot.ID, User: g.turnUser(bot, t), Session: t.Ref.SessionID, Chat: where}
	a.Sender = originSender(t, t.Delegation, where)
	a.Space = SpaceOf(t.Message.Chat(), a.User.ID)
	if d := t.Delegation; d != nil {
		a.Delegation, a.Space = d.ID, SpaceOf(d.Origin, d.UserID)
	}
	return a
}

// SpaceOf is the space of a chat for a person (SPEC §10): a group's own,
// else the person's private space (also for a request made outside any
// chat, through the API).
func SpaceOf(in chat.Ref, userID string) string {
	if in.Type == chat.Group {
		return "chat:" + in.Platform + ":" + in.ID
	}
	return "user:" + userID
}
