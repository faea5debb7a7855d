// Package gossip is news travelling between bots (SPEC §10.5, seed 000).
// When a person tells one bot something significant about their life
// ("I got a new job at a tech company"), the other bots that know the
// person hear of it: each gets a memory in its session with them, and
// its prompts show the newest few.
//
// A person's message is checked once it is stored, off the reply's path:
// against the configured patterns first (the first that matches gives a
// topic, and the sentence it matched is the summary), then, when none
// matches, by an optional classifier bot whose brain answers
// {"topic": …, "summary": …} or none, and whose turn nobody sees. What
// matches is an Event. An event is blocked, stored with the reason and
// delivered to nobody, when it touches a sensitive topic, when its person
// opted out of sharing (share_with_other_bots: false) or is invisible,
// when it is itself gossip (depth 1: news heard from gossip never travels
// on), or when the bot it was told to is public. Otherwise each other
// non-public bot to which the person has sent at least min_messages
// messages receives it.
//
// Delivery goes through a queue the store keeps: an event is stored with
// one pending delivery per recipient, and each delivery is carried out in
// one transaction that stores the memory and marks it delivered, so that
// a restart, or several gateways on one database, deliver each memory
// exactly once.
//
// The Grapevine does all of it; the store only keeps rows and claims
// deliveries.
package gossip

import (
	"context"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
)

// The statuses of an Event.
const (
	// StatusQueued: the event is allowed and some of its memories wait
	// in the delivery queue.
	StatusQueued = "queued"
	// StatusDelivered: every memory due was delivered (Recipients); an
	// event no bot was due to hear is delivered to nobody, with a reason.
	StatusDelivered = "delivered"
	// StatusBlocked: a rule stopped the event (Reason); nobody hears it.
	StatusBlocked = "blocked"
)

// Statuses lists the statuses of an event.
var Statuses = []string{StatusQueued, StatusDelivered, StatusBlocked}

// MaxSummary is the longest summary, in characters (SPEC §10.5).
const MaxSummary = 200

// MaxTopic is the longest topic, in characters.
const MaxTopic = 64

// Defaults of shared.gossip (SPEC §10).
const (
	DefaultMinMessages = 3
	DefaultMemories    = 5
)

// Event is one piece of news about a person, as it was decided.
type Event struct {
	// ID is given by the store; a later event has a greater ID.
	ID int64
	// User is the person's user ID (master ID, or their platform ID
	// when users.yaml does not list them or the bot is public), and
	// UserName their name as the memory says it.
	User     string
	UserName string
	// SourceBot is the ID of the bot the person told.
	SourceBot string
	// MessageID is the stored message the news was heard in.
	MessageID int64
	// Key names that message as its platform knows it (platform, chat,
	// platform message ID): an event is stored once per key, so the
	// copies of one group message that several bots receive (each bot
	// its own, on Telegram and Discord) make one event. "" for none.
	Key   string
	Topic string
	// Summary is the sentence that matched (or the classifier's
	// summary), at most MaxSummary characters.
	Summary string
	// Depth is 0 for news a person told, 1 for news that came from
	// gossip itself (which is always blocked).
	Depth  int
	Status string
	// Reason says why the event is blocked, or why it reached fewer
	// bots than it was due to (or none).
	Reason string
	// Recipients are the bots a memory was delivered to, in the order
	// of delivery.
	Recipients []string
	// Pending are the bots whose memories still wait in the queue.
	Pending []string
	// CreatedAt is when it was heard; UpdatedAt when its status last
	// changed.
	CreatedAt, UpdatedAt time.Time
}

// Memory is news a bot heard about a person: what its prompts show.
type Memory struct {
	EventID int64
	// From is the ID of the bot that was told.
	From string
	// Text is "<person's name>: <summary>".
	Text string
	// At is when it was delivered.
	At time.Time
}

// MemoryText is what a memory of e says: "Bryan: I got a new job at a
// tech company".
func MemoryText(e Event) string { return e.UserName + ": " + e.Summary }

// NoteText is the system message a memory of e puts in the recipient's
// session, naming the bot that was told by its display name:
// "[Gossip from Elena] Bryan: I got a new job at a tech company".
func NoteText(from string, e Event) string { return NoteMarker + from + "] " + MemoryText(e) }

// NoteFrom is the author of a memory's system message.
const NoteFrom = "gossip"

// Delivery is one memory due: event Event's, for bot Bot.
type Delivery struct {
	Event Event
	Bot   string
}

// Query selects events.
type Query struct {
	// Users keeps the events about any of these user IDs (a person's
	// master ID and platform IDs); none keeps everyone's.
	Users []string
	// Status keeps one status; "" keeps every status.
	Status string
	// Limit keeps the newest Limit (at least 1).
	Limit int
}

// Store keeps events, their delivery queue and the memories delivered.
// Its writes are each one transaction.
type Store interface {
	// AddGossip stores e, which has no ID yet, with one pending delivery
	// for each bot of due, and returns it as stored. An event whose Key
	// (not "") is already an event's is not stored again: the original
	// is returned with created false.
	AddGossip(ctx context.Context, e Event, due []string) (stored Event, created bool, err error)
	// GossipEvents lists the newest q.Limit events q selects, newest
	// first, each with its Recipients and Pending.
	GossipEvents(ctx context.Context, q Query) ([]Event, error)
	// PendingDeliveries lists at most limit deliveries that wait, the
	// oldest first.
	PendingDeliveries(ctx context.Context, limit int) ([]Delivery, error)
	// DeliverMemory carries out d, in one transaction: it claims d
	// (still pending), stores note, a system message, in the session
	// of d.Bot with d.Event.User (scope user, created if absent), marks
	// d delivered, and marks the event delivered when it was its last
	// pending delivery. A delivery that is not pending any more (carried
	// out or dropped already, by this process or another) stores
	// nothing and returns false.
	DeliverMemory(ctx context.Context, d Delivery, note chat.Message) (bool, error)
	// DropDelivery drops d, still pending, with reason (its bot gone):
	// it is never delivered, and the event is settled like
	// DeliverMemory settles it. A delivery no longer pending is left
	// as it is.
	DropDelivery(ctx context.Context, d Delivery, reason string, at time.Time) error
	// BlockGossip blocks event id with reason: its pending deliveries
	// are dropped and its status becomes blocked. Deliveries made
	// already stay.
	BlockGossip(ctx context.Context, id int64, reason string, at time.Time) error
	// Memories lists the newest limit memories delivered to bot about
	// user, oldest first.
	Memories(ctx context.Context, bot, user string, limit int) ([]Memory, error)
	// MessagesFrom counts, for each of bots, the person's chat messages
	// (from_kind human, user ID user) stored before message before in
	// that bot's sessions, in any chat, on any platform; a count stops
	// at upTo. A bot with none is left out.
	MessagesFrom(ctx context.Context, user string, bots []string, before int64, upTo int) (map[string]int, error)
}
