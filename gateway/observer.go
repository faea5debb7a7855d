package gateway

import "time"

// Observer is told what the gateway does, for metrics. Calls come from the
// gateway's goroutines and must not block.
type Observer interface {
	// EventIn counts a stored inbound message (not a duplicate).
	EventIn(platform string)
	// EventOut counts a delivered message.
	EventOut(platform string)
	// BrainTurn records how long a brain took.
	BrainTurn(bot, kind string, d time.Duration)
	// Delegation counts a delegation reaching status.
	Delegation(status string)
	// OutboxRetry counts a delivery that will be tried again.
	OutboxRetry(platform string)
	// TurnDone counts a turn whose outcome is stored (a reply, an
	// apology, a hand-off's acknowledgement, a delegation closed), by
	// the path it took: PathInstant (answered before its message was
	// stored, and stored with it in one write) or PathQueued (stored
	// first, then run by its session's worker; an instant answer found
	// stale takes this path too). A duplicate message's turn is not
	// counted: nothing of it is stored.
	TurnDone(path string)
}

// The paths of TurnDone.
const (
	PathInstant = "instant"
	PathQueued  = "queued"
)

// nopObserver is the Observer when none is given.
type nopObserver struct{}

func (nopObserver) EventIn(string)                          {}
func (nopObserver) EventOut(string)                         {}
func (nopObserver) BrainTurn(string, string, time.Duration) {}
func (nopObserver) Delegation(string)                       {}
func (nopObserver) OutboxRetry(string)                      {}
func (nopObserver) TurnDone(string)                         {}
