package gateway

import (
	"context"
	"errors"
	"time"
)

// Store is the gateway's durable memory. Implementations (store/sqlite)
// must be safe for concurrent use; every method that writes more than one
// row does so in one transaction, so a crash leaves either all or none of
// it.
type Store interface {
	// AppendInbound stores an inbound message together with the turns it
	// starts, in one transaction. A message whose (platform, bot, chat,
	// message ID) was stored before is not stored again: the result then
	// has Duplicate set and the original message.
	//
	// The write callbacks (Inbound.OnStored, Completion.OnStored, and
	// StartDelegations' onStored) are called once the write is durable,
	// in the order the writes were stored, before the method returns; they
	// must be quick and must not call the store.
	AppendInbound(ctx context.Context, in Inbound) (InboundResult, error)
	// BotOfMessage reports which bot wrote the message with the given
	// platform message ID in a chat, for reply-to addressing.
	BotOfMessage(ctx context.Context, platform, chatID, platformMsgID string) (bot string, ok bool, err error)

	// PendingTurns lists turns not yet answered, oldest first.
	PendingTurns(ctx context.Context) ([]TurnRef, error)
	// LoadTurn loads a pending turn with its session and the session's
	// history before it (at most historyLimit messages, oldest first).
	LoadTurn(ctx context.Context, turnID int64, historyLimit int) (TurnData, error)
	// CompleteTurn stores the reply, links it to the session, queues it in
	// the outbox and marks the turn done, in one transaction.
	CompleteTurn(ctx context.Context, c Completion) (Completed, error)
	// PeekSession returns what a new turn in the session with key would
	// see now (Ref.SessionID, Session and at most historyLimit messages of
	// History) when the store holds all of it in memory and knows of no
	// pending turn of the session, and latest, the ID of the session's
	// newest message (0: none); ok is false otherwise. It never reads
	// storage, so it is cheap enough to try for every message.
	PeekSession(key SessionKey, historyLimit int) (data TurnData, latest int64, ok bool)
	// AppendAnswered stores an inbound message that starts exactly one
	// turn together with that turn's outcome, computed on the session as
	// it was when its newest message was latest: AppendInbound and
	// CompleteTurn in one transaction, the turn stored done (never
	// pending). c.Session names the session (PeekSession's
	// Ref.SessionID); the store sets c.Turn. When the session has
	// gained a message since latest, has a pending turn, or is no longer
	// held in memory, nothing is stored and the error is ErrStale. A
	// duplicate message stores nothing of c, and the result says
	// Duplicate. The result names no turn (none is queued).
	// Inbound.OnStored is called before Completion.OnStored.
	AppendAnswered(ctx context.Context, in Inbound, c Completion, latest int64) (InboundResult, Completed, error)

	// StartDelegations stores hand-offs made outside a turn (the API) and
	// returns the turns it queued.
	StartDelegations(ctx context.Context, ds []NewDelegation, onStored func([]TurnRef)) ([]TurnRef, error)
	// UpdateDelegation changes a delegation's status outside a turn's
	// completion (running; failed on restart).
	UpdateDelegation(ctx context.Context, u DelegationUpdate) error
	// GetDelegation returns one delegation with its inputs and artifacts,
	// or ErrNotFound.
	GetDelegation(ctx context.Context, id string) (Delegation, error)
	// ListDelegations returns delegations matching f, newest first.
	ListDelegations(ctx context.Context, f DelegationFilter) ([]Delegation, error)
	// OpenDelegations lists queued and running delegations that have no
	// pending turn (interrupted work a restart must settle).
	OpenDelegations(ctx context.Context) ([]Delegation, error)
	// Artifacts loads artifacts with their content.
	Artifacts(ctx context.Context, ids []string) ([]ArtifactRecord, error)
	// ChatHasBot reports whether bot takes part in a chat.
	ChatHasBot(ctx context.Context, platform, chatID, bot string) (bool, error)
	// LastPrivateChatOfUser returns the private chat where the user last
	// spoke to any bot, and the platform ID they used there.
	LastPrivateChatOfUser(ctx context.Context, userID string) (chat ChatRef, platformID string, ok bool, err error)

	// PendingOutbox lists undelivered outbox entries, oldest first (by
	// their messages). Entries a store keeps in memory for a while first
	// (the SQLite store's deferred entries) are written and listed too.
	PendingOutbox(ctx context.Context) ([]Outbound, error)
	// MarkSent records a delivery. It may return before the record is
	// durable (and so not report a failure to store it): a message whose
	// delivery was not recorded when the process stopped is delivered
	// again, as after a crash between sending and recording.
	MarkSent(ctx context.Context, outboxID int64, platformMsgID string) error
	// MarkPart records that the first n parts of a split message were
	// delivered, the last of them as platformMsgID.
	MarkPart(ctx context.Context, outboxID int64, n int, platformMsgID string) error
	// MarkAttempt records a failed try that will be retried.
	MarkAttempt(ctx context.Context, outboxID int64, reason string) error
	// MarkFailed gives up on an entry, keeping it with the reason.
	MarkFailed(ctx context.Context, outboxID int64, reason string) error

	// LastPrivateChat returns the private chat in which a person last
	// spoke in the session; ok is false when there is none.
	LastPrivateChat(ctx context.Context, sessionID string) (chat ChatRef, ok bool, err error)

	// ListSessions returns the sessions matching f, most recently
	// updated first.
	ListSessions(ctx context.Context, f SessionFilter) ([]Session, error)
	// GetSession returns the session with id, or ErrNotFound.
	GetSession(ctx context.Context, id string) (Session, error)

	// FindSession returns the session for key, if it exists.
	FindSession(ctx context.Context, key SessionKey) (Session, bool, error)
	// SessionMessages returns a session's last limit chat messages
	// (wrappers and system messages excluded), oldest first.
	SessionMessages(ctx context.Context, sessionID string, limit int) ([]Message, error)
	// ChatMessages returns a group chat's last limit messages, oldest first.
	ChatMessages(ctx context.Context, platform, chatID string, limit int) ([]Message, error)

	// EnsureRoom creates a group chat if absent (with the given bots as
	// participants) and adds member. It returns the room's bot IDs.
	EnsureRoom(ctx context.Context, platform, chatID, member string, bots []string) ([]string, error)

	// Secret returns the named random secret, creating it with n random
	// bytes on first use. It survives restarts.
	Secret(ctx context.Context, name string, n int) ([]byte, error)
	// Close releases the store.
	Close() error
}

// ErrNotFound is returned by stores for a missing record.
var ErrNotFound = errors.New("not found")

// ErrStale is returned by AppendAnswered when the session changed after
// the answer was computed (or can no longer be checked); nothing was
// stored.
var ErrStale = errors.New("the session changed while the answer was made")

// Party is the author of a message.
type Party struct {
	// Kind is "human", "bot" or "system".
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

// The message kinds. Chat messages are shown to people; wrappers (a
// delegated task as the target bot sees it) and system messages (results
// of delegations) live only in sessions.
const (
	KindChat    = "chat"
	KindWrapper = "wrapper"
	KindSystem  = "system"
)

// Message is a stored message.
type Message struct {
	ID       int64
	Platform string
	ChatID   string
	ChatType ChatType
	// PlatformMsgID is the platform's ID of an inbound message. (The IDs
	// a delivered reply got are kept by the store for reply-to lookups;
	// see BotOfMessage.)
	PlatformMsgID string
	Kind          string
	From          Party
	// UserID is the resolved user of a human author.
	UserID   string
	Bot      string
	Text     string
	Mentions []string
	ReplyTo  string
	Time     time.Time
	// DelegationID links a message to the hand-off it belongs to.
	DelegationID string
}

// SessionKey identifies a session: one bot's memory of one user, or of one
// group chat.
type SessionKey struct {
	Bot string
	// Scope is "user" or "group".
	Scope string
	// ScopeID is the user ID, or "<platform>:<chat id>" for a group.
	ScopeID string
}

// The session scopes.
const (
	ScopeUser  = "user"
	ScopeGroup = "group"
)

// ChatRef names a chat on a platform.
type ChatRef struct {
	Platform string
	ChatID   string
	Type     ChatType
}

// Session is a stored session.
type Session struct {
	ID        string
	Key       SessionKey
	ResumeID  string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SessionFilter selects sessions; empty fields match everything.
type SessionFilter struct {
	Bot string
	// ScopeIDs, when not empty, keeps user-scoped sessions whose scope ID
	// is one of these (a user's master ID and platform IDs).
	ScopeIDs []string
	Limit    int
}

// Inbound is what AppendInbound writes.
type Inbound struct {
	Event  Event
	UserID string
	// UserName is the resolved display name of the sender.
	UserName string
	Turns    []TurnRequest
	// OnStored, if set, receives the result once it is durable (see
	// Store).
	OnStored func(InboundResult)
}

// TurnRequest asks for one bot's answer to an inbound message.
type TurnRequest struct {
	Session SessionKey
	// Text is what the brain sees: the message with the address stripped.
	Text string
}

// InboundResult is AppendInbound's answer.
type InboundResult struct {
	Message   Message
	Duplicate bool
	// Turns are the turns the message queued.
	Turns []TurnRef
}

// TurnRef names a queued turn and the session it runs in.
type TurnRef struct {
	ID        int64
	SessionID string
	// After is the turn that must finish before this one starts (0: none).
	// It orders the replies of several bots addressed by one message.
	After int64
}

// TurnData is a loaded turn.
type TurnData struct {
	Ref     TurnRef
	Session Session
	// Delegation is set when the turn is a delegated task.
	Delegation *Delegation
	// Message is the message being answered; Text the brain's view of it.
	Message Message
	Text    string
	// History is the session's earlier messages, oldest first. They carry
	// what a brain is shown — kind, author, user, bot, text and time — not
	// their chat. The slice may be shared with the store's cache: read
	// it, do not write into it.
	History []Message
}

// Completion is what CompleteTurn writes, all in one transaction.
type Completion struct {
	Turn    TurnRef
	Session string
	// ResumeID replaces the session's stored resume ID when not empty.
	ResumeID string
	// Posts are the messages the turn says, each queued in the outbox in
	// order (the reply, acknowledgements, notices).
	Posts []Post
	// Artifacts produced by the turn, attached to the first post (and to
	// the delegation of Update, if any).
	Artifacts []ArtifactRecord
	// Notes go into sessions without being sent anywhere.
	Notes []Note
	// Delegations are hand-offs the turn starts (or refuses).
	Delegations []NewDelegation
	// Update changes the status of the turn's own delegation.
	Update *DelegationUpdate
	// Retry queues a corrective turn in the same session for the same
	// delegation, with this text.
	Retry string
	// OnStored, if set, receives the result once it is durable (see
	// Store).
	OnStored func(Completed)
}

// Completed is what CompleteTurn returns: outbox entries to deliver and
// turns it queued.
type Completed struct {
	Outbox []Outbound
	Turns  []TurnRef
}

// ArtifactRecord is a stored artifact.
type ArtifactRecord struct {
	ID        string
	Name      string
	MediaType string
	Size      int64
	SHA256    string
	Producer  string
	// DelegationID is the hand-off that produced the artifact, if any.
	DelegationID string
	Content      []byte
}
