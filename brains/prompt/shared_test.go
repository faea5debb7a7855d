package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
)

// sampleShared is the room's context after the researcher, the coder
// and the auditor worked in it: events from two bots, two entities,
// two facts and a chain of three steps, the last one failed.
func sampleShared() *brains.SharedContext {
	return &brains.SharedContext{
		Events: []brains.ContextEvent{
			{Bot: "Researcher", BotID: "researcher", Text: "started the competitor survey", Time: at},
			{Bot: "Coder", BotID: "coder", Text: "compared the APIs\nREST vs GraphQL", Time: at.Add(time.Minute)},
		},
		Entities: []brains.ContextEntity{
			{Name: "competitor-x", Attributes: `{"api":"REST","pricing":"$99/month"}`},
			{Name: "competitor-y", Attributes: `{}`},
		},
		Facts: []brains.ContextFact{
			{Subject: "CompetitorX", Predicate: "pricing_valid", Object: "true", Confidence: 0.95, Bot: "Auditor", BotID: "auditor"},
			{Subject: "CompetitorY", Predicate: "has_api", Object: "false", Confidence: 1, Bot: "Researcher", BotID: "researcher"},
		},
		Chain: []brains.ChainStep{
			{Step: 1, Producer: "Researcher", ProducerID: "researcher", Task: "survey the competitors", Status: "done",
				Outputs: []brains.Artifact{{ID: "a1", Name: "competitors.json"}}},
			{Step: 2, Producer: "Coder", ProducerID: "coder", Task: "compare their APIs", Status: "done",
				Inputs:  []brains.Artifact{{ID: "a1", Name: "competitors.json"}},
				Outputs: []brains.Artifact{{ID: "a2", Name: "api-comparison.json"}, {ID: "a3", Name: "notes.md"}}},
			{Step: 3, Producer: "Auditor", ProducerID: "auditor", Task: "validate both", Status: "failed",
				Inputs: []brains.Artifact{{ID: "a1", Name: "competitors.json"}, {ID: "a2", Name: "api-comparison.json"}}},
		},
	}
}

// sharedBlock is sampleShared as SPEC §10.7's block.
const sharedBlock = "SHARED CONTEXT\n" +
	"Events: Researcher: started the competitor survey; Coder: compared the APIs\n  REST vs GraphQL\n" +
	`Entities: competitor-x {"api":"REST","pricing":"$99/month"}; competitor-y` + "\n" +
	"Facts: CompetitorX pricing_valid true (0.95, Auditor); CompetitorY has_api false (1, Researcher)\n" +
	"Artifact chain: 1. Researcher produced competitors.json from —; " +
	"2. Coder produced api-comparison.json, notes.md from competitors.json; " +
	"3. Auditor produced nothing from competitors.json, api-comparison.json (failed)"

// The shared context is one block in SPEC §10.7's own format, after the
// shared findings and before the insights; golden files pin the whole
// prompt, with and without a working directory.
func TestSharedContextGolden(t *testing.T) {
	tn := privateTurn()
	tn.Findings = []brains.Finding{{Bot: "Auditor", BotID: "auditor", Severity: "high", Text: "competitor-y has no public API"}}
	tn.Insights = []brains.Insight{{Bot: "Elena", BotID: "elena", Kind: "observation", Text: "Bryan wants it by Friday", Confidence: 0.8}}
	tn.Shared = sampleShared()
	for _, tt := range []struct {
		name string
		opts Options
	}{
		{"shared_context", Options{}},
		{"shared_context_workdir", Options{Workdir: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := dump(Build(tn, tt.opts))
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./brains/prompt -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("prompt differs from %s (run with -update if intended)\n--- got ---\n%s", path, got)
			}
		})
	}

	sys := Build(tn, Options{}).System
	i := strings.Index(sys, "\n\n"+sharedBlock+"\n\n")
	if i < 0 {
		t.Fatalf("no shared context block\n%s\nin:\n%s", sharedBlock, sys)
	}
	if f, in := strings.Index(sys, FindingsHeading), strings.Index(sys, InsightsHeading); !(f < i && i < in) {
		t.Errorf("shared context at %d, want between the shared findings (%d) and the insights (%d)", i, f, in)
	}
	// A brain with a working directory is told where the files are: the
	// newest output of each name.
	sys = Build(tn, Options{Workdir: true}).System
	files := "\nArtifact files (in your working directory, the newest of each name): " +
		"artifacts/competitors.json, artifacts/api-comparison.json, artifacts/notes.md\n\n"
	if !strings.Contains(sys, sharedBlock+files) {
		t.Errorf("no artifact files line %q after the chain in:\n%s", files, sys)
	}
}

// Kinds with nothing are left out, and so is the block when the turn
// has no context or an empty one.
func TestSharedContextLeftOut(t *testing.T) {
	tn := privateTurn()
	tn.Shared = &brains.SharedContext{Facts: sampleShared().Facts}
	sys := Build(tn, Options{Workdir: true}).System
	want := "\n\nSHARED CONTEXT\nFacts: CompetitorX pricing_valid true (0.95, Auditor); CompetitorY has_api false (1, Researcher)\n\n"
	if !strings.Contains(sys, want) {
		t.Errorf("facts alone: want %q in:\n%s", want, sys)
	}
	for _, c := range []*brains.SharedContext{nil, {}} {
		tn.Shared = c
		if sys := Build(tn, Options{Workdir: true}).System; strings.Contains(sys, "SHARED CONTEXT") {
			t.Errorf("a shared context block for %#v:\n%s", c, sys)
		}
	}
	// A chain whose steps produced nothing names no files, and a name
	// that is a path is never offered as one.
	tn.Shared = &brains.SharedContext{Chain: []brains.ChainStep{
		{Step: 4, Producer: "Coder", Status: "done"},
		{Step: 5, Producer: "Coder", Status: "done", Outputs: []brains.Artifact{{Name: "../escape.sh"}}},
	}}
	sys = Build(tn, Options{Workdir: true}).System
	if want := "SHARED CONTEXT\nArtifact chain: 4. Coder produced nothing from —; 5. Coder produced ../escape.sh from —\n\n"; !strings.Contains(sys, want) {
		t.Errorf("want %q in:\n%s", want, sys)
	}
	if strings.Contains(sys, "Artifact files") {
		t.Errorf("files offered for a chain without safe outputs:\n%s", sys)
	}
}

// The block is part of the system message, which trimming never cuts:
// a budget drops history to make room for it.
func TestSharedContextTrimming(t *testing.T) {
	tn := numbered(5, 40)
	tn.Shared = sampleShared()
	sys := EstimateTokens(Build(brains.Turn{Bot: tn.Bot, User: tn.User, Text: "new", Shared: tn.Shared}, Options{}).System)
	p := Build(tn, Options{TokenBudget: sys + messageOverhead + EstimateTokens("new") + 2*(messageOverhead+10)})
	if got := kept(p); strings.Join(got, ",") != "m4,m5" {
		t.Errorf("kept %v, want [m4 m5]", got)
	}
	if !strings.Contains(p.System, sharedBlock) {
		t.Errorf("the shared context was cut from the system message:\n%s", p.System)
	}
}
