package gateway

import (
	"context"

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
	// UpdateDelegation changes a record's status.
	UpdateDelegation(ctx context.Context, u delegation.Update) error
	// OpenDelegations lists queued and running records that have no
	// pending turn: work a restart interrupted.
	OpenDelegations(ctx context.Context) ([]delegation.Record, error)
	// Artifacts loads artifacts with their content, in the order asked;
	// an unknown ID is an error wrapping delegation.ErrNotFound.
	Artifacts(ctx context.Context, ids []string) ([]chat.Artifact, error)
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
	// EnsureRoom creates a group chat if absent, with bots as its bots,
	// and adds member. It returns the room's bots.
	EnsureRoom(ctx context.Context, platform, chatID, member string, bots []string) ([]string, error)
	// ChatHasBot reports whether bot takes part in a group chat.
	ChatHasBot(ctx context.Context, platform, chatID, bot string) (bool, error)
	// LastPrivateChatOfUser returns the private chat where a person last
	// spoke to any bot, and the platform ID they used there.
	LastPrivateChatOfUser(ctx context.Context, userID string) (in chat.Ref, platformID string, ok bool, err error)
	// StartDelegations stores delegations made outside a turn (the API)
	// and returns the turns it queued.
	StartDelegations(ctx context.Context, hs []sessions.Handoff) ([]sessions.TurnRef, error)
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
}

// InboundResult is what AppendInbound stored.
type InboundResult struct {
	// Message is the stored message (on a duplicate, the original).
	Message   chat.Message
	Duplicate bool
	// Turns are the turns the message queued.
	Turns []sessions.TurnRef
}
