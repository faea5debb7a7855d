package script

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
)

// .Memories are the gossip memories the bot has of the person (SPEC
// §10.5), each with .From and .Text.
func TestMemoriesInTemplates(t *testing.T) {
	b := mustNew(t, Config{Rules: []Rule{{
		Match: `(?i)what's new`,
		Reply: `{{range .Memories}}{{.From}} says {{.Text}}; {{else}}no news{{end}}`,
	}}, Default: `{{len .Memories}} memories`})
	tn := turn("what's new?")
	if r, _ := b.Reply(context.Background(), tn); r.Text != "no news" {
		t.Errorf("no memories: %q", r.Text)
	}
	tn.Memories = []brains.Memory{
		{From: "Elena", Text: "Bryan: I got a new job at a tech company"},
		{From: "Priest", Text: "Bryan: We are moving to Lisbon."},
	}
	want := "Elena says Bryan: I got a new job at a tech company; Priest says Bryan: We are moving to Lisbon.;"
	if r, err := b.Reply(context.Background(), tn); err != nil || r.Text != want {
		t.Errorf("Reply = %q, %v\nwant %q", r.Text, err, want)
	}
	tn.Text = "hi"
	if r, _ := b.Reply(context.Background(), tn); r.Text != "2 memories" {
		t.Errorf("default reply = %q", r.Text)
	}
	// A misspelt field is caught when the configuration is checked.
	got := Check(Config{Default: `{{range .Memories}}{{.Sender}}{{end}}`})
	if len(got) != 1 || !strings.Contains(got[0].Message, "Sender") {
		t.Errorf("Check = %+v; want the misspelt field reported", got)
	}
}
