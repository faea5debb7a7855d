package storetest

import (
	"slices"
	"testing"
)

// testTurnsAhead: each turn a message queues says how many unanswered
// turns of its session were stored before it, the running one included
// (SPEC §10.3's ack.queued); a message to several bots says it per turn.
func testTurnsAhead(t *testing.T, f Factory) {
	s := f.New(t)
	var ahead []int
	var first string
	for i := range 3 {
		res := appendInbound(t, s, private("ann", "matty", msgID(i), "question"))
		ahead = append(ahead, res.Ahead...)
		first = res.Turns[0].SessionID
	}
	if !slices.Equal(ahead, []int{0, 1, 2}) {
		t.Errorf("ahead of three messages: %v, want [0 1 2]", ahead)
	}
	// Loading the oldest (it runs) leaves it ahead; answering it does not.
	running := nextTurn(t, s, first)
	if got := appendInbound(t, s, private("ann", "matty", "m3", "and?")).Ahead; !slices.Equal(got, []int{3}) {
		t.Errorf("ahead while the first runs: %v, want [3]", got)
	}
	complete(t, s, reply(running, "answer"))
	if got := appendInbound(t, s, private("ann", "matty", "m4", "so?")).Ahead; !slices.Equal(got, []int{3}) {
		t.Errorf("ahead once the first is answered: %v, want [3]", got)
	}
	// Another person's session, and a room message to two bots: each
	// turn counts its own session.
	if got := appendInbound(t, s, private("bob", "matty", "b1", "hi")).Ahead; !slices.Equal(got, []int{0}) {
		t.Errorf("ahead in another session: %v, want [0]", got)
	}
	if got := appendInbound(t, s, group("lab", "ann", "g1", "@matty @finn hi", "matty", "finn")).Ahead; !slices.Equal(got, []int{4, 0}) {
		t.Errorf("ahead of a message to two bots: %v, want [4 0]", got)
	}
	// A duplicate queues nothing.
	if res := appendInbound(t, s, private("ann", "matty", "m4", "so?")); !res.Duplicate || len(res.Ahead) != 0 {
		t.Errorf("duplicate: %+v", res)
	}
}
