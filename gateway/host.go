package gateway

import (
	"context"
	"fmt"
)

var _ Host = (*Gateway)(nil)

// Reachable implements Host: parked outbox entries for the chats are
// retried.
func (g *Gateway) Reachable(platform string, chatIDs ...string) {
	g.outbox.wake(platform, chatIDs)
}

// Bots implements Host.
func (g *Gateway) Bots(platform string) []BotInfo {
	r := g.roster.Load()
	if r == nil {
		return nil
	}
	// The roster's own order, not a copy: the web asks for every message
	// it takes.
	var out []BotInfo
	for _, b := range r.order {
		if b.On(platform) {
			if out == nil {
				out = make([]BotInfo, 0, len(r.order))
			}
			out = append(out, BotInfo{ID: b.ID, Name: b.Name})
		}
	}
	return out
}

// Resolve implements Host.
func (g *Gateway) Resolve(platformID string) UserRef {
	u, _ := g.users.Load().Resolve(platformID)
	return UserRef{ID: u.ID, Name: u.Name}
}

// SessionHistory implements Host.
func (g *Gateway) SessionHistory(ctx context.Context, bot, platformID string, limit int) ([]Message, error) {
	b, ok := g.roster.Load().Bot(bot)
	if !ok {
		return nil, fmt.Errorf("history: %w: %q", ErrUnknownBot, bot)
	}
	userID := platformID
	if !b.Public {
		userID = g.Resolve(platformID).ID
	}
	s, ok, err := g.store.FindSession(ctx, SessionKey{Bot: bot, Scope: ScopeUser, ScopeID: userID})
	if err != nil || !ok {
		return nil, err
	}
	return g.store.SessionMessages(ctx, s.ID, limit)
}

// ChatHistory implements Host.
func (g *Gateway) ChatHistory(ctx context.Context, platform, chatID string, limit int) ([]Message, error) {
	return g.store.ChatMessages(ctx, platform, chatID, limit)
}

// JoinRoom implements Host.
func (g *Gateway) JoinRoom(ctx context.Context, platform, room, member string, bots []string) ([]BotInfo, error) {
	roster := g.roster.Load()
	if bots == nil {
		bots = botIDs(roster, platform)
	}
	for _, id := range bots {
		if b, ok := roster.Bot(id); !ok || !b.On(platform) {
			return nil, fmt.Errorf("join: %w: %q", ErrUnknownBot, id)
		}
	}
	ids, err := g.store.EnsureRoom(ctx, platform, room, member, bots)
	if err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	out := make([]BotInfo, 0, len(ids))
	for _, id := range ids {
		if b, ok := roster.Bot(id); ok {
			out = append(out, BotInfo{ID: b.ID, Name: b.Name})
		}
	}
	return out, nil
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
