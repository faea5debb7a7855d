package gossip

import (
	"regexp"
	"slices"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
)

// Settings are shared.gossip (SPEC §10). They take effect live.
type Settings struct {
	// Enabled turns detection on; off, nothing new is checked (memories
	// already queued are still delivered, and those delivered are still
	// shown).
	Enabled bool
	// MinMessages is how many messages a person must have sent a bot
	// before it hears news about them.
	MinMessages int
	// Memories is how many of the newest memories a prompt shows; 0
	// shows none.
	Memories int
	// SensitiveTopics are the words that block an event (Sensitive).
	SensitiveTopics []string
	// Patterns are checked in order; the first that matches wins.
	Patterns []Pattern
	// Classifier is the ID of the bot whose brain judges the messages
	// no pattern matched; "" for none.
	Classifier string
}

// DefaultSettings are SPEC §10's defaults.
func DefaultSettings() Settings {
	s := Settings{Enabled: true, MinMessages: DefaultMinMessages, Memories: DefaultMemories,
		SensitiveTopics: slices.Clone(DefaultSensitiveTopics)}
	for _, p := range DefaultPatterns {
		s.Patterns = append(s.Patterns, Pattern{Match: regexp.MustCompile(p.Match), Topic: p.Topic})
	}
	return s
}

// Bot is a configured bot as gossip sees it.
type Bot struct {
	ID, Name, Persona string
	// Public bots take no part: news told to one is blocked, and none
	// hears news.
	Public bool
	// Brain and Timeout are used when the bot is the classifier.
	Brain   brains.Brain
	Timeout time.Duration
}

// Person is a person as users.yaml has them now.
type Person struct {
	Name string
	// Share is share_with_other_bots; Invisible is invisible. A person
	// users.yaml does not list shares and is visible.
	Share, Invisible bool
}

// Cast is the team and the people as they are configured now: the
// gateway's roster and user directory.
type Cast interface {
	// GossipBots lists the configured bots in configuration order.
	GossipBots() []Bot
	// GossipPerson is the person with user ID (or platform ID) id.
	GossipPerson(id string) Person
}

// Heard is a person's message, stored, that a bot answers: what the
// Grapevine checks.
type Heard struct {
	// MessageID is the stored message's ID, and Key names it as its
	// platform knows it (Event.Key).
	MessageID int64
	Key       string
	// User is the person's user ID as the bot sees it, UserName their
	// name.
	User, UserName string
	// Bot is the ID of the bot the person told (the first one the
	// message addresses).
	Bot      string
	Platform string
	// Text is the message as the bot sees it (its address stripped).
	Text string
}
