package script

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
)

// fakeActions records calls; remember takes a number, post_finding
// refuses severity "bogus".
type fakeActions struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeActions) Specs() []brains.ActionSpec {
	return []brains.ActionSpec{
		{Name: "post_finding", Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"severity":{"type":"string"}}}`)},
		{Name: "remember", Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"confidence":{"type":"number"}}}`)},
	}
}

func (f *fakeActions) Call(_ context.Context, name string, args json.RawMessage) (string, error) {
	if strings.Contains(string(args), "bogus") {
		return "", errors.New(name + ": severity: must be one of low, medium, high, critical")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name+" "+string(args))
	return "done", nil
}

// logged is a logger that keeps what it writes.
func logged() (*slog.Logger, *strings.Builder) {
	var b strings.Builder
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

func TestRuleActions(t *testing.T) {
	log, out := logged()
	b := mustNew(t, Config{Logger: log, Rules: []Rule{{
		Match: `(?i)^found: (.*)`,
		Reply: "Noted, {{.User.Name}}.",
		Actions: []ActionTemplate{
			{Name: "post_finding", Args: map[string]string{"text": "{{index .Match 1}}", "severity": "high"}},
			{Name: "post_finding", Args: map[string]string{"text": "x", "severity": "bogus"}},
			{Name: "remember", Args: map[string]string{"text": "{{.Text}}", "confidence": "0.9"}},
			{Name: "remember", Args: map[string]string{"confidence": "{{.Nope}}"}},
		},
	}}})
	acts := &fakeActions{}
	tn := turn("found: JWT with 24h expiry")
	tn.Actions = acts
	r, err := b.Reply(context.Background(), tn)
	if err != nil || r.Text != "Noted, Ada." {
		t.Fatalf("Reply = %+v, %v; want the reply whatever its actions do", r, err)
	}
	want := []string{
		`post_finding {"severity":"high","text":"JWT with 24h expiry"}`,
		`remember {"confidence":0.9,"text":"found: JWT with 24h expiry"}`,
	}
	if strings.Join(acts.calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(acts.calls, "\n"), strings.Join(want, "\n"))
	}
	for _, w := range []string{"rules[0].actions[1].post_finding", "severity: must be one of", "rules[0].actions[3].remember.confidence"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("log lacks %q:\n%s", w, out.String())
		}
	}
}

func TestRuleActionsAlone(t *testing.T) {
	b := mustNew(t, Config{Logger: slog.New(slog.DiscardHandler), Rules: []Rule{{
		Match: `.*`, Actions: []ActionTemplate{{Name: "post_finding", Args: map[string]string{"text": "{{.Text}}"}}},
	}}})
	acts := &fakeActions{}
	tn := turn("quietly noted")
	tn.Actions = acts
	if r, err := b.Reply(context.Background(), tn); err != nil || r.Text != "" || len(acts.calls) != 1 {
		t.Errorf("a rule of actions alone = %+v, %v, %d calls; want no text, no error, one call", r, err, len(acts.calls))
	}
	// Without actions (a public bot), it has nothing to say.
	if _, err := b.Reply(context.Background(), turn("x")); !errors.Is(err, brains.ErrEmptyReply) {
		t.Errorf("without actions: %v, want ErrEmptyReply", err)
	}
}

func TestFindingsInTemplates(t *testing.T) {
	b := mustNew(t, Config{Default: `{{range .Findings}}[{{.Bot}} ({{.BotID}}) {{.Severity}}{{with .Stage}} in {{.}}{{end}}] {{.Text}}
{{else}}nothing yet{{end}}`})
	tn := turn("what do we know?")
	if r, _ := b.Reply(context.Background(), tn); r.Text != "nothing yet" {
		t.Errorf("no findings: %q", r.Text)
	}
	tn.Findings = []brains.Finding{
		{Bot: "Matty Atlas", BotID: "mattyatlas", Severity: "high", Text: "JWT with 24h expiry"},
		{Bot: "Finn Shipley", BotID: "finnshipley", Severity: "low", Text: "tests at 89%", Stage: "review"},
	}
	want := "[Matty Atlas (mattyatlas) high] JWT with 24h expiry\n[Finn Shipley (finnshipley) low in review] tests at 89%"
	if r, err := b.Reply(context.Background(), tn); err != nil || r.Text != want {
		t.Errorf("Reply = %q, %v\nwant %q", r.Text, err, want)
	}
}

func TestCheckActionTemplates(t *testing.T) {
	got := Check(Config{Rules: []Rule{{Match: `(\w+)`, Reply: "ok", Actions: []ActionTemplate{
		{Name: "post_finding", Args: map[string]string{"text": "{{.Txt}}", "severity": "{{index .Match 1}}"}},
		{Name: "post_finding", Args: map[string]string{"text": "{{(index .Findings 0).Text}}"}},
	}}}})
	if len(got) != 1 || got[0].Field != "rules[0].actions[0].post_finding.text" || !strings.Contains(got[0].Message, "Text") {
		t.Errorf("Check = %+v; want one finding on the misspelt field", got)
	}
}
