package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/switchboard-chat/switchboard/store/sqlite"
	"github.com/switchboard-chat/switchboard/world/insights"
)

// FuzzInsightSearch: whatever a person writes, the search of the
// insights a turn finds runs (the message's words are quoted into an
// FTS5 query, where an unquoted word could be an operator or a syntax
// error), and finds only the person's insights by other bots.
func FuzzInsightSearch(f *testing.F) {
	for _, seed := range []string{
		"How is the new job?", `"unbalanced`, `NEAR(job new) OR x*`, "job: ^new AND -old", `'q' \b`, "ünïcödé 中文 🎉 job",
		"one on", "x\x00job", "\xff\xfejob",
	} {
		f.Add(seed)
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "sb.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	for _, in := range []insights.Insight{
		{User: "ann", Bot: "matty", Kind: insights.Epiphany, Text: "Ann got a new job", Confidence: 0.9},
		{User: "ann", Bot: "finn", Kind: insights.Diary, Text: "Ann's job: \"NEAR\" the station", Confidence: 0.9},
		{User: "bob", Bot: "matty", Kind: insights.Epiphany, Text: "Bob got a new job", Confidence: 0.9},
	} {
		if _, err := s.AddInsight(ctx, in); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, message string) {
		found, err := s.SearchInsights(ctx, insights.Search{User: "ann", Viewer: "finn", Words: insights.Words(message), Limit: 10})
		if err != nil {
			t.Fatalf("search %q: %v", message, err)
		}
		for _, in := range found {
			if in.User != "ann" || in.Bot == "finn" {
				t.Errorf("search %q found %+v", message, in)
			}
		}
	})
}
