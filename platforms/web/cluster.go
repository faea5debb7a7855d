package web

import (
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
)

// On a database several gateway processes share (SPEC §11), a widget or
// terminal connection may be on any of them. What another process stores
// for a chat held here reaches it through the gateway (gateway.Holder):
// replies as outbox entries, delivered by this process's Send too, and a
// person's message in a room through ShowInbound.

var (
	_ gateway.Holder     = (*Adapter)(nil)
	_ gateway.Holder     = (*CLI)(nil)
	_ gateway.RateSharer = (*Adapter)(nil)
	_ gateway.RateSharer = (*CLI)(nil)
)

// SpentElsewhere implements gateway.RateSharer: a message the person
// sent through another process counts against their rate here
// (gateway.web.max_messages_per_second_per_person holds across all).
func (a *Adapter) SpentElsewhere(person string) {
	if person != "" {
		a.messages.person.spend(person, time.Now())
	}
}

// SpentElsewhere implements gateway.RateSharer for the terminal.
func (p *CLI) SpentElsewhere(person string) { p.a.SpentElsewhere(person) }

// Holds implements gateway.Holder: a connection of platform is in the
// room chatID, or is the person's whose private chat chatID is.
func (a *Adapter) Holds(platform, chatID string) bool {
	_, private := gateway.PrivateChatOwner(chatID)
	return len(a.recipients(platform, chatID, !private)) > 0
}

// ShowInbound implements gateway.Holder: the room's connections here see
// the person's message, as those of the process that took it did.
func (a *Adapter) ShowInbound(m chat.Message) {
	if m.ChatType != chat.Group || m.From.Kind != chat.Human {
		return
	}
	a.broadcast(m.Platform, m.ChatID, true, nil, func() any {
		return messageFrame{
			Type: "message", ID: m.ID, Chat: m.ChatID, ChatType: string(chat.Group), Bot: m.Bot,
			From: m.From, Text: m.Text, Time: m.Time.UTC().Format(time.RFC3339Nano),
		}
	})
}

// HeldChats lists, by platform, the chats whose messages connections here
// receive: the private chats of the people connected, with each bot,
// and the rooms joined.
func (a *Adapter) HeldChats() map[string][]string {
	h := a.host.Load()
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make(map[string][]string)
	for k := range a.rooms {
		out[k.platform] = append(out[k.platform], k.room)
	}
	if h == nil {
		return out
	}
	bots := make(map[string][]gateway.BotInfo)
	for pid, set := range a.byUser {
		for c := range set {
			platform := c.v.platform
			if _, ok := bots[platform]; !ok {
				bots[platform] = h.Bots(platform)
			}
			for _, b := range bots[platform] {
				out[platform] = append(out[platform], gateway.PrivateChatID(pid, b.ID))
			}
			break // every connection of a platform ID is of one platform
		}
	}
	return out
}

// Holds implements gateway.Holder for the terminal's connections.
func (p *CLI) Holds(platform, chatID string) bool { return p.a.Holds(platform, chatID) }

// ShowInbound implements gateway.Holder for the terminal's connections.
func (p *CLI) ShowInbound(m chat.Message) { p.a.ShowInbound(m) }
