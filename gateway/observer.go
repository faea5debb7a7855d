package gateway

import (
	"time"

	"github.com/switchboard-chat/switchboard/outbox"
)

// Observer is told what the gateway does, for metrics. Calls come from
// the gateway's goroutines and must not block.
type Observer interface {
	// EventIn counts a stored inbound message (not a duplicate).
	EventIn(platform string)
	// BrainTurn records how long a brain took.
	BrainTurn(bot, kind string, d time.Duration)
	// Delegation counts a delegation reaching status.
	Delegation(status string)
	// The outbox's deliveries and retries.
	outbox.Observer
}

// nopObserver is the Observer when none is given.
type nopObserver struct{}

func (nopObserver) EventIn(string)                          {}
func (nopObserver) EventOut(string)                         {}
func (nopObserver) BrainTurn(string, string, time.Duration) {}
func (nopObserver) Delegation(string)                       {}
func (nopObserver) OutboxRetry(string)                      {}
