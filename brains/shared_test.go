package brains_test

import (
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
)

func TestSharedContextEmpty(t *testing.T) {
	var none *brains.SharedContext
	if !none.Empty() || !(&brains.SharedContext{}).Empty() {
		t.Error("a nil or zero shared context is not empty")
	}
	if (&brains.SharedContext{Facts: []brains.ContextFact{{Subject: "x"}}}).Empty() {
		t.Error("a context with a fact is empty")
	}
}

// A newer output of a name replaces the older in place; the order is
// that of each name's first appearance.
func TestSharedContextOutputs(t *testing.T) {
	var none *brains.SharedContext
	if got := none.Outputs(); got != nil {
		t.Errorf("nil context: %v", got)
	}
	c := &brains.SharedContext{Chain: []brains.ChainStep{
		{Step: 1, Outputs: []brains.Artifact{{ID: "a1", Name: "competitors.json"}, {ID: "n1", Name: "notes.md"}}},
		{Step: 2, Status: "failed"},
		{Step: 3, Inputs: []brains.Artifact{{ID: "a1", Name: "competitors.json"}}, Outputs: []brains.Artifact{{ID: "c1", Name: "api-comparison.json"}}},
		{Step: 4, Outputs: []brains.Artifact{{ID: "a2", Name: "competitors.json"}}},
	}}
	var got []string
	for _, a := range c.Outputs() {
		got = append(got, a.ID+":"+a.Name)
	}
	if want := "a2:competitors.json n1:notes.md c1:api-comparison.json"; strings.Join(got, " ") != want {
		t.Errorf("Outputs = %v, want %s", got, want)
	}
}
