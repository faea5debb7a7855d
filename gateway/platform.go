package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Platform connects the gateway to one chat service (Telegram, Discord, the
// web widget, …).
type Platform interface {
	// Name is the platform's name as used in events ("web", "telegram").
	Name() string
	// Run connects and hands every inbound message to host.Deliver. It
	// blocks until ctx ends or the platform fails, and returns only after
	// every goroutine it started has exited.
	Run(ctx context.Context, host Host) error
	// Send delivers one outbound message. It returns the platform's ID of
	// the delivered message, or "" when the platform knows messages by
	// their Switchboard IDs (Outbound.MessageID), as the web does. Errors may wrap ErrUnreachable (the recipient
	// cannot be reached now; retry when Host.Reachable says so),
	// *RetryAfterError (rate limited), or ErrPermanent (never retry).
	// Any other error is retried with backoff.
	Send(ctx context.Context, msg Outbound) (string, error)
}

// AsyncSender is implemented by platforms that know messages by their
// Switchboard IDs (Send returns "" for them, as the web's does) and can
// take one without waiting for it to go out. SendAsync must not block: it
// queues msg and calls done exactly once, on any goroutine and possibly
// before it returns, with the error Send would have returned (nil once
// the message has left the process), or with ctx's error if ctx ends
// first. done must not block either. Messages to one chat must go out in
// the order SendAsync was called.
//
// The outbox uses it for the first entry of an idle chat, which is how a
// reply stored by a commit reaches the platform from that commit's
// callback, beside the message's ack, instead of through a worker of its
// own. Anything else (a retry, the entries queued behind it) goes through
// Send.
type AsyncSender interface {
	SendAsync(ctx context.Context, msg Outbound, done func(error))
}

// Typer is implemented by platforms that can show that a bot is working on
// a reply. The gateway calls Typing when a brain turn for the chat starts
// and every four seconds until it ends.
type Typer interface {
	Typing(ctx context.Context, bot, chatID string) error
}

// Host is the gateway as seen by a platform adapter.
type Host interface {
	// Deliver stores ev and queues the turns it asks for; on the
	// instant path (see the gateway's instant.go) it runs the turn first
	// and stores its reply with the message. When Deliver returns without
	// error the message is durable.
	Deliver(ctx context.Context, ev Event) (Receipt, error)
	// Reachable tells the outbox that chats of platform that could not be
	// reached before (Send returned ErrUnreachable) can be retried now.
	Reachable(platform string, chatIDs ...string)
	// Bots lists the bots present on platform, in configuration order.
	Bots(platform string) []BotInfo
	// Resolve maps a platform ID to the user it belongs to (for non-public
	// bots).
	Resolve(platformID string) UserRef
	// SessionHistory returns the recent messages of the session between
	// platformID's user and bot, oldest first, without wrappers and system
	// messages.
	SessionHistory(ctx context.Context, bot, platformID string, limit int) ([]Message, error)
	// ChatHistory returns the recent messages of one chat, oldest first.
	ChatHistory(ctx context.Context, platform, chatID string, limit int) ([]Message, error)
	// JoinRoom adds member to the group chat room of platform, creating it
	// with bots when it does not exist yet (nil bots: every bot on the
	// platform). It returns the room's bots.
	JoinRoom(ctx context.Context, platform, room, member string, bots []string) ([]BotInfo, error)
}

// Receipt is Deliver's answer.
type Receipt struct {
	// MessageID is the stored message's ID (the original's on a duplicate).
	MessageID int64
	Time      time.Time
	// Duplicate is true when the event had been stored before.
	Duplicate bool
}

// BotInfo is the public face of a bot.
type BotInfo struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// UserRef is a resolved user.
type UserRef struct {
	// ID is the master user ID, or the platform ID when unlisted.
	ID   string
	Name string
}

// Outbound is one message for a platform to deliver.
type Outbound struct {
	// OutboxID is the outbox entry's ID; MessageID the stored message's.
	OutboxID  int64
	MessageID int64
	Platform  string
	Bot       string
	ChatID    string
	ChatType  ChatType
	From      Party
	Text      string
	// ReplyTo is the platform message ID to answer, when known.
	ReplyTo string
	Time    time.Time
	// Attempt counts deliveries tried before this one.
	Attempt int
	// Part is the index of this part when the outbox split a long text
	// (Text then holds only that part); PartsSent counts parts already
	// delivered in earlier tries.
	Part      int
	PartsSent int
	// Delegation is set on messages that belong to a hand-off.
	Delegation *DelegationRef
}

// Errors a Platform's Send may wrap.
var (
	ErrUnreachable = errors.New("recipient not reachable now")
	ErrPermanent   = errors.New("permanent delivery failure")
)

// RetryAfterError is returned by Send when the platform asked to wait.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("rate limited, retry after %s: %v", e.After, e.Err)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }
