// Package outbox delivers stored messages to their platforms. Each chat
// on a platform is a lane whose entries go out one at a time in the order
// they were stored; an entry is split to the platform's length limit,
// retried with backoff (waiting as long as a platform's rate limit asks),
// parked while its recipient cannot be reached and woken when they come
// back, and given up with its reason when it cannot be delivered. Every
// entry is stored before it reaches the outbox and every outcome is
// recorded, so a restart resumes what was left.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
)

// Entry is one stored message for a platform to deliver.
type Entry struct {
	// OutboxID is the entry's ID; MessageID the stored message's.
	OutboxID  int64
	MessageID int64
	Platform  string
	Bot       string
	ChatID    string
	ChatType  chat.Type
	From      chat.Party
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
	Delegation *delegation.Ref
	// ReplyToID is the stored ID of the message this one answers, 0
	// when none; Failed marks the apology of a failed turn (see
	// chat.Message).
	ReplyToID int64
	Failed    bool
	// Artifacts are the files shown with the message, described (their
	// Content empty): a platform that can show attachments lists them.
	Artifacts []chat.Artifact
}

// Sender is a platform as the outbox sees it.
type Sender interface {
	// Send delivers one entry and returns the platform's ID of the
	// delivered message, or "" when the platform knows messages by their
	// Switchboard IDs (Entry.MessageID), as the web does. Errors may wrap
	// ErrUnreachable (the recipient cannot be reached now: the lane
	// parks until Wake), *RetryAfterError (rate limited) or ErrPermanent
	// (never retry); any other error is retried with backoff.
	Send(ctx context.Context, e Entry) (string, error)
}

// ParkLimiter is implemented by platforms whose undelivered messages need
// not wait for their recipient forever. An entry that has waited
// MaxParked (when positive) for an unreachable recipient, counted from
// when it was made or when the recipient became unreachable, whichever is
// later, is marked failed and forgotten. The web implements it: a visitor
// who left may never come back, and one who does reads the reply in the
// chat's history.
type ParkLimiter interface {
	MaxParked() time.Duration
}

// Errors a Sender's Send may wrap.
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

// Store records what became of each entry. Marks are kept even while the
// outbox shuts down: an entry whose delivery was not recorded is
// delivered again on the next start.
type Store interface {
	// PendingOutbox lists the entries not yet delivered or given up that
	// this process is to deliver, in the order they were stored: on a
	// database several processes share, its own and those of processes
	// that died, which it takes over.
	PendingOutbox(ctx context.Context) ([]Entry, error)
	// MarkSent records a delivery, as the platform's message ID (which
	// may be empty).
	MarkSent(ctx context.Context, outboxID int64, platformMsgID string) error
	// MarkPart records that the first n parts of a split entry were
	// delivered, the last of them as platformMsgID.
	MarkPart(ctx context.Context, outboxID int64, n int, platformMsgID string) error
	// MarkAttempt records a failed try that will be retried.
	MarkAttempt(ctx context.Context, outboxID int64, reason string) error
	// MarkFailed gives up on an entry, keeping it with the reason.
	MarkFailed(ctx context.Context, outboxID int64, reason string) error
}

// Observer counts deliveries for metrics. Calls must not block.
type Observer interface {
	// EventOut counts a delivered message.
	EventOut(platform string)
	// OutboxRetry counts a delivery that will be tried again.
	OutboxRetry(platform string)
}
