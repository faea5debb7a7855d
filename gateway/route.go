package gateway

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchboard-chat/switchboard/identity"
)

// PrivateChatter is implemented by platforms that can name (opening it if
// needed) the private chat between a bot and a person, so a bot can write
// first — the target of a hand-off, say.
type PrivateChatter interface {
	PrivateChat(ctx context.Context, bot, platformID string) (chatID string, err error)
}

// route picks the chat a turn's reply goes to (SPEC §3): a group message
// is answered in its group; a private one in the private chat where the
// person last spoke in the session, which may be on another platform than
// the message being answered when they moved while the bot was thinking.
func (g *Gateway) route(ctx context.Context, data TurnData) (ChatRef, error) {
	here := ChatRef{Platform: data.Message.Platform, ChatID: data.Message.ChatID, Type: data.Message.ChatType}
	if here.Type == ChatGroup {
		return here, nil
	}
	last, ok, err := g.store.LastPrivateChat(ctx, data.Session.ID)
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
func (g *Gateway) routeDelegated(ctx context.Context, roster *Roster, bot *Bot, d Delegation) (ChatRef, error) {
	if d.Origin.Type == ChatGroup {
		in, err := g.store.ChatHasBot(ctx, d.Origin.Platform, d.Origin.ChatID, bot.ID)
		if err != nil {
			return ChatRef{}, err
		}
		if in {
			return d.Origin, nil
		}
	}
	s, ok, err := g.store.FindSession(ctx, SessionKey{Bot: bot.ID, Scope: ScopeUser, ScopeID: d.UserID})
	if err != nil {
		return ChatRef{}, err
	}
	if ok {
		last, found, err := g.store.LastPrivateChat(ctx, s.ID)
		if err != nil {
			return ChatRef{}, err
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
		return ChatRef{}, err
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
	return ChatRef{}, fmt.Errorf("%s is on none of the platforms where I can reach you", bot.Name)
}

// privateChat names bot's private chat with the user on platform, using
// pid when it is the user's ID there, else the user's identity on that
// platform from users.yaml. ok is false when the bot is not on the
// platform or the user has no identity there.
func (g *Gateway) privateChat(ctx context.Context, bot *Bot, platform, pid, userID string) (ChatRef, bool) {
	if !bot.On(platform) {
		return ChatRef{}, false
	}
	if identity.Platform(pid) != platform {
		pid = ""
		u, _ := g.users.Load().User(userID)
		for _, id := range u.Identities {
			if identity.Platform(id) == platform {
				pid = id
				break
			}
		}
		if pid == "" {
			return ChatRef{}, false
		}
	}
	if p, ok := g.platform(platform); ok {
		if pc, ok := p.(PrivateChatter); ok {
			chat, err := pc.PrivateChat(ctx, bot.ID, pid)
			if err != nil {
				g.log.Warn("open private chat", "platform", platform, "bot", bot.ID, "err", err)
				return ChatRef{}, false
			}
			return ChatRef{Platform: platform, ChatID: chat, Type: ChatPrivate}, true
		}
	}
	if platform == PlatformWeb && strings.HasPrefix(pid, "web-") {
		return ChatRef{Platform: platform, ChatID: PrivateChatID(pid, bot.ID), Type: ChatPrivate}, true
	}
	return ChatRef{}, false
}
