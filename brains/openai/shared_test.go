package openai

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/brains/prompt"
)

// TestSharedContextGolden: what two bots added to a room's shared
// context, and the chain of its three hand-offs, reach a third bot's
// model in the system message as SPEC §10.7's SHARED CONTEXT block. The
// golden file is the system message as the server got it.
func TestSharedContextGolden(t *testing.T) {
	srv := newServer(t, jsonReply("Both files check out."))
	b, _ := newBrain(t, srv, Config{})
	at := time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)
	tn := turn("Auditor, is the comparison sound?")
	tn.Bot = brains.Bot{ID: "auditor", Name: "Auditor", Persona: "You are the Auditor. You check the team's work."}
	tn.Group = true
	tn.Platform = "web"
	tn.GroupHistory = []brains.Entry{
		{Kind: "human", From: "Bryan", Text: "@researcher survey our competitors", Time: at},
		{Kind: "bot", From: "Coder", Text: "api-comparison.json is ready.", Time: at.Add(3 * time.Minute)},
	}
	tn.Shared = &brains.SharedContext{
		Events: []brains.ContextEvent{
			{Bot: "Researcher", BotID: "researcher", Text: "started the competitor survey", Time: at},
			{Bot: "Coder", BotID: "coder", Text: "compared the APIs of three competitors", Time: at.Add(time.Minute)},
			{Bot: "Researcher", BotID: "researcher", Text: "survey done", Time: at.Add(2 * time.Minute)},
		},
		Entities: []brains.ContextEntity{{Name: "competitor-x", Attributes: `{"api":"REST","pricing":"$99/month"}`}},
		Facts: []brains.ContextFact{
			{Subject: "CompetitorX", Predicate: "pricing_valid", Object: "true", Confidence: 0.95, Bot: "Researcher", BotID: "researcher"},
			{Subject: "CompetitorX", Predicate: "api_style", Object: "REST", Confidence: 0.8, Bot: "Coder", BotID: "coder"},
		},
		Chain: []brains.ChainStep{
			{Step: 1, Producer: "Researcher", ProducerID: "researcher", Task: "survey the competitors", Status: "done",
				Outputs: []brains.Artifact{{ID: "art-1", Name: "competitors.json"}}},
			{Step: 2, Producer: "Coder", ProducerID: "coder", Task: "compare their APIs", Status: "done",
				Inputs:  []brains.Artifact{{ID: "art-1", Name: "competitors.json"}},
				Outputs: []brains.Artifact{{ID: "art-2", Name: "api-comparison.json"}}},
			{Step: 3, Producer: "Coder", ProducerID: "coder", Task: "add the prices", Status: "failed",
				Inputs: []brains.Artifact{{ID: "art-1", Name: "competitors.json"}, {ID: "art-2", Name: "api-comparison.json"}}},
		},
	}
	if _, err := b.Reply(context.Background(), tn); err != nil {
		t.Fatal(err)
	}
	reqs := srv.sent()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	sys := reqs[0].body.Messages[0]
	if sys.Role != "system" {
		t.Fatalf("first message %+v, want the system message", sys)
	}
	got := sys.Content + "\n"
	path := filepath.Join("testdata", "shared_context_system.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./brains/openai -run TestSharedContextGolden -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("the system message differs from %s (run with -update if intended)\n--- got ---\n%s", path, got)
	}
	// A model has no working directory: no files are promised.
	contains(t, "system message", sys.Content,
		"SHARED CONTEXT\n"+
			"Events: Researcher: started the competitor survey; Coder: compared the APIs of three competitors; Researcher: survey done\n"+
			`Entities: competitor-x {"api":"REST","pricing":"$99/month"}`+"\n"+
			"Facts: CompetitorX pricing_valid true (0.95, Researcher); CompetitorX api_style REST (0.8, Coder)\n"+
			"Artifact chain: 1. Researcher produced competitors.json from —; 2. Coder produced api-comparison.json from competitors.json; "+
			"3. Coder produced nothing from competitors.json, api-comparison.json (failed)\n\n")
	if sys.Content != prompt.Build(tn, prompt.Options{}).System {
		t.Errorf("the system message is not the built prompt's")
	}
}
