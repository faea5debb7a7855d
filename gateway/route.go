package gateway

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/identity"
	"github.com/switchboard-chat/switchboard/sessions"
)

// route picks the chat a turn's reply goes to (SPEC §3): a group message
// is answered in its group; a private one in the private chat where the
// person last spoke in the session, which may be on another platform than
// the message being answered when they moved while the bot was thinking.
func (g *Gateway) route(ctx context.Context, t sessions.Turn) (chat.Ref, error) {
	here := t.Message.Chat()
	if here.Type == chat.Group {
		return here, nil
	}
	last, ok, err := g.sessions.LastPrivateChat(ctx, t.Session.ID)
	if err != nil || !ok {
		return here, err
	}
	return last, nil
}

// routeDelegated picks the chat for the reply of bot, the target of d
// (SPEC §3): the group the hand-off came from when bot is in it; else the
// chat where the user last spoke to bot; else the bot's private chat on
// the platform of the hand-off, then on the platform where the user last
// spoke to any bot, then on any other platform of the bot where users.yaml
// gives the user an identity (a Discord DM the bot opens), then on the web
// (delivered when the user connects).
func (g *Gateway) routeDelegated(ctx context.Context, bot *Bot, d delegation.Record) (chat.Ref, error) {
	if d.Origin.Type == chat.Group {
		in, err := g.store.ChatHasBot(ctx, d.Origin.Platform, d.Origin.ID, bot.ID)
		if err != nil {
			return chat.Ref{}, err
		}
		if in {
			return d.Origin, nil
		}
	}
	s, ok, err := g.sessions.FindSession(ctx, sessions.Key{Bot: bot.ID, Scope: sessions.ScopeUser, ScopeID: d.UserID})
	if err != nil {
		return chat.Ref{}, err
	}
	if ok {
		last, found, err := g.sessions.LastPrivateChat(ctx, s.ID)
		if err != nil {
			return chat.Ref{}, err
		}
		if found {
			return last, nil
		}
	}
	if d.Origin.Platform != "" {
		if c, ok := g.privateChat(ctx, bot, d.Origin.Platform, d.OriginSender, d.UserID); ok {
			return c, nil
		}
	}
	if last, pid, found, err := g.store.LastPrivateChatOfUser(ctx, d.UserID); err != nil {
		return chat.Ref{}, err
	} else if found {
		if c, ok := g.privateChat(ctx, bot, last.Platform, pid, d.UserID); ok {
			return c, nil
		}
	}
	for _, p := range bot.Platforms {
		if p == PlatformWeb {
			continue
		}
		if c, ok := g.privateChat(ctx, bot, p, "", d.UserID); ok {
			return c, nil
		}
	}
	if c, ok := g.privateChat(ctx, bot, PlatformWeb, "", d.UserID); ok {
		return c, nil
	}
	return chat.Ref{}, fmt.Errorf("%s is on none of the platforms where I can reach you", bot.Name)
}

// privateChat names bot's private chat with the user on platform, using
// pid when it is the user's ID there, else the user's identity on that
// platform from users.yaml. ok is false when the bot is not on the
// platform or the user has no identity there.
func (g *Gateway) privateChat(ctx context.Context, bot *Bot, platform, pid, userID string) (chat.Ref, bool) {
	if !bot.On(platform) {
		return chat.Ref{}, false
	}
	if identity.Platform(pid) != platform {
		if platform == PlatformCLI {
			// Every bot is on cli, but a person is reached there only
			// from where they spoke (SPEC §9): never through an
			// identity users.yaml merely lists.
			return chat.Ref{}, false
		}
		pid = ""
		u, _ := g.users.Load().User(userID)
		for _, id := range u.Identities {
			if identity.Platform(id) == platform {
				pid = id
				break
			}
		}
		if pid == "" {
			return chat.Ref{}, false
		}
	}
	if p, ok := g.platform(platform); ok {
		if pc, ok := p.(PrivateChatter); ok {
			id, err := pc.PrivateChat(ctx, bot.ID, pid)
			if err != nil {
				g.log.Warn("open private chat", "platform", platform, "bot", bot.ID, "err", err)
				return chat.Ref{}, false
			}
			return chat.Ref{Platform: platform, ID: id, Type: chat.Private}, true
		}
	}
	if platform == PlatformWeb && strings.HasPrefix(pid, "web-") {
		return chat.Ref{Platform: platform, ID: PrivateChatID(pid, bot.ID), Type: chat.Private}, true
	}
	return chat.Ref{}, false
}
