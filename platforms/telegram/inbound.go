package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-telegram/bot/models"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
)

// deliverTimeout bounds storing one event. Delivery runs on a context
// detached from the connection's, so an update handed over just as the
// bot stops is still stored rather than lost.
const deliverTimeout = 10 * time.Second

// directory maps the bots this platform serves from their Telegram
// identity to their Switchboard bot ID.
type directory struct {
	byName map[string]string // lower-cased username → bot ID
	byID   map[int64]string  // Telegram user ID → bot ID
}

// deliver turns upd into an event for c's bot and hands it to host.
// Updates that are not for the bot are skipped without error.
func (p *Platform) deliver(ctx context.Context, c *conn, host gateway.Host, upd *models.Update) error {
	ev, ok := toEvent(c.cfg.BotID, c.me.Load(), p.directory(), upd)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deliverTimeout)
	defer cancel()
	r, err := host.Deliver(ctx, ev)
	if err != nil {
		return fmt.Errorf("telegram deliver: %w", err)
	}
	p.log.Debug("telegram message", "bot", ev.Bot, "chat", ev.ChatID, "message", ev.MessageID, "duplicate", r.Duplicate)
	return nil
}

// toEvent converts a Bot API update received by bot (whose own Telegram
// user is me) into a gateway event. ok is false for updates the gateway
// does not take: anything but a new message with text or a caption in a
// private chat or a group, messages from the bot itself, and commands
// addressed to another bot ("/cmd@otherbot").
func toEvent(botID string, me *models.User, dir directory, upd *models.Update) (ev gateway.Event, ok bool) {
	if upd == nil || upd.Message == nil {
		return ev, false
	}
	m := upd.Message
	if m.From == nil || m.From.ID == 0 || m.ID <= 0 || (me != nil && m.From.ID == me.ID) {
		return ev, false
	}
	var typ chat.Type
	switch m.Chat.Type {
	case models.ChatTypePrivate:
		typ = chat.Private
	case models.ChatTypeGroup, models.ChatTypeSupergroup:
		typ = chat.Group
	default:
		return ev, false
	}
	text, entities := m.Text, m.Entities
	if text == "" {
		text, entities = m.Caption, m.CaptionEntities
	}
	if strings.TrimSpace(text) == "" {
		return ev, false
	}
	if to := commandTarget(text); to != "" && (me == nil || !strings.EqualFold(to, me.Username)) {
		return ev, false
	}
	ev = gateway.Event{
		Platform:  gateway.PlatformTelegram,
		Bot:       botID,
		ChatID:    strconv.FormatInt(m.Chat.ID, 10),
		ChatType:  typ,
		ChatName:  m.Chat.Title,
		MessageID: strconv.Itoa(m.ID),
		Sender: gateway.Sender{
			PlatformID: "telegram-" + strconv.FormatInt(m.From.ID, 10),
			Name:       senderName(m.From),
			IsBot:      m.From.IsBot,
		},
		Text:     text,
		Mentions: mentions(text, entities, dir),
	}
	if r := m.ReplyToMessage; r != nil && r.ID > 0 {
		ev.ReplyTo = strconv.Itoa(r.ID)
	}
	if m.Date > 0 {
		ev.Time = time.Unix(int64(m.Date), 0).UTC()
	}
	return ev, true
}

// mentions converts the mention and text_mention entities of text (whose
// offsets count UTF-16 code units) to byte spans. Entities that do not fall
// on character boundaries inside text are dropped.
func mentions(text string, entities []models.MessageEntity, dir directory) []gateway.Mention {
	var out []gateway.Mention
	for _, e := range entities {
		start, end, ok := gateway.UTF16Span(text, e.Offset, e.Length)
		if !ok || start == end {
			continue
		}
		switch e.Type {
		case models.MessageEntityTypeMention:
			name, ok := strings.CutPrefix(text[start:end], "@")
			if !ok || name == "" {
				continue
			}
			out = append(out, gateway.Mention{Start: start, End: end, Name: name, Bot: dir.byName[strings.ToLower(name)]})
		case models.MessageEntityTypeTextMention:
			if e.User == nil {
				continue
			}
			bot := dir.byID[e.User.ID]
			// Without a bot or a username there is nothing the gateway
			// could match: a display name ("Finn") may be anyone's.
			if bot == "" && e.User.Username == "" {
				continue
			}
			out = append(out, gateway.Mention{Start: start, End: end, Name: e.User.Username, Bot: bot})
		}
	}
	return out
}

// commandTarget returns the username of "/cmd@username" at the start of
// text, the bot a command is addressed to; "" when text does not start
// with a command or the command names no bot. It reads the token as the
// gateway's command parser does.
func commandTarget(text string) string {
	if !strings.HasPrefix(text, "/") {
		return ""
	}
	end := 1
	for end < len(text) {
		r, size := utf8.DecodeRuneInString(text[end:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_-.@", r) {
			break
		}
		end += size
	}
	_, to, _ := strings.Cut(text[1:end], "@")
	// A username is [A-Za-z0-9_]; what follows ("/cmd@bot.") is not part
	// of it.
	n := 0
	for n < len(to) && isUsernameByte(to[n]) {
		n++
	}
	return to[:n]
}

func isUsernameByte(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// senderName is a person's display name: first and last name, else the
// username.
func senderName(u *models.User) string {
	if name := strings.TrimSpace(u.FirstName + " " + u.LastName); name != "" {
		return name
	}
	return u.Username
}
