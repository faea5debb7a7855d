package gateway

import (
	"context"
	"fmt"
	"slices"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/identity"
	"github.com/switchboard-chat/switchboard/sessions"
)

var _ Host = (*Gateway)(nil)

// Reachable implements Host: the outbox tries the chats' parked entries
// again.
func (g *Gateway) Reachable(platform string, chatIDs ...string) {
	g.outbox.Wake(platform, chatIDs...)
	if g.shared == nil || len(chatIDs) == 0 {
		return
	}
	// What another process could not deliver to these chats is
	// delivered here.
	chats := slices.Clone(chatIDs)
	g.goBackground(func() {
		ctx, cancel := context.WithTimeout(context.Background(), noticeTimeout)
		defer cancel()
		g.catchUp(ctx, platform, chats)
	})
}

// Bots implements Host.
func (g *Gateway) Bots(platform string) []BotInfo {
	r := g.roster.Load()
	if r == nil {
		return nil
	}
	var out []BotInfo
	for _, b := range r.order {
		if b.On(platform) {
			out = append(out, BotInfo{ID: b.ID, Name: b.Name})
		}
	}
	return out
}

// Resolve implements Host. An unlisted anonymous web visitor is named
// by identity.GuestName.
func (g *Gateway) Resolve(platformID string) UserRef {
	u, listed := g.users.Load().Resolve(platformID)
	if !listed {
		u.Name, _ = identity.GuestName(platformID)
	}
	return UserRef{ID: u.ID, Name: u.Name}
}

// SessionHistory implements Host.
func (g *Gateway) SessionHistory(ctx context.Context, bot, platformID string, limit int) ([]Shown, error) {
	b, ok := g.roster.Load().Bot(bot)
	if !ok {
		return nil, fmt.Errorf("history: %w: %q", ErrUnknownBot, bot)
	}
	userID := platformID
	if !b.Public {
		userID = g.Resolve(platformID).ID
	}
	key := sessions.Key{Bot: bot, Scope: sessions.ScopeUser, ScopeID: userID}
	msgs, err := sessions.History(ctx, g.sessions, key, chat.KindChat, limit)
	if err != nil {
		return nil, err
	}
	return g.shown(ctx, msgs)
}

// ChatHistory implements Host.
func (g *Gateway) ChatHistory(ctx context.Context, platform, chatID string, limit int) ([]chat.Message, error) {
	return g.store.ChatMessages(ctx, platform, chatID, limit)
}
