package gateway

import (
	"encoding/json"
	"time"
)

// The delegation statuses (SPEC §5).
const (
	StatusQueued  = "queued"
	StatusRunning = "running"
	StatusDone    = "done"
	StatusFailed  = "failed"
	StatusRefused = "refused"
)

// Delegation is the stored record of one hand-off.
type Delegation struct {
	ID       string
	From     string
	To       string
	UserID   string
	UserName string
	Task     string
	Depth    int
	ParentID string
	Status   string
	Result   string
	Error    string
	// Origin is the chat the hand-off was asked in (empty for the API),
	// and OriginSender the platform ID of the person there.
	Origin       ChatRef
	OriginSender string
	// FromSession is the asking bot's session, which gets the result.
	FromSession string
	Expected    []ExpectedOutput
	// Retries counts corrective turns already given.
	Retries int
	// Inputs are artifact IDs the target receives.
	Inputs []string
	// Artifacts are what the delegation produced (without content).
	Artifacts []ArtifactRecord
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Finished reports whether the status is final.
func (d Delegation) Finished() bool {
	return d.Status == StatusDone || d.Status == StatusFailed || d.Status == StatusRefused
}

// Ref is the short form pushed to watchers.
func (d Delegation) Ref() *DelegationRef {
	return &DelegationRef{ID: d.ID, From: d.From, To: d.To, Task: d.Task, Status: d.Status, Depth: d.Depth}
}

// ExpectedOutput is an output a programmatic hand-off requires.
type ExpectedOutput struct {
	Name      string          `json:"name"`
	MediaType string          `json:"media_type"`
	Schema    json.RawMessage `json:"schema,omitempty"`
}

// DelegationRef is a delegation's status as the widget shows it.
type DelegationRef struct {
	ID     string `json:"id"`
	From   string `json:"from_bot"`
	To     string `json:"to_bot"`
	Task   string `json:"task"`
	Status string `json:"status"`
	Depth  int    `json:"depth"`
}

// NewDelegation is a hand-off to store. A queued one also stores the
// wrapper in the target's session and queues the target's turn; a refused
// one is only recorded.
type NewDelegation struct {
	Record Delegation
	// Target is the target bot's session for the user.
	Target SessionKey
	// FromSession, when Record.FromSession is empty, is the asking bot's
	// session to create (programmatic hand-offs).
	FromSession *SessionKey
	Wrapper     string
}

// DelegationUpdate changes a delegation's status.
type DelegationUpdate struct {
	ID     string
	Status string
	Result string
	Error  string
	// Retry, when set, counts one more corrective turn.
	Retry bool
}

// DelegationFilter selects delegations; empty fields match everything.
type DelegationFilter struct {
	UserIDs []string
	Status  string
	Limit   int
}

// Post is a message a turn says, in the session it belongs to.
type Post struct {
	Message Message
	// Session links the message to a session's history ("" for none).
	Session string
}

// Note is a session-only message (a wrapper or a system note such as a
// delegation's result), which starts no turn.
type Note struct {
	Session string
	Message Message
}
