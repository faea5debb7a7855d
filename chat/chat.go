// Package chat holds the words every part of Switchboard shares about a
// conversation: where a message was said (a chat on a platform, Ref), who
// said it (Party), the stored Message itself and the Artifacts a turn
// produces. It has no behaviour of its own; the packages that store,
// route and deliver messages all speak in its types.
package chat

import "time"

// Type says whether a chat is a private conversation between one person
// and one bot, or a group where several people and bots talk.
type Type string

// The chat types.
const (
	Private Type = "private"
	Group   Type = "group"
)

// Ref names a chat on a platform.
type Ref struct {
	Platform string
	ID       string
	Type     Type
}

// The kinds of Party.
const (
	Human  = "human"
	Bot    = "bot"
	System = "system"
)

// Party is the author of a message.
type Party struct {
	// Kind is Human, Bot or System.
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

// The kinds of Message. Chat messages are said in a chat and shown to
// people; wrappers (a delegated task as its target bot sees it) and system
// messages (a delegation's result, a note) live only in sessions.
const (
	KindChat    = "chat"
	KindWrapper = "wrapper"
	KindSystem  = "system"
)

// Message is a stored message.
type Message struct {
	ID int64
	// Platform, ChatID and ChatType place a chat message; they are empty
	// for wrappers and system messages.
	Platform string
	ChatID   string
	ChatType Type
	// PlatformMsgID is the platform's ID of an inbound message.
	PlatformMsgID string
	// Kind is KindChat, KindWrapper or KindSystem.
	Kind string
	From Party
	// UserID is the person the message belongs to: the resolved user of
	// a human author, the person a bot answers.
	UserID string
	// Bot is the bot of the chat or session the message belongs to.
	Bot      string
	Text     string
	Mentions []string
	// ReplyTo is the platform message ID this message answers, if any.
	ReplyTo string
	Time    time.Time
	// DelegationID links a message to the hand-off it belongs to.
	DelegationID string
	// ReplyToID is the ID of the stored message this one answers (a
	// bot's reply to the person's message that started its turn), 0
	// when none.
	ReplyToID int64
	// Failed marks a bot's message that stands for a failed turn: the
	// apology said when its brain failed, timed out or gave bad output.
	Failed bool
	// Artifacts are the files shown with the message, described (their
	// Content empty), in the order they were made. The reads that show
	// messages to people (a session's or a chat's messages) fill them.
	Artifacts []Artifact
}

// Chat is the chat m was said in.
func (m Message) Chat() Ref { return Ref{Platform: m.Platform, ID: m.ChatID, Type: m.ChatType} }

// Artifact is a file a turn produced or a hand-off consumes, with its
// provenance. Content is left empty by listings that only describe it.
type Artifact struct {
	ID        string
	Name      string
	MediaType string
	Size      int64
	// SHA256 is the content's hash, lowercase hex.
	SHA256 string
	// Producer is the bot that made it.
	Producer string
	// DelegationID is the hand-off that produced it, if any.
	DelegationID string
	Content      []byte
}
