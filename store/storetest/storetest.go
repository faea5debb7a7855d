// Package storetest is the contract every Switchboard store keeps, as
// tests: Run runs them all against stores a Factory makes. The SQLite
// store runs it; so will every other store.
package storetest

import (
	"context"
	"testing"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/retention"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world/findings"
	"github.com/switchboard-chat/switchboard/world/gossip"
	"github.com/switchboard-chat/switchboard/world/insights"
	"github.com/switchboard-chat/switchboard/world/shared"
)

// Store is everything a store implements: the contracts of the gateway,
// its sessions and its outbox, and what the admin API and the command
// read.
type Store interface {
	gateway.Store
	gateway.SessionStore
	outbox.Store
	retention.Store
	findings.Store
	insights.Store
	gossip.Store
	shared.Store
	// GetSession returns the session with id, or an error wrapping
	// sessions.ErrNotFound.
	GetSession(ctx context.Context, id string) (sessions.Session, error)
	// ListSessions returns the sessions matching f, most recently
	// updated first.
	ListSessions(ctx context.Context, f sessions.Filter) ([]sessions.Session, error)
	// OutboxPending counts the outbox entries not yet delivered or
	// given up (what PendingOutbox lists).
	OutboxPending(ctx context.Context) (int, error)
	// Conversations lists a person's rooms and private chats on a
	// platform, newest message first.
	Conversations(ctx context.Context, platform string, p gateway.Person) ([]gateway.Conversation, error)
	// Secret returns the named random secret, made with n random bytes
	// on first use; it survives a reopen.
	Secret(ctx context.Context, name string, n int) ([]byte, error)
	Close() error
}

// Factory makes the stores the suite tests.
type Factory struct {
	// New returns an empty store, closed when the test ends.
	New func(t *testing.T) Store
	// Reopen closes s and opens the same data again, as a restart does.
	Reopen func(t *testing.T, s Store) Store
	// Check, if set, checks what the contract cannot see of s after it
	// deleted data (for SQLite: that no row refers to a deleted one).
	Check func(t *testing.T, s Store)
}

// Run runs the whole contract.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(*testing.T, Factory)
	}{
		{"Inbound", testInbound},
		{"Dedupe", testDedupe},
		{"TurnOrder", testTurnOrder},
		{"TurnsAfter", testTurnsAfter},
		{"TurnsAhead", testTurnsAhead},
		{"CompleteTurn", testCompleteTurn},
		{"CompleteTwice", testCompleteTwice},
		{"FailedReply", testFailedReply},
		{"History", testHistory},
		{"LastPrivateChat", testLastPrivateChat},
		{"ResumeAfterReopen", testResumeAfterReopen},
		{"OutboxMarks", testOutboxMarks},
		{"Delegations", testDelegations},
		{"DelegationArtifacts", testDelegationArtifacts},
		{"HelpFollowUp", testHelpFollowUp},
		{"ArtifactsShown", testArtifactsShown},
		{"ArtifactHolders", testArtifactHolders},
		{"Rooms", testRooms},
		{"RoomMembership", testRoomMembership},
		{"RoomPersons", testRoomPersons},
		{"OpenRooms", testOpenRooms},
		{"Conversations", testConversations},
		{"Focus", testFocus},
		{"Chains", testChains},
		{"Sessions", testSessions},
		{"Secret", testSecret},
		{"ConcurrentWriters", testConcurrentWriters},
		{"RetentionVisitors", testRetentionVisitors},
		{"RetentionMessages", testRetentionMessages},
		{"Findings", testFindings},
		{"Stages", testStages},
		{"StageKeys", testStageKeys},
		{"Insights", testInsights},
		{"InsightSearch", testInsightSearch},
		{"GossipEvents", testGossipEvents},
		{"GossipDelivery", testGossipDelivery},
		{"GossipBlock", testGossipBlock},
		{"GossipConcurrent", testGossipConcurrent},
		{"Memories", testMemories},
		{"MessagesFrom", testMessagesFrom},
		{"GossipRetention", testGossipRetention},
		{"SharedContext", testSharedContext},
		{"SharedChain", testSharedChain},
		{"SharedConcurrentMerge", testSharedConcurrentMerge},
		{"SharedEntityLimit", testSharedEntityLimit},
		{"DelegationProgress", testDelegationProgress},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, f) })
	}
}
