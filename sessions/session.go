// Package sessions keeps each bot's conversation with each person, or
// with each group, in order. A session is keyed by the scope rule of SPEC
// §4; its turns are stored with the messages that ask for them, and the
// Runner answers them one at a time per session, in the order they were
// stored, with sessions in parallel. The package also reads a session's
// history and where its person last spoke.
package sessions

import (
	"context"
	"errors"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/outbox"
)

// The session scopes.
const (
	ScopeUser  = "user"
	ScopeGroup = "group"
)

// Key identifies a session: one bot's memory of one person, or of one
// group chat.
type Key struct {
	Bot string
	// Scope is ScopeUser or ScopeGroup.
	Scope string
	// ScopeID is the person's user ID, or GroupID of the chat.
	ScopeID string
}

// KeyFor is the scope rule (SPEC §4): in a group chat, a bot whose
// session scope is ScopeGroup keeps one session for the whole chat;
// everywhere else a bot keeps one session per person. user is the
// person's user ID (for a public bot, their platform ID).
func KeyFor(bot, scope string, in chat.Ref, user string) Key {
	if in.Type == chat.Group && scope == ScopeGroup {
		return Key{Bot: bot, Scope: ScopeGroup, ScopeID: GroupID(in)}
	}
	return Key{Bot: bot, Scope: ScopeUser, ScopeID: user}
}

// GroupID is the scope ID of a group chat's sessions:
// "<platform>:<chat id>".
func GroupID(in chat.Ref) string { return in.Platform + ":" + in.ID }

// Session is a stored session.
type Session struct {
	ID  string
	Key Key
	// ResumeID is the brain's own handle for the session (an agent
	// CLI's session ID), kept between turns.
	ResumeID  string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ErrNotFound is returned for a session or turn that does not exist.
var ErrNotFound = errors.New("not found")

// Store holds the sessions' turns: it is the runner's queue.
type Store interface {
	// PendingSessions lists the sessions with turns not yet answered
	// that this process may run, the one with the oldest such turn
	// first.
	PendingSessions(ctx context.Context) ([]string, error)
	// NextTurn loads the oldest unanswered turn of a session, with at
	// most historyLimit messages of the session's history before it;
	// ok is false when the session has none. On a store several
	// processes share, it is also the claim: a session's turns go to one
	// process at a time (ok is false for the others while it has turns),
	// so that they run one at a time, in order.
	NextTurn(ctx context.Context, sessionID string, historyLimit int) (t Turn, ok bool, err error)
	// CompleteTurn stores an outcome and marks its turn done, all in one
	// transaction. Completing a turn that is done already stores nothing
	// and returns no entries or turns, so a turn run twice (a crash
	// between its answer and its record) is answered once. An outcome
	// with no turn (Turn.ID 0) is work done outside a turn, such as a
	// hand-off a restart interrupted: it is stored as it is.
	CompleteTurn(ctx context.Context, o Outcome) (Done, error)
}

// Histories finds sessions by key and reads their messages.
type Histories interface {
	// FindSession returns the session with key, if it exists.
	FindSession(ctx context.Context, key Key) (Session, bool, error)
	// SessionMessages returns a session's newest limit messages of kind
	// (every kind when kind is ""), oldest first.
	SessionMessages(ctx context.Context, sessionID, kind string, limit int) ([]chat.Message, error)
}

// History returns the newest limit messages of kind ("" for every
// kind) of the session with key, oldest first: none when the session
// does not exist yet.
func History(ctx context.Context, s Histories, key Key, kind string, limit int) ([]chat.Message, error) {
	sess, ok, err := s.FindSession(ctx, key)
	if err != nil || !ok {
		return nil, err
	}
	return s.SessionMessages(ctx, sess.ID, kind, limit)
}

// Request asks for one bot's answer to a message being stored.
type Request struct {
	Session Key
	// Text is what the brain sees: the message with the address stripped.
	Text string
}

// TurnRef names a stored turn and the session it runs in.
type TurnRef struct {
	ID        int64
	SessionID string
}

// Turn is a loaded turn: a message a bot owes an answer to.
type Turn struct {
	Ref     TurnRef
	Session Session
	// After is the turn of another session that must end before this
	// one starts (0: none): several bots addressed by one message answer
	// in the order they were addressed. WaitsFor is After while that
	// turn has not ended, 0 once it has.
	After    int64
	WaitsFor int64
	// Delegation is set when the turn is a delegated task.
	Delegation *delegation.Record
	// Message is the message being answered; Text the brain's view of it.
	Message chat.Message
	Text    string
	// History is the session's earlier messages, oldest first, and the
	// bots' messages stored since this one (replies to earlier turns):
	// what a brain is shown of each, its ID, kind, author, text and time.
	History []chat.Message
}

// Outcome is what a turn says and changes, stored with the turn marked
// done in one transaction.
type Outcome struct {
	Turn TurnRef
	// ResumeID replaces the session's resume ID when not empty.
	ResumeID string
	// Posts are the messages the turn says, each queued in the outbox in
	// order: the reply, acknowledgements, notices.
	Posts []Post
	// Artifacts produced by the turn, attached to the first post and to
	// the turn's delegation, if any, and shown with the first post and
	// every post that asks for them (Post.ShowsArtifacts).
	Artifacts []chat.Artifact
	// Notes go into sessions without being sent anywhere.
	Notes []Note
	// Handoffs are delegations the turn starts (or refuses).
	Handoffs []Handoff
	// Update changes the status of the turn's own delegation.
	Update *delegation.Update
	// Retry, when set, queues a corrective turn in the same session for
	// the same delegation, with this text.
	Retry string
}

// Post is a message a turn says, in the session it belongs to.
type Post struct {
	Message chat.Message
	// Session is the session whose history it joins ("" for none).
	Session string
	// ShowsArtifacts shows the turn's artifacts with this post too, not
	// only with the first: a hand-off's result notice in the chat it
	// came from, so the person can open them where they asked.
	ShowsArtifacts bool
}

// Note is a session-only message (a wrapper, a delegation's result),
// which starts no turn unless it asks for a follow-up.
type Note struct {
	Session string
	Message chat.Message
	// FollowUp, when not empty, queues a turn of Session on the note,
	// whose brain sees FollowUp as its text: the asking bot's turn on a
	// help request's answer (SPEC §10.3). The turn belongs to the note's
	// delegation (Message.DelegationID, which must be stored).
	FollowUp string
}

// Handoff is a delegation to store. A queued one also puts its wrapper in
// the target's session and queues the target's turn; a refused one is
// only recorded.
type Handoff struct {
	Record delegation.Record
	// Target is the target bot's session for the person.
	Target Key
	// FromSession, when Record.FromSession is empty, is the asking bot's
	// session, created if need be (a hand-off made through the API).
	FromSession *Key
	Wrapper     string
}

// Done is what storing an outcome produced: the outbox entries of its
// posts, in order, and the turns it queued.
type Done struct {
	Outbox []outbox.Entry
	Turns  []TurnRef
	// More says that the turn's session may have unanswered turns
	// left: it had when the outcome was stored, or, for a turn done
	// already, it is not known.
	More bool
}

// Filter selects sessions; empty fields match everything.
type Filter struct {
	Bot string
	// ScopeIDs, when not empty, keeps the user-scoped sessions of these
	// people (a master ID and its platform IDs).
	ScopeIDs []string
	Limit    int
}
