package openai

import (
	"context"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/brains/prompt"
)

// The gossip memories of a turn reach the model in the system message,
// in SPEC §10.5's block, exactly as the golden prompt has it.
func TestMemoriesInSystemMessage(t *testing.T) {
	srv := newServer(t, jsonReply("Congratulations on the new job, Bryan!"))
	b, _ := newBrain(t, srv, Config{})
	tn := turn("anything new with me?")
	tn.Memories = []brains.Memory{{From: "Elena", Text: "Bryan: I got a new job at a tech company"}}
	if _, err := b.Reply(context.Background(), tn); err != nil {
		t.Fatal(err)
	}
	reqs := srv.sent()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	sys := reqs[0].body.Messages[0]
	if sys.Role != "system" || sys.Content != prompt.Build(tn, prompt.Options{}).System {
		t.Errorf("the system message is not the built prompt's:\n%s", sys.Content)
	}
	contains(t, "system message", sys.Content,
		"\n\n[MEMORIES FROM OTHER CHARACTERS]\n- Elena told you: Bryan: I got a new job at a tech company")
}
