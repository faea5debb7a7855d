// Package shared is the shared context of a space (SPEC §10.7, seed
// 001): what the bots working in one space agree on. Events are a
// timeline ("Researcher finished the competitor survey"), entities are
// named things with attributes merged key by key as bots learn more
// ("competitor-x" {"pricing":"$99/month"}), facts are subject-predicate-
// object statements with a confidence, a newer one replacing the older
// of the same subject and predicate, and the artifact chain records each
// hand-off that ended in the space: which bot produced which files from
// which inputs.
//
// The Keeper checks what bots add (the add_event, add_entity and
// add_fact actions), stores it and tells its watchers, and reads a
// space's context within the shared.context limits for a turn's prompt
// (the SHARED CONTEXT block, .Context in script templates) and for the
// API and the widget. The store keeps the rows; the chain is not a
// table of its own but the space's finished hand-offs (delegation
// records, which carry their space), read with their inputs and
// outputs.
package shared

import (
	"context"
	"encoding/json"
	"time"
)

// Limits on what a bot may add, in characters (the attributes in bytes
// of JSON): enough for a line of a prompt each.
const (
	MaxEventText  = 1000
	MaxName       = 200
	MaxAttributes = 4000
	MaxFactPart   = 500
)

// Defaults of shared.context (SPEC §10).
const (
	DefaultEvents        = 10
	DefaultEntities      = 20
	DefaultFacts         = 20
	DefaultMinConfidence = 0.5
	DefaultChain         = 5
)

// Event is one entry of a space's timeline.
type Event struct {
	// ID is given by the store; a later event has a greater ID.
	ID    int64  `json:"id"`
	Space string `json:"-"`
	// Bot is the ID of the bot that added it.
	Bot  string    `json:"bot"`
	Text string    `json:"text"`
	Time time.Time `json:"time"`
}

// Entity is a named thing of a space and what the bots know of it.
type Entity struct {
	Space string `json:"-"`
	// Name identifies it in its space, as written (case kept; two names
	// that differ only in case are two entities).
	Name string `json:"name"`
	// Attributes is a JSON object: each add_entity merges its keys into
	// it, a key given again replacing the value before.
	Attributes json.RawMessage `json:"attributes"`
	// UpdatedBy is the ID of the bot that added to it last.
	UpdatedBy string    `json:"updated_by"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Fact is a statement about a subject, with how sure its bot is. A
// space holds one fact per subject and predicate: the newest.
type Fact struct {
	Space     string `json:"-"`
	Subject   string `json:"subject"`
	Predicate string `json:"predicate"`
	Object    string `json:"object"`
	// Confidence is from 0 to 1.
	Confidence float64 `json:"confidence"`
	// Bot is the ID of the bot that stated it.
	Bot  string    `json:"bot"`
	Time time.Time `json:"time"`
}

// File is an artifact as the chain names it.
type File struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	// SHA256 is the content's hash, lowercase hex.
	SHA256 string `json:"sha256"`
}

// Step is one hand-off that ended in the space: a finished delegation
// record of kind handoff (SPEC §10.7).
type Step struct {
	// Step numbers the space's steps from 1, in the order they ended.
	Step         int    `json:"step"`
	DelegationID string `json:"delegation_id"`
	// Producer is the ID of the bot that did the work (the hand-off's
	// target); Task what it was asked.
	Producer string `json:"producer"`
	Task     string `json:"task"`
	// Inputs are the artifacts it was handed, Outputs those it produced,
	// each in the order stored.
	Inputs  []File `json:"inputs"`
	Outputs []File `json:"outputs"`
	// Status is done or failed.
	Status string `json:"status"`
	// Time is when it ended.
	Time time.Time `json:"time"`
}

// Context is what a space holds, each list oldest first.
type Context struct {
	Events   []Event  `json:"events"`
	Entities []Entity `json:"entities"`
	Facts    []Fact   `json:"facts"`
	Chain    []Step   `json:"chain"`
}

// Empty reports whether c holds nothing.
func (c Context) Empty() bool {
	return len(c.Events) == 0 && len(c.Entities) == 0 && len(c.Facts) == 0 && len(c.Chain) == 0
}

// Limits bound what a read returns (shared.context).
type Limits struct {
	// Events, Entities (the most recently updated), Facts and Chain
	// (steps) keep the newest that many of each; 0 keeps none.
	Events, Entities, Facts, Chain int
	// MinConfidence keeps the facts of at least this confidence.
	MinConfidence float64
}

// Store keeps the shared context of every space. Its writes are each
// one transaction.
type Store interface {
	// AddEvent stores e, which has no ID yet, and returns it as stored.
	AddEvent(ctx context.Context, e Event) (Event, error)
	// MergeEntity merges e.Attributes (a JSON object) into the
	// attributes of the entity e.Space and e.Name name, key by key,
	// creating it when new, and returns the entity as stored, its
	// attributes merged.
	MergeEntity(ctx context.Context, e Entity) (Entity, error)
	// PutFact stores f, replacing the space's fact with the same
	// subject and predicate, if any.
	PutFact(ctx context.Context, f Fact) (Fact, error)
	// SharedContext reads a space's context within l, each list oldest
	// first and never nil (JSON shows an empty one as []; so are a
	// step's inputs and outputs), times in UTC, entity attributes in the
	// written form of CanonicalAttributes. The chain is the space's
	// finished hand-offs (status done or failed, kind handoff), numbered
	// from 1 in the order they ended.
	SharedContext(ctx context.Context, space string, l Limits) (Context, error)
}
