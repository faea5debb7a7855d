package gateway

import "time"

// Conversation is one of a person's conversations on a platform, as the
// terminal's `conv list` shows it: a private chat with a bot, or a room
// the person is a member of.
type Conversation struct {
	// ID is the chat ID: "cli-ann:finn", or the room's name.
	ID       string
	Platform string
	// Group is true for a room.
	Group bool
	// Bots are the private chat's bot, or the room's bots in the order
	// they were added.
	Bots []string
	// Open is a room's openness (SPEC §12).
	Open bool
	// LastMessageAt is the time of its newest chat message; zero when
	// it has none.
	LastMessageAt time.Time
}
