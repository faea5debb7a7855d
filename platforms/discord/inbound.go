package discord

import (
	"errors"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
)

// onMessage turns a MESSAGE_CREATE into an event for the gateway. It runs
// in discordgo's read loop (SyncEvents), so messages reach the host in
// the order Discord dispatched them, including those replayed on RESUME.
func (c *botConn) onMessage(_ *discordgo.Session, m *discordgo.MessageCreate) {
	if !c.enter() {
		return
	}
	defer c.leave()
	ev, ok := c.p.event(c.cfg.BotID, c.selfID(), m.Message)
	if !ok {
		return
	}
	if ev.ChatType == chat.Private {
		c.p.rememberDM(c.cfg.BotID, m.Author.ID, m.ChannelID)
	}
	rcpt, err := c.host.Deliver(c.ctx, ev)
	switch {
	case err == nil:
	case errors.Is(err, gateway.ErrStopped) || c.ctx.Err() != nil:
		// Shutting down: Discord has no acknowledgements, so the message
		// is lost like any dispatched after we leave.
		c.log.Warn("discord message dropped while shutting down", "chat", ev.ChatID, "message", ev.MessageID)
		return
	default:
		c.log.Error("discord message not delivered to the gateway", "chat", ev.ChatID, "message", ev.MessageID, "err", err)
		return
	}
	if rcpt.Duplicate {
		c.log.Debug("discord message redelivered", "chat", ev.ChatID, "message", ev.MessageID)
	}
}

// event normalizes a Discord message received by bot, whose own Discord
// user ID is self. ok is false for messages the gateway does not take:
// the bot's own, another Switchboard bot's (the gateway has it already,
// and judges it for bot-to-bot chains itself, as on platforms that do not
// show bots each other's messages), system messages, and messages without
// text.
func (p *Platform) event(bot, self string, m *discordgo.Message) (ev gateway.Event, ok bool) {
	if m == nil || m.Author == nil || m.ID == "" || m.ChannelID == "" {
		return ev, false
	}
	if m.Author.ID == self {
		return ev, false
	}
	if _, ours := p.botOfUser(m.Author.ID); ours && m.Author.Bot {
		return ev, false
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		return ev, false
	}
	if strings.TrimSpace(m.Content) == "" {
		// Attachments or embeds only, or content without the intent.
		return ev, false
	}
	ev = gateway.Event{
		Platform:  gateway.PlatformDiscord,
		Bot:       bot,
		ChatID:    m.ChannelID,
		ChatType:  chat.Group,
		MessageID: m.ID,
		Sender: gateway.Sender{
			PlatformID: PlatformID(m.Author.ID),
			Name:       m.Author.DisplayName(),
			IsBot:      m.Author.Bot,
		},
		Text:     m.Content,
		Mentions: parseMentions(m.Content, p.botOfUser),
		Time:     m.Timestamp,
	}
	if m.GuildID == "" {
		ev.ChatType = chat.Private
	}
	if r := m.MessageReference; r != nil && (r.ChannelID == "" || r.ChannelID == m.ChannelID) {
		ev.ReplyTo = r.MessageID
	}
	return ev, true
}

// PlatformID is the Switchboard platform ID of a Discord user ID.
func PlatformID(userID string) string { return gateway.PlatformDiscord + "-" + userID }

// parseMentions finds Discord user mentions, <@id> and <@!id>, in text.
// botOf names the Switchboard bot whose Discord user ID is id; a mention
// of anyone else carries the ID as Name.
func parseMentions(text string, botOf func(id string) (string, bool)) []gateway.Mention {
	var out []gateway.Mention
	for i := 0; i < len(text); {
		j := strings.Index(text[i:], "<@")
		if j < 0 {
			break
		}
		start := i + j
		id, end, ok := mentionAt(text, start)
		if !ok {
			i = start + 2
			continue
		}
		m := gateway.Mention{Start: start, End: end}
		if bot, found := botOf(id); found {
			m.Bot = bot
		} else {
			m.Name = id
		}
		out = append(out, m)
		i = end
	}
	return out
}

// mentionAt parses "<@digits>" or "<@!digits>" at text[start:], which
// begins with "<@", and returns the ID and the end of the token.
func mentionAt(text string, start int) (id string, end int, ok bool) {
	k := start + 2
	if k < len(text) && text[k] == '!' {
		k++
	}
	digits := k
	for k < len(text) && text[k] >= '0' && text[k] <= '9' {
		k++
	}
	// Snowflakes are at most 20 digits; anything longer is not an ID.
	if k == digits || k-digits > 20 || k >= len(text) || text[k] != '>' {
		return "", 0, false
	}
	return text[digits:k], k + 1, true
}
