package delegation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
)

// The statuses of a hand-off (SPEC §5).
const (
	StatusQueued  = "queued"
	StatusRunning = "running"
	StatusDone    = "done"
	StatusFailed  = "failed"
	StatusRefused = "refused"
)

// The kinds of record: a hand-off of a task, or a request for help.
const (
	KindHandoff = "handoff"
	KindHelp    = "help"
)

// Record is the stored record of one delegation.
type Record struct {
	ID   string
	Kind string
	From string
	To   string
	// UserID is the person the work is for; UserName their display name.
	UserID   string
	UserName string
	Task     string
	Depth    int
	ParentID string
	Status   string
	Result   string
	Error    string
	// Progress is the newest progress report of a running delegation.
	Progress *Progress
	// Origin is the chat the hand-off was asked in (empty for the API),
	// and OriginSender the platform ID of the person there.
	Origin       chat.Ref
	OriginSender string
	// FromSession is the asking bot's session, which gets the result.
	FromSession string
	Expected    []Expected
	// Retries counts corrective turns already given.
	Retries int
	// Inputs are artifact IDs the target receives.
	Inputs []string
	// Artifacts are what the delegation produced (without content).
	Artifacts []chat.Artifact
	// Space is the space the work is done in (world.Space's String): the
	// space of the chat the chain of hand-offs started from, or the
	// person's. A hand-off that ends there is a step of its artifact
	// chain (SPEC §10.7). "" for records stored before spaces.
	Space     string
	CreatedAt time.Time
	UpdatedAt time.Time
	// EndedAt is when the status became final; zero until then.
	EndedAt time.Time
}

// Progress is a running delegation's report of how far it got.
type Progress struct {
	Text  string `json:"text"`
	Step  int    `json:"step,omitempty"`
	Total int    `json:"total,omitempty"`
}

// Label is the progress as the widget and the dashboard show it: "Step
// 1/3: Researching CompetitorX", "Step 2: …" without a total, or the
// text alone.
func (p Progress) Label() string {
	switch {
	case p.Step > 0 && p.Total > 0:
		return fmt.Sprintf("Step %d/%d: %s", p.Step, p.Total, p.Text)
	case p.Step > 0:
		return fmt.Sprintf("Step %d: %s", p.Step, p.Text)
	}
	return p.Text
}

// Finished reports whether the status is final.
func (r Record) Finished() bool {
	return r.Status == StatusDone || r.Status == StatusFailed || r.Status == StatusRefused
}

// Ref is the record's short form, as the widget shows it.
func (r Record) Ref() *Ref {
	return &Ref{ID: r.ID, Kind: r.Kind, From: r.From, To: r.To, Task: r.Task, Status: r.Status, Depth: r.Depth, Progress: r.Progress,
		Origin: r.Origin}
}

// Ref is a delegation's status as watchers see it.
type Ref struct {
	ID string `json:"id"`
	// Kind is KindHandoff or KindHelp.
	Kind   string `json:"kind,omitempty"`
	From   string `json:"from_bot"`
	To     string `json:"to_bot"`
	Task   string `json:"task"`
	Status string `json:"status"`
	Depth  int    `json:"depth"`
	// Progress is a running delegation's newest report (SPEC §10.7).
	Progress *Progress `json:"progress,omitempty"`
	// Origin is the chat the hand-off was asked in; a platform shows
	// it as the frame's chat when the chat is its own.
	Origin chat.Ref `json:"-"`
}

// Update changes a delegation's status.
type Update struct {
	ID     string
	Status string
	Result string
	Error  string
	// Retry, when set, counts one more corrective turn.
	Retry bool
}

// Filter selects records; empty fields match everything.
type Filter struct {
	// UserIDs keeps the records of these people (a master ID and its
	// platform IDs).
	UserIDs []string
	// IDs keeps the records with these IDs.
	IDs    []string
	Status string
	Limit  int
}

// ErrNotFound is returned for a record or artifact that does not exist.
var ErrNotFound = errors.New("not found")

// ErrNotRunning refuses progress for a delegation that is not running.
var ErrNotRunning = errors.New("the delegation is not running")

// MaxProgressText is the longest progress text, in characters.
const MaxProgressText = 500

// Records reads delegation records by ID: what Chain needs.
type Records interface {
	// Delegation returns one record with its inputs and artifacts, or
	// an error wrapping ErrNotFound.
	Delegation(ctx context.Context, id string) (Record, error)
}

// maxChain bounds a chain read from the records, against a cycle in them.
const maxChain = 64

// Chain lists the bots that handed work down to parent's target, root
// first, from the stored records (never from message text).
func Chain(ctx context.Context, s Records, parent Record) ([]string, error) {
	chain := []string{parent.From}
	for id, hops := parent.ParentID, 0; id != ""; hops++ {
		if hops > maxChain {
			return nil, errors.New("delegation chain too long")
		}
		d, err := s.Delegation(ctx, id)
		if err != nil {
			return nil, err
		}
		chain = append([]string{d.From}, chain...)
		id = d.ParentID
	}
	return chain, nil
}
