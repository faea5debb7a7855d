package gateway

import (
	"context"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/world/findings"
	"github.com/switchboard-chat/switchboard/world/shared"
)

// Platform connects the gateway to one chat service (Telegram, Discord,
// the web widget, …). Its Send delivers the outbox's entries (see
// outbox.Sender for what its errors mean); optional abilities are the
// small interfaces below and in package outbox (MessageLimiter,
// ParkLimiter), found by type assertion.
type Platform interface {
	// Name is the platform's name as used in events ("web", "telegram").
	Name() string
	// Run connects and hands every inbound message to host.Deliver. It
	// blocks until ctx ends or the platform fails, and returns only after
	// every goroutine it started has exited.
	Run(ctx context.Context, host Host) error
	outbox.Sender
}

// Typer is implemented by platforms that can show that a bot is working
// on a reply. The gateway calls Typing when a brain turn for the chat has
// run a moment, and every four seconds until it ends.
type Typer interface {
	Typing(ctx context.Context, bot, chatID string) error
}

// PrivateChatter is implemented by platforms that can name (opening it if
// needed) the private chat between a bot and a person, so a bot can write
// first: the target of a hand-off, say.
type PrivateChatter interface {
	PrivateChat(ctx context.Context, bot, platformID string) (chatID string, err error)
}

// DelegationWatcher is implemented by platforms that show hand-off status
// live (the web widget's delegation frames). platformIDs are the person's
// identities; the watcher shows the change to whichever it serves.
type DelegationWatcher interface {
	DelegationChanged(ref delegation.Ref, platformIDs []string)
}

// RosterWatcher is implemented by platforms that show the bots live (the
// web widget's bots frame). The gateway calls RosterChanged with the
// platform's bots, as Host.Bots lists them, each time it publishes a new
// roster (a configuration reload), after Bots answers with them; most
// reloads leave a platform's list as it was, which the watcher checks.
// RosterChanged must not block.
type RosterWatcher interface {
	RosterChanged(bots []BotInfo)
}

// Host is the gateway as seen by a platform adapter.
type Host interface {
	// Deliver stores ev and wakes the sessions of the turns it asks for.
	// When it returns without error the message is stored.
	Deliver(ctx context.Context, ev Event) (Receipt, error)
	// Reachable tells the outbox that chats of platform that could not be
	// reached before (Send returned outbox.ErrUnreachable) can be tried
	// again.
	Reachable(platform string, chatIDs ...string)
	// Bots lists the bots present on platform, in configuration order.
	Bots(platform string) []BotInfo
	// Resolve maps a platform ID to the person it belongs to (for
	// non-public bots). The name is users.yaml's, an anonymous web
	// visitor's guest name (identity.GuestName), or empty.
	Resolve(platformID string) UserRef
	// SessionHistory returns the recent chat messages of the session
	// between platformID's person and bot, oldest first, without
	// wrappers and system messages, each with its hand-off.
	SessionHistory(ctx context.Context, bot, platformID string, limit int) ([]Shown, error)
	// ChatHistory returns the recent messages of one group chat, oldest
	// first, whoever asks: it is for a platform's own groups, whose
	// membership the platform keeps. A room's history is RoomHistory.
	ChatHistory(ctx context.Context, platform, chatID string, limit int) ([]chat.Message, error)
	// JoinRoom makes j's person a member of a room, creating it when it
	// does not exist yet (SPEC §12), and returns the room's bots. The
	// refusals are *Refusal errors: a bad room name (ErrInvalidRequest),
	// a closed room the person is not a member of or another person's
	// private chat (ErrNotAllowed), an unknown bot when the join creates
	// the room (ErrUnknownBot).
	JoinRoom(ctx context.Context, j RoomJoin) ([]BotInfo, error)
	// RoomHistory returns the recent chat messages of a room, oldest
	// first, if platformID's person may read it: a member, or anyone in
	// an open room, each with its hand-off. Refused like JoinRoom, and
	// with ErrUnknownChat when there is no such room.
	RoomHistory(ctx context.Context, platform, room, platformID string, limit int) ([]Shown, error)
	// InviteToRoom makes the person user names (a master user ID or a
	// platform ID) a member of a room, on behalf of platformID's person,
	// who must be a member. Refused like RoomHistory, and with
	// ErrInvalidRequest when user cannot be a user ID.
	InviteToRoom(ctx context.Context, platform, room, platformID, user string) error
	// Findings returns the visible findings of a space the person may
	// read (SPEC §10.2): their private space (r.Bot) or a room (r.Chat,
	// refused like RoomHistory), newest r.Limit oldest first, with the
	// space's name.
	Findings(ctx context.Context, r FindingsRequest) (space string, items []findings.Finding, err error)
	// Context returns the shared context of a person's private space or
	// of a room they may read (SPEC §10.7), refused like RoomHistory.
	Context(ctx context.Context, r ContextRequest) (space string, c shared.Context, err error)
	// Artifact returns an artifact with its content if platformID's
	// person may read it: it is shown with a message that answers them
	// or that is in a room they may read, or a hand-off for them made
	// it. Anything else, no such artifact included, is an error
	// wrapping ErrUnknownArtifact.
	Artifact(ctx context.Context, id, platformID string) (chat.Artifact, error)
}

// RoomJoin asks Host.JoinRoom to join a room.
type RoomJoin struct {
	Platform, Room string
	// PlatformID is who joins.
	PlatformID string
	// Bots and Open make the room when this join creates it (nil Bots:
	// every bot on the platform); an existing room keeps its own, which
	// no join changes.
	Bots []string
	Open bool
}

// Receipt is Deliver's answer.
type Receipt struct {
	// MessageID is the stored message's ID (the original's on a
	// duplicate).
	MessageID int64
	Time      time.Time
	// Duplicate is true when the event had been stored before.
	Duplicate bool
	// Turn says that the message started a turn (a bot owes it an
	// answer), and Queued how many turns of that turn's session are ahead
	// of it, the running one included: 0 when it runs now (SPEC §10.3).
	// For a message addressed to several bots they are those of the first.
	Turn   bool
	Queued int
}

// BotInfo is the public face of a bot.
type BotInfo struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// UserRef is a resolved person.
type UserRef struct {
	// ID is the master user ID, or the platform ID when unlisted.
	ID   string
	Name string
}
