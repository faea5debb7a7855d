package insights

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"How is the new job going?", []string{"new", "job", "going"}},
		{"I GOT a New job, a new JOB!", []string{"got", "new", "job"}},
		{"don't you think it's one of those days", []string{"think", "one", "days"}},
		{"e-mail me at ann@example.com re: the café (2024)", []string{"e", "mail", "ann", "example", "com", "re", "café", "2024"}},
		{`NEAR("x" y*) OR -z ^w`, []string{"near", "x", "y", "z", "w"}},
		{"Ümlaut 中文 🎉", []string{"ümlaut", "中文"}},
		{"and the of to", nil},
		{"", nil},
		{strings.Repeat("a", MaxWordLen+1) + " ok", []string{"ok"}},
	} {
		if got := Words(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Words(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	var many []string
	for i := range MaxWords + 10 {
		many = append(many, "w"+strings.Repeat("x", i%60)+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	if got := Words(strings.Join(many, " ")); len(got) != MaxWords || got[0] != many[0] {
		t.Errorf("Words of %d distinct words = %d words, want the first %d", len(many), len(got), MaxWords)
	}
	if got := Indexed("The new job; the NEW job."); got != "new job new job" {
		t.Errorf("Indexed = %q", got)
	}
}

// FuzzWords: whatever a person writes, Words makes words a store may put
// in a query (IsWord), without stop words, each once, at most MaxWords.
func FuzzWords(f *testing.F) {
	for _, s := range []string{"How is the new job?", `"q" 'x' \ NEAR(a b)`, "x\x00y\xff", "İstanbul ǅ ß ﬁ", "a\u0301 e\u0308"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		words := Words(text)
		if len(words) > MaxWords {
			t.Fatalf("%d words", len(words))
		}
		seen := map[string]bool{}
		for _, w := range words {
			if !IsWord(w) || seen[w] || !utf8.ValidString(w) {
				t.Fatalf("Words(%q) holds %q (IsWord %v, repeated %v)", text, w, IsWord(w), seen[w])
			}
			seen[w] = true
		}
		for w := range strings.FieldsSeq(Indexed(text)) {
			if stopWords[w] {
				t.Fatalf("Indexed(%q) holds the stop word %q", text, w)
			}
		}
	})
}
