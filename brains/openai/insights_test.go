package openai

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestInsightsGolden: the insights other bots left about the person
// reach the model in the system message as SPEC §10.4 writes the block,
// after the shared findings. The golden file is the request's messages
// as the server got them.
func TestInsightsGolden(t *testing.T) {
	srv := newServer(t, jsonReply("Congratulations on the new job!"))
	b, _ := newBrain(t, srv, Config{})
	tn := turn("I start the new job on Monday")
	tn.Findings = []brains.Finding{{Bot: "Priest", BotID: "priest", Severity: "medium", Text: "Bryan's repo has no CI yet"}}
	tn.Insights = []brains.Insight{
		{Bot: "Elena", BotID: "elena", Kind: "epiphany", Text: "User expressed excitement about new job", Confidence: 0.85},
		{Bot: "Finn Shipley", BotID: "finnshipley", Kind: "observation", Text: "Bryan asks about\nMonday plans", Confidence: 0.7},
	}
	if _, err := b.Reply(context.Background(), tn); err != nil {
		t.Fatal(err)
	}
	reqs := srv.sent()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	got, err := json.MarshalIndent(reqs[0].raw["messages"], "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "insights_messages.golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./brains/openai -run TestInsightsGolden -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("the request's messages differ from %s (run with -update if intended)\n--- got ---\n%s", path, got)
	}
	contains(t, "system message", reqs[0].body.Messages[0].Content,
		"[INSIGHTS FROM OTHER CHARACTERS]\n- Elena noticed: User expressed excitement about new job\n- Finn Shipley noticed: Bryan asks about\n  Monday plans")
}
