// Package findings is the findings board of SPEC §10.2 (seed 003): what
// bots discover, posted to the board of a space and shown to every bot
// of that space in its next turns, and to the space's people as it
// becomes visible.
//
// A space may run a stage. During an isolated stage each finding is
// seen only by the bot that posted it until the stage is released, when
// all of them become visible at once: bots working in parallel do not
// copy each other's first ideas. A new stage ends the running one,
// releasing it. Every finding records the stage it was posted in.
//
// The Board checks what it is given, stores it through its Store, and
// tells its watchers of the findings that became visible, so that a
// platform can show them live. Which findings a turn sees, how many
// (Settings.Inject) and what the post_finding action does are decided
// here; the store only keeps rows and decides, in one transaction with
// each write, which stage a finding belongs to.
package findings

import (
	"context"
	"errors"
	"time"
)

// The severities of a finding, least to most.
const (
	Low      = "low"
	Medium   = "medium"
	High     = "high"
	Critical = "critical"
)

// Severities lists the severities, least to most.
var Severities = []string{Low, Medium, High, Critical}

// MaxText is the longest finding, in characters (SPEC §10.2).
const MaxText = 4000

// MaxStageName is the longest stage name, in characters.
const MaxStageName = 64

// DefaultInject is how many findings a prompt gets when
// shared.findings.inject is not set.
const DefaultInject = 15

// Finding is one finding on a board.
type Finding struct {
	// ID is given by the store; a later finding has a greater ID.
	ID    int64
	Space string
	// Bot is the ID of the bot that posted it.
	Bot      string
	Text     string
	Severity string
	// Stage is the name of the stage it was posted in, "" for none.
	Stage string
	// Visible is false while it is hidden in an isolated stage: only
	// its author sees it.
	Visible   bool
	CreatedAt time.Time
}

// Stage is a stage of a space.
type Stage struct {
	ID       int64
	Space    string
	Name     string
	Isolated bool
	// StartedAt is when it started; EndedAt when it ended (zero while
	// it runs).
	StartedAt, EndedAt time.Time
}

// Query selects findings.
type Query struct {
	// Space keeps one space's findings; "" keeps every space's.
	Space string
	// Bot keeps one author's findings.
	Bot string
	// Viewer keeps what that bot may see: the visible findings and its
	// own hidden ones.
	Viewer string
	// Hidden keeps the hidden findings too (the operator's view); it is
	// ignored when Viewer is set. Without either, only visible findings
	// are kept (a person's view).
	Hidden bool
	// Limit keeps the newest Limit (at least 1).
	Limit int
}

// StageStart asks a store to start a stage.
type StageStart struct {
	Space    string
	Name     string
	Isolated bool
	// Key names the command that asks (a chat message's platform, chat
	// and message ID), so that the same command delivered twice (to two
	// bots of one group) is carried out once; "" for none.
	Key string
	At  time.Time
}

// Change is what starting or releasing a stage did.
type Change struct {
	// Started is the stage started; Ended the stage that ended.
	Started, Ended *Stage
	// Released are the findings that became visible, oldest first.
	Released []Finding
	// Repeat says the command (its Key) was carried out before: nothing
	// changed now, and Started or Ended is what it did then.
	Repeat bool
}

// Store keeps findings and stages. Its writes are each one transaction.
type Store interface {
	// AddFinding stores f, which has no ID yet, in its space's running
	// stage: its Stage is that stage's name and it is Visible unless the
	// stage is isolated (none running: stage "", visible). It returns f
	// as stored.
	AddFinding(ctx context.Context, f Finding) (Finding, error)
	// Findings lists the newest q.Limit findings q selects, oldest
	// first.
	Findings(ctx context.Context, q Query) ([]Finding, error)
	// Finding returns one finding; an unknown ID is an error wrapping
	// ErrNotFound.
	Finding(ctx context.Context, id int64) (Finding, error)
	// RunningStage returns the stage running in space, if any.
	RunningStage(ctx context.Context, space string) (Stage, bool, error)
	// RunningStages lists the running stages of every space, the newest
	// first.
	RunningStages(ctx context.Context) ([]Stage, error)
	// StartStage ends the space's running stage, if any, making its
	// hidden findings visible, and starts a new one. A start whose Key
	// started a stage before changes nothing and says Repeat.
	StartStage(ctx context.Context, s StageStart) (Change, error)
	// EndStage ends the space's running stage, making its hidden
	// findings visible; with none running it changes nothing and
	// returns no Ended. An end whose key (not "") ended a stage before
	// changes nothing and says Repeat.
	EndStage(ctx context.Context, space, key string, at time.Time) (Change, error)
}

// Errors of the Board. A request that breaks a rule (an empty or too
// long text, an unknown severity, a bad space or stage name) is a
// *world.InvalidError naming its field: "text", "severity", "space",
// "name".
var (
	// ErrNoStage: no stage runs in the space to release.
	ErrNoStage = errors.New("no stage is running")
	// ErrNotFound: no finding has that ID.
	ErrNotFound = errors.New("no such finding")
)
