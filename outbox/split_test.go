package outbox

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitText(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"fits", "hello", 10, []string{"hello"}},
		{"paragraphs", "first para\n\nsecond para", 15, []string{"first para", "second para"}},
		{"lines", "line one\nline two\nline three", 19, []string{"line one\nline two", "line three"}},
		{"words", "one two three four", 9, []string{"one two", "three", "four"}},
		{"hard cut", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"emoji counts two", "😀😀😀", 4, []string{"😀😀", "😀"}},
		{"never inside a character", "ééééé", 2, []string{"éé", "éé", "é"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SplitText(tc.text, tc.limit)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("SplitText(%q, %d) = %q, want %q", tc.text, tc.limit, got, tc.want)
			}
		})
	}
}

func FuzzSplitText(f *testing.F) {
	f.Add("hello world\n\nagain", 5)
	f.Add("😀 é x", 2)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit < 2 || limit > 5000 || !utf8.ValidString(text) {
			return
		}
		parts := SplitText(text, limit)
		var kept strings.Builder
		for _, p := range parts {
			if utf16Len(p) > limit {
				t.Fatalf("part %q over the limit %d", p, limit)
			}
			if !utf8.ValidString(p) {
				t.Fatalf("part %q splits a character", p)
			}
			kept.WriteString(p)
		}
		// Only separators at the cuts may be lost.
		strip := func(s string) string { return strings.Join(strings.Fields(s), "") }
		if strip(kept.String()) != strip(text) {
			t.Fatalf("text changed: %q → %q", text, parts)
		}
	})
}
