package gateway

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
)

// Platform names used in events and platform IDs.
const (
	PlatformWeb      = "web"
	PlatformTelegram = "telegram"
	PlatformDiscord  = "discord"
	PlatformCLI      = "cli"
	PlatformAPI      = "api"
)

// Event is one inbound message, normalized by a platform adapter.
//
// The tuple (Platform, Bot, ChatID, MessageID) identifies it: a second
// arrival of the same tuple is a redelivery and is dropped.
type Event struct {
	// Platform is the adapter's name (web, telegram, discord, cli, api).
	Platform string
	// Bot is the bot that received the message. It is empty for a web
	// group room, which is received by the room rather than one bot.
	Bot string
	// ChatID is the platform's chat identifier: for the web a private chat
	// is "<platform id>:<bot>" and a group room is its name.
	ChatID   string
	ChatType chat.Type
	// ChatName is a human-readable name for group chats (optional).
	ChatName string
	// MessageID is the platform's ID of the message, unique in the chat.
	MessageID string
	Sender    Sender
	Text      string
	// Mentions are the addresses found in Text by the adapter.
	Mentions []Mention
	// ReplyTo is the platform message ID this message answers, if any.
	ReplyTo string
	Time    time.Time
	// OnStored, if set, is called by Deliver once the message is stored
	// (or found to be a duplicate) and before Deliver wakes the sessions
	// that owe it an answer, so that an adapter can acknowledge it
	// ahead of the replies. A session already busy with an earlier
	// message may pick the new one up sooner; its reply still has a
	// brain turn and the outbox to pass. It must not block.
	OnStored func(Receipt) `json:"-"`
}

// Sender is who wrote a message on the platform.
type Sender struct {
	// PlatformID is "<platform>-<native id>", e.g. telegram-123456.
	PlatformID string
	Name       string
	IsBot      bool
}

// Mention is one address in a message's text. Start and End are byte
// offsets into Event.Text covering the whole token (e.g. "@finn"), so the
// gateway can strip it; adapters convert platform units (Telegram counts
// UTF-16 code units) to bytes.
type Mention struct {
	Start, End int
	// Bot is the Switchboard bot ID the mention addresses, when the
	// adapter could tell; otherwise empty and Name is matched by the
	// gateway against bot IDs, names and aliases.
	Bot string
	// Name is the handle as written, without '@' (username, ID, alias).
	Name string
}

// Chat is the chat the event was said in.
func (e Event) Chat() chat.Ref { return chat.Ref{Platform: e.Platform, ID: e.ChatID, Type: e.ChatType} }

// Validate reports the first missing or malformed field of e.
func (e Event) Validate() error {
	switch {
	case e.Platform == "":
		return errors.New("event: missing platform")
	case e.ChatID == "":
		return errors.New("event: missing chat id")
	case e.ChatType != chat.Private && e.ChatType != chat.Group:
		return fmt.Errorf("event: bad chat type %q", e.ChatType)
	case e.ChatType == chat.Private && e.Bot == "":
		return errors.New("event: private chat without bot")
	case e.MessageID == "":
		return errors.New("event: missing message id")
	case e.Sender.PlatformID == "":
		return errors.New("event: missing sender")
	case strings.TrimSpace(e.Text) == "":
		return errors.New("event: empty text")
	}
	for _, m := range e.Mentions {
		if m.Start < 0 || m.End > len(e.Text) || m.Start > m.End {
			return fmt.Errorf("event: mention [%d,%d) outside text", m.Start, m.End)
		}
	}
	return nil
}

// PrivateChatID is the web widget's chat ID for platformID's private chat
// with bot.
func PrivateChatID(platformID, bot string) string { return platformID + ":" + bot }

// SplitPrivateChatID undoes PrivateChatID. ok is false when id has no ':'.
func SplitPrivateChatID(id string) (platformID, bot string, ok bool) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 || i == len(id)-1 {
		return "", "", false
	}
	return id[:i], id[i+1:], true
}
