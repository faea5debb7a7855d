package telegramtest

import (
	"strings"
	"time"
	"unicode/utf16"
)

// The wire types below are the Bot API's JSON objects, reduced to the
// fields Switchboard reads. They are the fake's own, so a test exercises
// the client library's decoding rather than sharing its structs.

// Update is one Bot API update (https://core.telegram.org/bots/api#update).
type Update struct {
	UpdateID      int64    `json:"update_id"`
	Message       *Message `json:"message,omitempty"`
	EditedMessage *Message `json:"edited_message,omitempty"`
	ChannelPost   *Message `json:"channel_post,omitempty"`
}

// Message is a Bot API message.
type Message struct {
	MessageID       int64    `json:"message_id"`
	From            *User    `json:"from,omitempty"`
	SenderChat      *Chat    `json:"sender_chat,omitempty"`
	Chat            Chat     `json:"chat"`
	Date            int64    `json:"date"`
	EditDate        int64    `json:"edit_date,omitempty"`
	Text            string   `json:"text,omitempty"`
	Entities        []Entity `json:"entities,omitempty"`
	Caption         string   `json:"caption,omitempty"`
	CaptionEntities []Entity `json:"caption_entities,omitempty"`
	ReplyToMessage  *Message `json:"reply_to_message,omitempty"`
}

// User is a Bot API user (a person or a bot).
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// Chat is a Bot API chat. Type is private, group, supergroup or channel.
type Chat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	Title     string `json:"title,omitempty"`
	Username  string `json:"username,omitempty"`
	FirstName string `json:"first_name,omitempty"`
	LastName  string `json:"last_name,omitempty"`
}

// Entity is a Bot API message entity. Offset and Length count UTF-16 code
// units, as Telegram does.
type Entity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
	User   *User  `json:"user,omitempty"`
}

// PrivateChat is the private chat between u and a bot: its ID is the
// user's ID, as on Telegram.
func PrivateChat(u User) Chat {
	return Chat{ID: u.ID, Type: "private", Username: u.Username, FirstName: u.FirstName, LastName: u.LastName}
}

// GroupChat is a supergroup; Telegram group IDs are negative.
func GroupChat(id int64, title string) Chat {
	return Chat{ID: id, Type: "supergroup", Title: title}
}

// Text builds an update carrying a new text message from from in chat.
// The server assigns the update ID, message ID and date when it is pushed.
func Text(chat Chat, from User, text string, entities ...Entity) Update {
	f := from
	return Update{Message: &Message{From: &f, Chat: chat, Text: text, Entities: entities}}
}

// Private builds a text message from from in its private chat with a bot.
func Private(from User, text string, entities ...Entity) Update {
	return Text(PrivateChat(from), from, text, entities...)
}

// Group builds a text message from from in a group chat.
func Group(chat Chat, from User, text string, entities ...Entity) Update {
	return Text(chat, from, text, entities...)
}

// ReplyTo makes u's message a reply to m, a message a bot sent.
func (u Update) ReplyTo(m SentMessage) Update {
	msg := *u.Message
	from := m.From
	msg.ReplyToMessage = &Message{MessageID: m.MessageID, From: &from, Chat: msg.Chat, Date: m.Date.Unix(), Text: m.Text}
	u.Message = &msg
	return u
}

// Edited turns u into an edited_message update for message id.
func (u Update) Edited(id int64) Update {
	msg := *u.Message
	msg.MessageID = id
	msg.EditDate = time.Now().Unix()
	return Update{EditedMessage: &msg}
}

// WithCaption moves u's text into a caption, as on a photo.
func (u Update) WithCaption() Update {
	msg := *u.Message
	msg.Caption, msg.CaptionEntities = msg.Text, msg.Entities
	msg.Text, msg.Entities = "", nil
	u.Message = &msg
	return u
}

// UTF16Len is the length of s in UTF-16 code units.
func UTF16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// EntityOf is an entity of kind covering the first occurrence of sub in
// text, with Telegram's UTF-16 offset and length. It panics when sub is
// not in text: that is a mistake in the test.
func EntityOf(kind, text, sub string) Entity {
	i := strings.Index(text, sub)
	if i < 0 {
		panic("telegramtest: " + sub + " not in " + text)
	}
	return Entity{Type: kind, Offset: UTF16Len(text[:i]), Length: UTF16Len(sub)}
}

// MentionOf is a "mention" entity for sub ("@username") in text.
func MentionOf(text, sub string) Entity { return EntityOf("mention", text, sub) }

// TextMentionOf is a "text_mention" entity: sub names u, who has no
// username or was picked from a list.
func TextMentionOf(text, sub string, u User) Entity {
	e := EntityOf("text_mention", text, sub)
	e.User = &u
	return e
}

// CommandOf is a "bot_command" entity for sub ("/cmd" or "/cmd@bot").
func CommandOf(text, sub string) Entity { return EntityOf("bot_command", text, sub) }

// Entities finds the entities Telegram's servers would attach to text: a
// bot_command at the start and every @username (5 to 32 of [A-Za-z0-9_]).
func Entities(text string) []Entity {
	var out []Entity
	if strings.HasPrefix(text, "/") {
		end := 1
		for end < len(text) && (isUsernameByte(text[end]) || text[end] == '@') {
			end++
		}
		if end > 1 {
			out = append(out, CommandOf(text, text[:end]))
		}
	}
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || (i > 0 && (isUsernameByte(text[i-1]) || text[i-1] == '/')) {
			continue
		}
		j := i + 1
		for j < len(text) && isUsernameByte(text[j]) {
			j++
		}
		if n := j - i - 1; n >= 5 && n <= 32 && !inCommand(out, text, i) {
			out = append(out, Entity{Type: "mention", Offset: UTF16Len(text[:i]), Length: UTF16Len(text[i:j])})
		}
		i = j - 1
	}
	return out
}

// inCommand reports whether byte i of text lies in a bot_command entity.
func inCommand(es []Entity, text string, i int) bool {
	u := UTF16Len(text[:i])
	for _, e := range es {
		if e.Type == "bot_command" && u >= e.Offset && u < e.Offset+e.Length {
			return true
		}
	}
	return false
}

func isUsernameByte(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}
