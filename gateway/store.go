package gateway

import (
	"context"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/sessions"
)

// Store is what the gateway reads and writes itself, beside what its
// sessions (SessionStore) and its outbox (outbox.Store) do: inbound
// messages, rooms, and delegation records.
type Store interface {
	// Delegation returns one record with its inputs and artifacts, or
	// an error wrapping delegation.ErrNotFound.
	Delegation(ctx context.Context, id string) (delegation.Record, error)
	// Delegations lists the records matching f, newest first.
	Delegations(ctx context.Context, f delegation.Filter) ([]delegation.Record, error)
	// UpdateDelegation changes a record's status; a final status sets
	// its EndedAt.
	UpdateDelegation(ctx context.Context, u delegation.Update) error
	// SetDelegationProgress sets a running record's progress (SPEC
	// §10.7). An unknown ID is an error wrapping delegation.ErrNotFound,
	// a record that is not running one wrapping delegation.ErrNotRunning.
	SetDelegationProgress(ctx context.Context, id string, p delegation.Progress) error
	// OpenDelegations lists queued and running records that have no
	// pending turn: work a restart interrupted.
	OpenDelegations(ctx context.Context) ([]delegation.Record, error)
	// Artifacts loads artifacts with their content, in the order asked;
	// an unknown ID is an error wrapping delegation.ErrNotFound.
	Artifacts(ctx context.Context, ids []string) ([]chat.Artifact, error)
	// ArtifactHolders says where an artifact is held: the people the
	// messages showing it answer and its hand-off worked for, and the
	// group chats of those messages. An unknown ID is an error wrapping
	// delegation.ErrNotFound.
	ArtifactHolders(ctx context.Context, id string) (ArtifactHolders, error)
	// AppendInbound stores an inbound message with the turns it asks
	// for, in one transaction. A message whose (platform, bot, chat,
	// platform message ID) was stored before is not stored again: the
	// result then says Duplicate and holds the original.
	AppendInbound(ctx context.Context, in Inbound) (InboundResult, error)
	// BotOfMessage reports which bot wrote the message a platform knows
	// as platformMsgID in a group chat (on the web: the message's ID).
	BotOfMessage(ctx context.Context, platform, chatID, platformMsgID string) (bot string, ok bool, err error)
	// ChatMessages returns a group chat's newest limit chat messages,
	// oldest first.
	ChatMessages(ctx context.Context, platform, chatID string, limit int) ([]chat.Message, error)
	// Room returns the room chatID of platform as p sees it: its bots,
	// whether it is open, whether p is a member. No such chat is an
	// error wrapping ErrUnknownChat; a group chat that is not a room (a
	// Telegram or Discord group, whose membership is the platform's)
	// one wrapping ErrNotAllowed.
	Room(ctx context.Context, platform, chatID string, p Person) (Room, error)
	// JoinRoom makes p a member of the room chatID, in one transaction:
	// when there is no such chat it creates the room as nr says, p its
	// first member; an open room or one p is a member of it joins. A
	// closed room p is not a member of, and a group chat that is not a
	// room, are refused with an error wrapping ErrNotAllowed and
	// nothing changes. An existing room keeps its bots and openness.
	JoinRoom(ctx context.Context, platform, chatID string, p Person, nr NewRoom) (Room, error)
	// AddRoomMember makes member a member of the room chatID, on behalf
	// of inviter, in one transaction. An inviter who is not a member is
	// refused with an error wrapping ErrNotAllowed (so is a group chat
	// that is not a room), no such chat with one wrapping
	// ErrUnknownChat; nothing changes then. A member already in is
	// left as they are.
	AddRoomMember(ctx context.Context, platform, chatID string, inviter, member Person) error
	// ChatHasBot reports whether bot takes part in a group chat.
	ChatHasBot(ctx context.Context, platform, chatID, bot string) (bool, error)
	// LastPrivateChatOfUser returns the private chat where a person last
	// spoke to any bot, and the platform ID they used there.
	LastPrivateChatOfUser(ctx context.Context, userID string) (in chat.Ref, platformID string, ok bool, err error)
	// StartDelegations stores delegations made outside a turn (the API)
	// and returns the turns it queued.
	StartDelegations(ctx context.Context, hs []sessions.Handoff) ([]sessions.TurnRef, error)
	// Focus returns the focus of a person in a group chat (SPEC §10.3);
	// ok is false when they have none. It does not judge its age.
	Focus(ctx context.Context, k FocusKey) (f Focus, ok bool, err error)
	// SetFocus focuses k's person on bot as of at, replacing a focus
	// they had; bot "" ends their focus.
	SetFocus(ctx context.Context, k FocusKey, bot string, at time.Time) error
	// ChainStore keeps the bot-to-bot chains (crossbot_store.go).
	ChainStore
}

// FocusKey names a person's focus: one person (a platform ID) in one
// group chat.
type FocusKey struct {
	Platform string
	ChatID   string
	Person   string
}

// Focus is the bot a person focused in a group chat, and when they last
// spoke there (or focused it).
type Focus struct {
	Bot  string
	Seen time.Time
}

// SessionStore holds the sessions: their turns, for the runner, and what
// the gateway reads of them to answer and route a turn.
type SessionStore interface {
	sessions.Store
	sessions.Histories
	// QueueDepth counts the turns not yet answered.
	QueueDepth(ctx context.Context) (int, error)
	// LastPrivateChat returns the private chat where the session's
	// person last spoke in it; ok is false when there is none.
	LastPrivateChat(ctx context.Context, sessionID string) (in chat.Ref, ok bool, err error)
}

// Inbound is a message arriving from a platform, to store with the
// turns it asks for.
type Inbound struct {
	// Message is the message to store (its ID is given by the store).
	Message chat.Message
	// ChatName names a group chat when it is new.
	ChatName string
	// Turns are the bots' answers the message asks for, in the order
	// the bots were addressed: each after the first waits for the one
	// before it.
	Turns []sessions.Request
	// Focused, when set, is the focus of the message's sender in its
	// chat: its Seen time becomes the message's (a focus lasts while its
	// person speaks there). A focus that is gone is left so.
	Focused *FocusKey
}

// InboundResult is what AppendInbound stored.
type InboundResult struct {
	// Message is the stored message (on a duplicate, the original).
	Message   chat.Message
	Duplicate bool
	// Turns are the turns the message queued.
	Turns []sessions.TurnRef
	// Ahead holds, for each of Turns, how many unanswered turns of its
	// session were stored before it: the turns it waits for, the running
	// one included (SPEC §10.3's ack.queued).
	Ahead []int
}

// Person names one person to the store's room calls. Membership is per
// person: whichever of their identities they come from, they are the
// same member.
type Person struct {
	// ID is what a new membership records: the master user ID, or the
	// platform ID of a person users.yaml does not list.
	ID string
	// Identities are the person's platform IDs: a membership recorded
	// under one of them (before users.yaml listed it, say) is theirs.
	Identities []string
}

// IDs lists every ID that names p: ID, then the identities.
func (p Person) IDs() []string {
	out := []string{p.ID}
	for _, id := range p.Identities {
		if id != p.ID {
			out = append(out, id)
		}
	}
	return out
}

// Room is a group room that Switchboard keeps itself (on the web), as
// one person sees it.
type Room struct {
	// Bots are the room's bots, in the order they were added.
	Bots []string
	// Open rooms let anyone join; closed ones only their members.
	Open bool
	// Member says whether the person is a member.
	Member bool
}

// NewRoom is what a join that creates a room makes it with.
type NewRoom struct {
	Bots []string
	Open bool
}
