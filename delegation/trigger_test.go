package delegation

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var team = []Bot{
	{ID: "mattyatlas", Name: "Matty Atlas", Names: []string{"matty", "atlas"}},
	{ID: "finnshipley", Name: "Finn Shipley", Names: []string{"finn"}},
	{ID: "priest", Name: "Priest"},
	{ID: "zoë", Name: "Zoë Ångström", Names: []string{"zoë"}},
}

func parser(t testing.TB, triggers ...string) *Parser {
	t.Helper()
	if len(triggers) == 0 {
		triggers = DefaultTriggers
	}
	p, err := NewParser(triggers, team)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFind(t *testing.T) {
	type hit struct{ bot, suggest, task string }
	tests := []struct {
		name string
		text string
		want []hit
	}{
		{"by id", "tell finnshipley to build the login page", []hit{{"finnshipley", "", "build the login page"}}},
		{"full name wins over first name", "Tell Finn Shipley to build feature X", []hit{{"finnshipley", "", "build feature X"}}},
		{"first name", "ask Finn to review the PR", []hit{{"finnshipley", "", "review the PR"}}},
		{"alias", "tell atlas to draw the plan", []hit{{"mattyatlas", "", "draw the plan"}}},
		{"mention", "ask @finn to review the PR.", []hit{{"finnshipley", "", "review the PR"}}},
		{"mention of full id", "ask @priest to check it!", []hit{{"priest", "", "check it"}}},
		{"case-insensitive", "TELL PRIEST TO look", []hit{{"priest", "", "look"}}},
		{"after a sentence", "Great work. Tell Priest to review it", []hit{{"priest", "", "review it"}}},
		{"after a newline", "thanks\nask finn to ship", []hit{{"finnshipley", "", "ship"}}},
		{"not mid-sentence", "I will tell finn to do it", nil},
		{"ordinary tell", "tell me to relax", nil},
		{"ordinary ask", "ask them to wait", nil},
		{"typo suggests", "tell Fin to build it", []hit{{"", "finnshipley", "build it"}}},
		{"two-word typo suggests", "ask Fin Shiply to build it", []hit{{"", "finnshipley", "build it"}}},
		{"unknown mention", "ask @nobody to help", []hit{{"", "", "help"}}},
		{"two triggers", "Tell Finn to build it. Ask Priest to review it.", []hit{
			{"finnshipley", "", "build it"}, {"priest", "", "review it"}}},
		{"non-ASCII name", "ask Zoë Ångström to translate the page", []hit{{"zoë", "", "translate the page"}}},
		{"non-ASCII task", "tell finn to übersetze die Seite 😀", []hit{{"finnshipley", "", "übersetze die Seite 😀"}}},
		{"empty task", "tell finn to ", nil},
		{"multi-line task", "tell finn to build:\n- login\n- logout", []hit{{"finnshipley", "", "build:\n- login\n- logout"}}},
	}
	p := parser(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := p.Find(tc.text)
			if len(got) != len(tc.want) {
				t.Fatalf("Find(%q) = %+v; want %d matches", tc.text, got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Bot != w.bot || g.Suggest != w.suggest || g.Task != w.task {
					t.Errorf("match %d = bot %q suggest %q task %q; want %q %q %q", i, g.Bot, g.Suggest, g.Task, w.bot, w.suggest, w.task)
				}
				if !strings.Contains(tc.text[g.Start:g.End], g.Task) {
					t.Errorf("span %q does not hold task %q", tc.text[g.Start:g.End], g.Task)
				}
			}
		})
	}
}

func TestCustomTriggers(t *testing.T) {
	p := parser(t, "{bot}, please {task}", "hand {task} over to {bot}")
	got := p.Find("Finn, please deploy it")
	if len(got) != 1 || got[0].Bot != "finnshipley" || got[0].Task != "deploy it" {
		t.Errorf("got %+v", got)
	}
	got = p.Find("hand the release notes over to priest")
	if len(got) != 1 || got[0].Bot != "priest" || got[0].Task != "the release notes" {
		t.Errorf("got %+v", got)
	}
	if got := p.Find("tell finn to x"); len(got) != 0 {
		t.Errorf("default trigger used although custom ones are set: %+v", got)
	}
	if _, err := NewParser([]string{"tell {bot}"}, team); err == nil {
		t.Error("a trigger without {task} compiled")
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"finn", "fin", 1}, {"fin shiply", "finn shipley", 2}, {"", "abc", 3}, {"zoë", "zoe", 1}, {"same", "same", 0}} {
		if got := editDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

func FuzzFind(f *testing.F) {
	for _, s := range []string{
		"tell finn to build", "Great. Ask @priest to review it!", "tell Fin to x", "ask Zoë Ångström to ü",
		"tell  finn\tto\n\nbuild", "...tell finn to .", "tell tell finn to to",
		"KINDLY ask finn to x", "\u212aindly ask finn to x", "finn, please build it", "ſay to finn: go",
	} {
		f.Add(s)
	}
	p := parser(f)
	// Triggers that start with a letter of three case variants (k, K
	// and the Kelvin sign), with a placeholder, and with a long s.
	odd := parser(f, "kindly ask {bot} to {task}", "{bot}, please {task}", "say to {bot}: {task}")
	f.Fuzz(func(t *testing.T, text string) {
		// The first-rune check only spares patterns that cannot match.
		for _, p := range []*Parser{p, odd} {
			unfiltered := *p
			unfiltered.firsts = make([][]rune, len(p.patterns))
			if got, want := p.Find(text), unfiltered.Find(text); !reflect.DeepEqual(got, want) {
				t.Fatalf("Find(%q) = %+v, without the first-rune check %+v", text, got, want)
			}
		}
		prevEnd := 0
		for _, m := range p.Find(text) {
			if m.Start < prevEnd || m.End < m.Start || m.End > len(text) {
				t.Fatalf("bad span [%d,%d) after %d in %q", m.Start, m.End, prevEnd, text)
			}
			if m.Task == "" {
				t.Fatalf("empty task in %q", text)
			}
			if m.Bot == "" && !m.At && m.Suggest == "" {
				t.Fatalf("unknown, unsuggested name %q counted as a trigger", m.Written)
			}
			if utf8.ValidString(text) && !utf8.ValidString(m.Task) {
				t.Fatalf("task %q is not valid UTF-8", m.Task)
			}
			prevEnd = m.End
		}
	})
}

// TestFirstRunes: the runes a sentence must start with for a trigger to
// match there, as regexp's case-insensitive matching folds them.
func TestFirstRunes(t *testing.T) {
	tests := []struct {
		trigger string
		want    []rune
	}{
		{"tell {bot} to {task}", []rune{'t', 'T'}},
		{"Ask {bot} to {task}", []rune{'A', 'a'}},
		{"kindly ask {bot} to {task}", []rune{'k', '\u212a', 'K'}},
		{"say to {bot}: {task}", []rune{'s', '\u017f', 'S'}},
		{"{bot}, please {task}", nil},
		{"{task} for {bot}", nil},
		{" tell {bot} to {task}", nil},
		{"\xfftell {bot} to {task}", nil},
	}
	for _, tc := range tests {
		got := firstRunes(tc.trigger)
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(tc.want))) {
			t.Errorf("firstRunes(%q) = %q, want %q", tc.trigger, got, tc.want)
		}
	}
}

// BenchmarkFind: a message without a trigger, as most are (the first-rune
// check spares its patterns), and one with.
func BenchmarkFind(b *testing.B) {
	p := parser(b)
	for _, text := range []string{
		"please have a look at the deploy notes, item 12345",
		"Thanks. Tell finn to build the login page, then ask priest to review it.",
	} {
		b.Run(strings.Fields(text)[0], func(b *testing.B) {
			for b.Loop() {
				p.Find(text)
			}
		})
	}
}
