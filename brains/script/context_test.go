package script

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
)

// contextTemplate prints every field of .Context.
const contextTemplate = `{{with .Context}}` +
	`{{range .Events}}[{{.Bot}}/{{.BotID}} {{.Time.Format "15:04"}}] {{.Text}}; {{end}}` +
	`{{range .Entities}}{{.Name}}={{.Attributes}}; {{end}}` +
	`{{range .Facts}}{{.Subject}} {{.Predicate}} {{.Object}} ({{.Confidence}}, {{.Bot}}/{{.BotID}}); {{end}}` +
	`{{range .Chain}}{{.Step}}. {{.Producer}}/{{.ProducerID}} "{{.Task}}" {{join .Inputs ","}} -> {{join .Outputs ","}} {{.Status}}; {{end}}` +
	`{{end}}`

// .Context is the shared context of the turn's space (SPEC §10.1):
// lists of plain fields, chain inputs and outputs as file names.
func TestContextInTemplates(t *testing.T) {
	at := time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)
	tn := turn("check the chain")
	tn.Shared = &brains.SharedContext{
		Events: []brains.ContextEvent{
			{Bot: "Researcher", BotID: "researcher", Text: "survey started", Time: at},
			{Bot: "Coder", BotID: "coder", Text: "APIs compared", Time: at.Add(time.Hour)},
		},
		Entities: []brains.ContextEntity{{Name: "competitor-x", Attributes: `{"pricing":"$99/month"}`}},
		Facts:    []brains.ContextFact{{Subject: "CompetitorX", Predicate: "pricing_valid", Object: "true", Confidence: 0.95, Bot: "Auditor", BotID: "auditor"}},
		Chain: []brains.ChainStep{
			{Step: 1, Producer: "Researcher", ProducerID: "researcher", Task: "survey", Status: "done",
				Outputs: []brains.Artifact{{ID: "a1", Name: "competitors.json", Content: []byte("never shown")}}},
			{Step: 2, Producer: "Coder", ProducerID: "coder", Task: "compare", Status: "failed",
				Inputs:  []brains.Artifact{{ID: "a1", Name: "competitors.json"}},
				Outputs: []brains.Artifact{{ID: "a2", Name: "api-comparison.json"}, {ID: "a3", Name: "notes.md"}}},
		},
	}
	b := mustNew(t, Config{Default: contextTemplate})
	r, err := b.Reply(context.Background(), tn)
	want := "[Researcher/researcher 09:30] survey started; [Coder/coder 10:30] APIs compared; " +
		`competitor-x={"pricing":"$99/month"}; ` +
		"CompetitorX pricing_valid true (0.95, Auditor/auditor); " +
		`1. Researcher/researcher "survey"  -> competitors.json done; ` +
		`2. Coder/coder "compare" competitors.json -> api-comparison.json,notes.md failed;`
	if err != nil || r.Text != want {
		t.Errorf("Reply = %q, %v\nwant %q", r.Text, err, want)
	}
	if fs := Check(Config{Default: contextTemplate}); len(fs) != 0 {
		t.Errorf("Check of a template reading every field of .Context: %+v", fs)
	}
}

// Without a shared context the lists are empty, never missing: ranges
// and len need no guard.
func TestContextAlwaysThere(t *testing.T) {
	b := mustNew(t, Config{Default: `{{len .Context.Events}} {{len .Context.Chain}}{{range .Context.Facts}}x{{else}} no facts{{end}}`})
	for _, c := range []*brains.SharedContext{nil, {}} {
		tn := turn("hi")
		tn.Shared = c
		if r, err := b.Reply(context.Background(), tn); err != nil || r.Text != "0 0 no facts" {
			t.Errorf("shared %#v: Reply = %q, %v", c, r.Text, err)
		}
	}
}

// switchboard check finds a misspelt field of .Context, naming the
// right one, and runs templates that index into it on a sample that
// has one of each.
func TestContextChecked(t *testing.T) {
	tests := []struct {
		tmpl string
		want string // in the one finding; "" for none
	}{
		{`{{range .Context.Facts}}{{.Subjet}}{{end}}`, "Subject"},
		{`{{range .Context.Chain}}{{.Outputs.Name}}{{end}}`, "Name"},
		{`{{.Context.Fact}}`, "did you mean .Context.Facts?"},
		{`{{(index .Context.Chain 0).Producer}} {{index (index .Context.Chain 0).Outputs 0}}`, ""},
		{`{{(index .Context.Events 0).Time.Year}} {{(index .Context.Entities 0).Attributes}}`, ""},
	}
	for _, tt := range tests {
		got := Check(Config{Default: tt.tmpl})
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("Check(%s) = %+v, want nothing", tt.tmpl, got)
		case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0].Message, tt.want)):
			t.Errorf("Check(%s) = %+v, want one finding naming %s", tt.tmpl, got, tt.want)
		}
	}
}
