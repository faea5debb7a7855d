package script

import (
	"context"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
)

// Templates see the insights other bots left about the person as
// .Insights (SPEC §10.1), nil when there are none.
func TestInsightsField(t *testing.T) {
	b := mustNew(t, Config{Default: `{{range .Insights}}{{.Bot}} ({{.BotID}}, {{.Kind}}, {{.Confidence}}): {{.Text}}; {{else}}nothing known{{end}}`})
	tn := turn("the new job")
	tn.Insights = []brains.Insight{
		{Bot: "Elena", BotID: "elena", Kind: "epiphany", Text: "Ada is excited about her new job", Confidence: 0.85},
		{Bot: "Finn Shipley", BotID: "finnshipley", Kind: "observation", Text: "Ada starts Monday", Confidence: 1},
	}
	r, err := b.Reply(context.Background(), tn)
	if want := "Elena (elena, epiphany, 0.85): Ada is excited about her new job; Finn Shipley (finnshipley, observation, 1): Ada starts Monday;"; err != nil || r.Text != want {
		t.Errorf("reply = %q, %v\nwant %q", r.Text, err, want)
	}
	if r, err := b.Reply(context.Background(), turn("the new job")); err != nil || r.Text != "nothing known" {
		t.Errorf("without insights: %q, %v", r.Text, err)
	}
	// switchboard check runs templates on sample turns that hold one.
	if fs := Check(Config{Default: `{{(index .Insights 0).Text}}`}); len(fs) != 0 {
		t.Errorf("check of a template reading .Insights: %+v", fs)
	}
}
