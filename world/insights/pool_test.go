package insights_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/store/sqlite"
	"github.com/switchboard-chat/switchboard/world"
	"github.com/switchboard-chat/switchboard/world/actions"
	"github.com/switchboard-chat/switchboard/world/insights"
)

// newPool is a pool on a real store in a temp dir.
func newPool(t *testing.T) *insights.Pool {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return insights.New(s, insights.Options{})
}

func TestRememberChecks(t *testing.T) {
	p := newPool(t)
	ctx := context.Background()
	ok := insights.Note{User: "ann", Bot: "matty", Kind: insights.Epiphany, Text: "Ann likes chess", Confidence: 0.8}
	for _, tc := range []struct {
		change func(*insights.Note)
		field  string
	}{
		{func(n *insights.Note) { n.Text = "  \n " }, "text"},
		{func(n *insights.Note) { n.Text = strings.Repeat("é", insights.MaxText+1) }, "text"},
		{func(n *insights.Note) { n.Text = "x\xff" }, "text"},
		{func(n *insights.Note) { n.Kind = "hunch" }, "kind"},
		{func(n *insights.Note) { n.Kind = "" }, "kind"},
		{func(n *insights.Note) { n.Confidence = 1.01 }, "confidence"},
		{func(n *insights.Note) { n.Confidence = -0.1 }, "confidence"},
		{func(n *insights.Note) { n.Confidence = math.NaN() }, "confidence"},
		{func(n *insights.Note) { n.User = "" }, "user"},
		{func(n *insights.Note) { n.Bot = " " }, "bot"},
	} {
		n := ok
		tc.change(&n)
		_, err := p.Remember(ctx, n)
		var ie *world.InvalidError
		if !errors.As(err, &ie) || ie.Field != tc.field || !errors.Is(err, world.ErrInvalid) {
			t.Errorf("Remember(%+v) = %v; want an InvalidError on %s", n, err, tc.field)
		}
	}
	if list, _ := p.List(ctx, insights.Query{Limit: 10}); len(list) != 0 {
		t.Errorf("refused notes were stored: %+v", list)
	}
	for _, c := range []float64{0, 1} {
		n := ok
		n.Confidence, n.Text = c, strings.Repeat("é", insights.MaxText)+"  "
		if in, err := p.Remember(ctx, n); err != nil || in.ID == 0 || in.Confidence != c || len([]rune(in.Text)) != insights.MaxText {
			t.Errorf("Remember at the limits (confidence %v, %d characters) = %+v, %v", c, insights.MaxText, in.Confidence, err)
		}
	}
}

func TestForTurn(t *testing.T) {
	p := newPool(t)
	ctx := context.Background()
	remember := func(bot, text string, confidence float64) {
		t.Helper()
		if _, err := p.Remember(ctx, insights.Note{User: "ann", Bot: bot, Kind: insights.Observation, Text: text, Confidence: confidence}); err != nil {
			t.Fatal(err)
		}
	}
	remember("matty", "Ann started a new job in Berlin", 0.9)
	remember("priest", "Ann dreams of a job by the sea", 0.75)
	remember("priest", "Ann may dislike her job", 0.6)
	remember("finn", "Ann's job is in tech", 0.99)
	found := func(viewer, message string) []string {
		t.Helper()
		list, err := p.ForTurn(ctx, "ann", viewer, message)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, in := range list {
			out = append(out, in.Bot+": "+in.Text)
		}
		return out
	}
	// The defaults: 0.7 and 3, the most relevant three, shown oldest
	// first.
	if s := p.Settings(); s != insights.DefaultSettings || s.Threshold != 0.7 || s.Limit != 3 || !s.Enabled {
		t.Errorf("settings = %+v", s)
	}
	want := []string{"matty: Ann started a new job in Berlin", "priest: Ann dreams of a job by the sea"}
	if got := found("finn", "the job in Berlin?"); !slices.Equal(got, want) {
		t.Errorf("finn finds %q\nwant %q", got, want)
	}
	p.Configure(insights.Settings{Enabled: true, Threshold: 0.5, Limit: 1})
	if got := found("finn", "the job in Berlin?"); !slices.Equal(got, want[:1]) {
		t.Errorf("with limit 1, finn finds %q", got)
	}
	p.Configure(insights.Settings{Enabled: true, Threshold: 0.5, Limit: 5})
	if got := found("finn", "job"); len(got) != 3 {
		t.Errorf("with threshold 0.5, finn finds %q; want 3", got)
	}
	if got := found("finn", "the weather"); len(got) != 0 {
		t.Errorf("an unrelated message finds %q", got)
	}
	p.Configure(insights.Settings{Enabled: false, Threshold: 0.5, Limit: 5})
	if got := found("finn", "job"); len(got) != 0 {
		t.Errorf("disabled, finn finds %q", got)
	}
	p.Configure(insights.Settings{Enabled: true, Limit: 0})
	if got := found("finn", "job"); len(got) != 0 {
		t.Errorf("with limit 0, finn finds %q", got)
	}
}

func TestAction(t *testing.T) {
	p := newPool(t)
	reg := actions.New()
	if err := reg.Register(insights.Action(p)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	turn := reg.Bind(actions.Caller{Bot: "elena", User: "user-bryan", UserName: "Bryan", Space: "user:user-bryan"})
	out, err := turn.Call(ctx, "remember", json.RawMessage(`{"kind": "epiphany", "text": "Bryan is excited about his new job", "confidence": 0.85}`))
	if err != nil || !strings.Contains(out, "Remembered insight") || !strings.Contains(out, "Bryan") {
		t.Fatalf("remember = %q, %v", out, err)
	}
	for _, tc := range []struct {
		args, arg, problem string
	}{
		{`{"kind": "epiphany", "text": "x", "confidence": 1.5}`, "confidence", "must be a number from 0 to 1"},
		{`{"kind": "epiphany", "text": "x", "confidence": -0.2}`, "confidence", "must be a number from 0 to 1"},
		{`{"kind": "epiphany", "text": "x", "confidence": "high"}`, "confidence", "must be a number from 0 to 1"},
		{`{"kind": "epiphany", "text": "", "confidence": 0.9}`, "text", "must be a non-empty string of at most 1000 characters"},
		{`{"kind": "epiphany", "text": "   ", "confidence": 0.9}`, "text", "an insight needs a text"},
		{`{"kind": "hunch", "text": "x", "confidence": 0.9}`, "kind", "must be one of epiphany, diary, dream, observation"},
		{`{"kind": "epiphany", "text": "x"}`, "confidence", "missing; it is required"},
		{`{"kind": "epiphany", "text": "x", "confidence": 0.9, "about": "y"}`, "about", "unknown argument"},
	} {
		_, err := turn.Call(ctx, "remember", json.RawMessage(tc.args))
		var ae *actions.ArgumentError
		if !errors.As(err, &ae) || ae.Arg != tc.arg || !strings.Contains(err.Error(), tc.problem) {
			t.Errorf("remember %s: %v; want refused on %s: %s", tc.args, err, tc.arg, tc.problem)
		}
	}
	list, _ := p.List(ctx, insights.Query{Users: []string{"user-bryan"}, Limit: 10})
	if len(list) != 1 || list[0].Bot != "elena" || list[0].Kind != "epiphany" || list[0].Confidence != 0.85 {
		t.Errorf("stored = %+v", list)
	}
	// A public bot takes no part.
	public := reg.Bind(actions.Caller{Bot: "help", User: "web-x", Public: true})
	if _, err := public.Call(ctx, "remember", json.RawMessage(`{"kind": "epiphany", "text": "x", "confidence": 0.9}`)); err == nil {
		t.Errorf("a public bot remembered")
	}
}
