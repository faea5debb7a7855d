// Package retention deletes what Switchboard keeps only for a while
// (gateway.retention, SPEC §12): an anonymous web visitor's data once
// they have been quiet for Policy.Anonymous, and, when Policy.Messages is
// set, every message older than that. A Job runs the deletions in the
// background, at start and then periodically; the store does the
// deleting (Store).
package retention

import (
	"context"
	"log/slog"
	"time"
)

// AnonymousPrefix starts the platform ID of every anonymous web visitor
// (web-anon-<random>); other platform IDs are never anonymous.
const AnonymousPrefix = "web-anon-"

// Policy is what to delete.
type Policy struct {
	// Anonymous is how long an anonymous visitor's data is kept after
	// their last message; 0 keeps it forever.
	Anonymous time.Duration
	// Messages is how long any message is kept; 0 keeps them forever.
	Messages time.Duration
	// Listed reports whether a platform ID is one of a users.yaml
	// user's identities: nothing of theirs is deleted by the anonymous
	// rule. Nil lists nobody.
	Listed func(platformID string) bool
}

// Store deletes what a policy says to. Its methods delete in small
// transactions, so that other writes are never held up for long: what
// one of them deleted before failing stays deleted. They must not run
// concurrently with themselves.
type Store interface {
	// DeleteIdleVisitors deletes everything kept of each anonymous
	// visitor (a platform ID starting AnonymousPrefix) whose last
	// message, and last join of a room, came before idleSince, unless
	// listed reports true for their platform ID: their private chats
	// with every message in them, their messages in rooms (with the
	// bots' replies to them), their sessions and turns, the outbox
	// entries, dedupe keys and artifacts of those messages, the
	// delegations made for them with their artifacts, and their
	// memberships of rooms; a room left with no member and no message is
	// deleted too. An artifact that a delegation of someone else takes as input
	// is kept. A visitor with a turn or an outbox entry still pending,
	// or a delegation still open, is left for a later call (counted in
	// Skipped). listed is called on the caller's goroutine.
	DeleteIdleVisitors(ctx context.Context, idleSince time.Time, listed func(platformID string) bool) (Counts, error)
	// DeleteMessagesBefore deletes every message, of anyone, stored
	// with a time before before: with its place in sessions' histories,
	// its dedupe key, its turns, outbox entries and platform message IDs,
	// and the artifacts attached to it alone. Sessions, chats and
	// delegation records stay (a delegation keeps its artifacts). A
	// message with a turn or an outbox entry still pending is left for a
	// later call.
	DeleteMessagesBefore(ctx context.Context, before time.Time) (Counts, error)
}

// Counts is what a deletion deleted.
type Counts struct {
	// Visitors counts the anonymous visitors whose data was deleted.
	Visitors int
	// Skipped counts the idle visitors left for later: a turn or reply
	// of theirs was pending, a delegation open, or they came back
	// meanwhile.
	Skipped     int
	Messages    int
	Sessions    int
	Turns       int
	Outbox      int
	Artifacts   int
	Delegations int
	// Chats counts the private chats and rooms deleted.
	Chats int
}

// Add returns the sum of c and o.
func (c Counts) Add(o Counts) Counts {
	return Counts{
		Visitors: c.Visitors + o.Visitors, Skipped: c.Skipped + o.Skipped, Messages: c.Messages + o.Messages,
		Sessions: c.Sessions + o.Sessions, Turns: c.Turns + o.Turns, Outbox: c.Outbox + o.Outbox,
		Artifacts: c.Artifacts + o.Artifacts, Delegations: c.Delegations + o.Delegations, Chats: c.Chats + o.Chats,
	}
}

// Zero reports whether nothing was deleted or skipped.
func (c Counts) Zero() bool { return c == Counts{} }

// LogValue implements slog.LogValuer: the counts, as a group.
func (c Counts) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int("visitors", c.Visitors), slog.Int("skipped", c.Skipped), slog.Int("messages", c.Messages),
		slog.Int("sessions", c.Sessions), slog.Int("turns", c.Turns), slog.Int("outbox", c.Outbox),
		slog.Int("artifacts", c.Artifacts), slog.Int("delegations", c.Delegations), slog.Int("chats", c.Chats),
	)
}
