package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/switchboard-chat/switchboard/world/insights"
)

// insight is an insight of bot about user, to add.
func insight(user, bot, text string, confidence float64) insights.Insight {
	return insights.Insight{User: user, Bot: bot, Kind: insights.Epiphany, Text: text, Confidence: confidence, CreatedAt: now()}
}

func addInsight(t *testing.T, s Store, in insights.Insight) insights.Insight {
	t.Helper()
	got, err := s.AddInsight(context.Background(), in)
	if err != nil {
		t.Fatalf("add insight %q: %v", in.Text, err)
	}
	return got
}

// insightTexts lists the texts of what q selects.
func insightTexts(t *testing.T, s Store, q insights.Query) []string {
	t.Helper()
	list, err := s.Insights(context.Background(), q)
	if err != nil {
		t.Fatalf("insights %+v: %v", q, err)
	}
	return insightList(list)
}

// searchTexts lists the texts of what a search for message's words
// finds.
func searchTexts(t *testing.T, s Store, user, viewer, message string, min float64, limit int) []string {
	t.Helper()
	list, err := s.SearchInsights(context.Background(), insights.Search{
		User: user, Viewer: viewer, Words: insights.Words(message), MinConfidence: min, Limit: limit,
	})
	if err != nil {
		t.Fatalf("search %q: %v", message, err)
	}
	return insightList(list)
}

func insightList(list []insights.Insight) []string {
	out := []string{}
	for _, in := range list {
		out = append(out, in.Text)
	}
	return out
}

// testInsights: insights are stored as given, listed by person and by
// author, the newest limit of them, oldest first; one is forgotten by
// its ID.
func testInsights(t *testing.T, f Factory) {
	s := f.New(t)
	ctx := context.Background()
	first := addInsight(t, s, insight("ann", "matty", "Ann is excited about her new job", 0.85))
	if first.ID == 0 || first.User != "ann" || first.Bot != "matty" || first.Kind != insights.Epiphany || first.Confidence != 0.85 {
		t.Errorf("added = %+v", first)
	}
	second := addInsight(t, s, insights.Insight{User: "ann", Bot: "finn", Kind: insights.Dream, Text: "Ann flew over the city", Confidence: 0.3, CreatedAt: now()})
	addInsight(t, s, insight("web-anon-1", "matty", "the visitor likes trains", 0.9))
	third := addInsight(t, s, insight("ann", "matty", "Ann prefers mornings", 1))
	if !(first.ID < second.ID && second.ID < third.ID) {
		t.Errorf("IDs %d, %d, %d do not grow", first.ID, second.ID, third.ID)
	}
	for _, tc := range []struct {
		q    insights.Query
		want []string
	}{
		{insights.Query{Users: []string{"ann"}, Limit: 10}, []string{"Ann is excited about her new job", "Ann flew over the city", "Ann prefers mornings"}},
		{insights.Query{Users: []string{"ann"}, Limit: 2}, []string{"Ann flew over the city", "Ann prefers mornings"}},
		{insights.Query{Users: []string{"ann"}, Bot: "matty", Limit: 10}, []string{"Ann is excited about her new job", "Ann prefers mornings"}},
		{insights.Query{Users: []string{"user-ann", "web-anon-1"}, Limit: 10}, []string{"the visitor likes trains"}},
		{insights.Query{Bot: "matty", Limit: 10}, []string{"Ann is excited about her new job", "the visitor likes trains", "Ann prefers mornings"}},
		{insights.Query{Limit: 2}, []string{"the visitor likes trains", "Ann prefers mornings"}},
		{insights.Query{Users: []string{"nobody"}, Limit: 10}, []string{}},
	} {
		if got := insightTexts(t, s, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("insights %+v = %q\nwant %q", tc.q, got, tc.want)
		}
	}
	list, err := s.Insights(ctx, insights.Query{Users: []string{"ann"}, Bot: "finn", Limit: 1})
	if err != nil || len(list) != 1 {
		t.Fatalf("finn's = %+v, %v", list, err)
	}
	if got := list[0]; got.ID != second.ID || got.Kind != insights.Dream || got.Confidence != 0.3 || !got.CreatedAt.Equal(second.CreatedAt) {
		t.Errorf("read back %+v\nwant %+v", got, second)
	}

	if err := s.DeleteInsight(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteInsight(ctx, first.ID); !errors.Is(err, insights.ErrNotFound) {
		t.Errorf("deleting it again: %v, want ErrNotFound", err)
	}
	if got := insightTexts(t, s, insights.Query{Users: []string{"ann"}, Limit: 10}); !slices.Equal(got, []string{"Ann flew over the city", "Ann prefers mornings"}) {
		t.Errorf("after the delete: %q", got)
	}
	// A forgotten insight is found no more.
	if got := searchTexts(t, s, "ann", "finn", "any news about the job?", 0, 10); len(got) != 0 {
		t.Errorf("the forgotten insight is still found: %q", got)
	}
	s = f.Reopen(t, s)
	if got := searchTexts(t, s, "ann", "finn", "good mornings", 0, 10); !slices.Equal(got, []string{"Ann prefers mornings"}) {
		t.Errorf("after a reopen the search finds %q", got)
	}
}

// testInsightSearch: a search finds the person's insights by other
// bots that share a word with the message (stop words aside, words
// stemmed alike), of at least the confidence asked, the more relevant
// first, at most the limit.
func testInsightSearch(t *testing.T, f Factory) {
	s := f.New(t)
	addInsight(t, s, insight("ann", "priest", "Ann got a new job and is nervous about it", 0.95))
	addInsight(t, s, insight("ann", "matty", "Ann starts a new job at a tech company on Monday", 0.9))
	addInsight(t, s, insight("ann", "finn", "Ann thinks her job is at risk", 0.5))
	addInsight(t, s, insight("ann", "finn", "Ann prefers morning conversations", 0.7))
	addInsight(t, s, insight("ann", "finn", "Ann lives near the café by the river", 0.8))
	addInsight(t, s, insight("bob", "matty", "Bob got a new job as well", 0.99))

	for _, tc := range []struct {
		name, viewer, message string
		min                   float64
		limit                 int
		want                  []string
	}{
		{"the most relevant first", "finn", "How is the new job at the tech company?", 0.7, 10,
			[]string{"Ann starts a new job at a tech company on Monday", "Ann got a new job and is nervous about it"}},
		{"at most the limit", "finn", "How is the new job at the tech company?", 0.7, 1,
			[]string{"Ann starts a new job at a tech company on Monday"}},
		{"never the viewer's own", "matty", "How is the new job at the tech company?", 0.7, 10,
			[]string{"Ann got a new job and is nervous about it"}},
		// As relevant (bm25 weighs the shorter text up; ts_rank sees them
		// equal, and the newer comes first).
		{"below the threshold too when asked", "priest", "my job", 0.5, 10,
			[]string{"Ann thinks her job is at risk", "Ann starts a new job at a tech company on Monday"}},
		{"at the threshold", "matty", "I love a quiet morning", 0.7, 10, []string{"Ann prefers morning conversations"}},
		{"above it", "matty", "I love a quiet morning", 0.75, 10, []string{}},
		{"stemmed alike", "matty", "Any jobs going?", 0.9, 10, []string{"Ann got a new job and is nervous about it"}},
		{"unrelated", "finn", "What is the weather like today?", 0, 10, []string{}},
		{"stop words only", "finn", "and it was the one that I had been on about", 0, 10, []string{}},
		{"no words", "finn", "?! …", 0, 10, []string{}},
		{"words that are operators elsewhere", "matty", `NEAR "the" café* OR (river`, 0, 10, []string{"Ann lives near the café by the river"}},
		{"another person's never", "finn", "a new job", 0, 10, []string{"Bob got a new job as well"}},
	} {
		user := "ann"
		if tc.name == "another person's never" {
			user = "bob"
		}
		if got := searchTexts(t, s, user, tc.viewer, tc.message, tc.min, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("%s: search %q for %s = %q\nwant %q", tc.name, tc.message, tc.viewer, got, tc.want)
		}
	}

	// Equally relevant: the newer first.
	s2 := f.New(t)
	addInsight(t, s2, insight("ann", "matty", "Ann plays chess", 0.9))
	addInsight(t, s2, insight("ann", "priest", "Ann plays chess", 0.9))
	if got, err := s2.SearchInsights(context.Background(), insights.Search{User: "ann", Viewer: "finn", Words: []string{"chess"}, MinConfidence: 0.7, Limit: 10}); err != nil ||
		len(got) != 2 || got[0].Bot != "priest" || got[1].Bot != "matty" {
		t.Errorf("two equally relevant insights = %+v, %v; want priest's (the newer) first", got, err)
	}
	// No message makes a search fail: what is not a word is never put
	// in a query.
	for _, m := range []string{`"unbalanced`, `'quoted' \back\slash`, `a:b col:umn`, `NOT AND OR NEAR(x y)`, `*^-+`,
		"x\x00y", "\xff\xfe broken", "Ümlaut ÆØÅ ß 中文 日本語 🎉", `chess' | 'x`, `(chess) & !x <-> y`} {
		if _, err := s2.SearchInsights(context.Background(), insights.Search{User: "ann", Viewer: "finn", Words: insights.Words(m), Limit: 10}); err != nil {
			t.Errorf("search %q: %v", m, err)
		}
	}
	// Words that are not words (Words never makes them) are not searched
	// for.
	if got, err := s2.SearchInsights(context.Background(), insights.Search{User: "ann", Viewer: "finn", Words: []string{`chess"`, "the", "Chess", ""}, Limit: 10}); err != nil || len(got) != 0 {
		t.Errorf("a search for words Words never makes = %+v, %v; want nothing", got, err)
	}
}
