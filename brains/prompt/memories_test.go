package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
)

// memoriesTurn is Matty's private chat with Bryan after two other bots
// heard his news, with the shared findings of his space too.
func memoriesTurn() brains.Turn {
	tn := privateTurn()
	tn.Findings = []brains.Finding{{Bot: "Finn Shipley", BotID: "finnshipley", Severity: "medium", Text: "The login page needs passkeys"}}
	tn.Memories = []brains.Memory{
		{From: "Elena", Text: "Bryan: I got a new job at a tech company"},
		{From: "Priest", Text: "Bryan: We are moving to Lisbon in May.\nSo excited!"},
	}
	return tn
}

// The memories are one block in SPEC §10.5's own format, after the
// shared findings and before the injected context; a golden file pins
// the whole prompt.
func TestMemoriesGolden(t *testing.T) {
	got := dump(Build(memoriesTurn(), Options{}))
	path := filepath.Join("testdata", "memories.golden")
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
	sys := Build(memoriesTurn(), Options{}).System
	block := MemoriesHeading + "\n" +
		"- Elena told you: Bryan: I got a new job at a tech company\n" +
		"- Priest told you: Bryan: We are moving to Lisbon in May.\n  So excited!"
	i := strings.Index(sys, "\n\n"+block+"\n\n")
	if i < 0 {
		t.Fatalf("no memories block %q in:\n%s", block, sys)
	}
	if f, ctx := strings.Index(sys, FindingsHeading), strings.Index(sys, "=== FINDINGS ==="); !(f < i && i < ctx) {
		t.Errorf("memories block at %d, want between the shared findings (%d) and the context (%d)", i, f, ctx)
	}
	tn := memoriesTurn()
	tn.Memories = nil
	if sys := Build(tn, Options{}).System; strings.Contains(sys, "MEMORIES") {
		t.Errorf("a memories block without memories:\n%s", sys)
	}
}
