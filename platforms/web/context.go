package web

import (
	"context"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/world"
	"github.com/switchboard-chat/switchboard/world/shared"
)

// The shared context in the widget (SPEC §10.7): context {bot|chat,
// limit} asks for the context of a space, answered by context {space,
// chat?, events, entities, facts, chain}; the same frame goes to every
// connection in a room whenever its context changes (a bot added to it,
// a step of its chain ended), so a room's side panel stays current.

var _ gateway.ContextWatcher = (*Adapter)(nil)

// contextFrame is the context frame: a space's whole context as the
// admin API shows it.
type contextFrame struct {
	Type  string `json:"type"`
	Space string `json:"space"`
	// Chat is the room, for a room's space.
	Chat string `json:"chat,omitempty"`
	shared.Context
}

// handleContext answers a context frame.
func (c *conn) handleContext(ctx context.Context, f inFrame) error {
	if f.Bot != "" && !c.onWeb(f.Bot) {
		return c.unknownBot(f.Bot, f.ClientID)
	}
	space, sc, err := c.host.Context(ctx, gateway.ContextRequest{
		Platform: c.v.platform, PlatformID: c.v.platformID, Bot: f.Bot, Chat: f.Chat, Limit: min(f.Limit, maxHistory),
	})
	if err != nil {
		return c.refusal("context", err, f.ClientID)
	}
	c.send(contextFrame{Type: "context", Space: space, Chat: f.Chat, Context: sc})
	return nil
}

// Watching implements gateway.ContextWatcher: whether a connection is
// in the room whose space it is.
func (a *Adapter) Watching(space world.Space) bool {
	if space.Kind != world.KindChat {
		return false
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return len(a.rooms[roomKey{space.Platform, space.Chat}]) > 0
}

// ContextChanged implements gateway.ContextWatcher: the connections in
// the room whose space it is get its context.
func (a *Adapter) ContextChanged(space world.Space, sc shared.Context) {
	if space.Kind != world.KindChat {
		return
	}
	frame := contextFrame{Type: "context", Space: space.String(), Chat: space.Chat, Context: sc}
	for _, c := range a.recipients(space.Platform, space.Chat, true) {
		c.send(frame)
	}
}
