package gateway

import (
	"context"
	"errors"
	"log/slog"
	"strconv"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world/gossip"
)

// Gossip (SPEC §10.5) as the gateway takes part in it: a person's message
// that a bot answers is handed to the grapevine once it is stored, after
// the turns it asks for are woken, so that checking it never delays a
// reply; each turn of a non-public bot gets the newest memories its bot
// has of the turn's person; the grapevine sees the bots and the people
// through the roster and the directory in force (GossipCast).

// Gossip is the grapevine (world/gossip.Grapevine) as the gateway uses
// it.
type Gossip interface {
	// Heard hands over a stored message to check; it must not block.
	Heard(h gossip.Heard)
	// Memories lists the newest memories bot has of user, oldest first.
	Memories(ctx context.Context, bot, user string) ([]gossip.Memory, error)
	// Events lists events as q selects them, newest first.
	Events(ctx context.Context, q gossip.Query) ([]gossip.Event, error)
}

// gossipHeard hands the grapevine a person's message m, just stored,
// which turns asks bots to answer: the first bot addressed is the one
// told. Other messages (a bot's, one no bot answers) are no news. The
// message's key is its platform's name for it, the same for the copies
// of one group message that each bot of the group receives (Telegram,
// Discord): they make one event.
func (g *Gateway) gossipHeard(ev Event, user UserRef, m chat.Message, turns []sessions.Request) {
	if g.gossip == nil || ev.Sender.IsBot || len(turns) == 0 || m.Kind != chat.KindChat {
		return
	}
	g.gossip.Heard(gossip.Heard{
		MessageID: m.ID, Key: ev.Platform + "/" + strconv.Quote(ev.ChatID) + "/" + ev.MessageID,
		User: user.ID, UserName: user.Name, Bot: turns[0].Session.Bot, Platform: ev.Platform, Text: turns[0].Text,
	})
}

// gossipMemories gives turn the memories bot has of the turn's person.
// A turn goes on without them when they cannot be read.
func (g *Gateway) gossipMemories(ctx context.Context, log *slog.Logger, roster *Roster, bot *Bot, turn *brains.Turn) {
	if g.gossip == nil || bot.Public {
		return
	}
	ms, err := g.gossip.Memories(ctx, bot.ID, turn.User.ID)
	if err != nil {
		log.Error("gossip memories for a turn", "bot", bot.ID, "err", err)
		return
	}
	for _, m := range ms {
		turn.Memories = append(turn.Memories, brains.Memory{From: roster.Name(m.From), Text: m.Text})
	}
}

// GossipCast is the team and the people as the grapevine sees them: the
// roster and the user directory in force when it asks.
func (g *Gateway) GossipCast() gossip.Cast { return gossipCast{g} }

// gossipCast implements gossip.Cast over a gateway.
type gossipCast struct{ g *Gateway }

// GossipBots implements gossip.Cast.
func (c gossipCast) GossipBots() []gossip.Bot {
	bots := c.g.roster.Load().Bots()
	out := make([]gossip.Bot, 0, len(bots))
	for _, b := range bots {
		out = append(out, gossip.Bot{ID: b.ID, Name: b.Name, Persona: b.Persona, Public: b.Public, Brain: b.Brain, Timeout: b.Timeout})
	}
	return out
}

// GossipPerson implements gossip.Cast: a person users.yaml does not list
// shares and is visible.
func (c gossipCast) GossipPerson(id string) gossip.Person {
	u, listed := c.g.users.Load().User(id)
	p := gossip.Person{Share: u.ShareWithOtherBots, Invisible: u.Invisible}
	if listed {
		p.Name = u.Name
	}
	return p
}

// GossipEvents lists gossip events for the admin API, newest first: about
// user (a master or platform ID; "" for everyone), of status ("" for
// any), at most limit.
func (g *Gateway) GossipEvents(ctx context.Context, user, status string, limit int) ([]gossip.Event, error) {
	if g.gossip == nil {
		return nil, errors.New("gossip: no grapevine")
	}
	q := gossip.Query{Status: status, Limit: limit}
	if user != "" {
		u, _ := g.users.Load().User(user)
		q.Users = u.IDs()
	}
	return g.gossip.Events(ctx, q)
}
