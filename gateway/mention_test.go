package gateway

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/chat"
)

func TestParseMentions(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"@finn build it", []string{"finn"}},
		{"hi @finn and @matty.", []string{"finn", "matty"}},
		{"ann@example.com", nil},
		{"@@finn", nil},
		{"(@finn)", []string{"finn"}},
		{"Grüße @Jürgen!", []string{"Jürgen"}},
		{"@", nil},
		{"@finn-", []string{"finn"}},
		{"@finn_shipley", []string{"finn_shipley"}},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			var got []string
			for _, m := range ParseMentions(tc.text) {
				if tc.text[m.Start] != '@' || tc.text[m.Start+1:m.End] != m.Name {
					t.Errorf("span [%d,%d) = %q does not match name %q", m.Start, m.End, tc.text[m.Start:m.End], m.Name)
				}
				got = append(got, m.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("names = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestUTF16Span(t *testing.T) {
	tests := []struct {
		text           string
		offset, length int
		want           string
		ok             bool
	}{
		{"@finn hi", 0, 5, "@finn", true},
		{"héllo @finn", 6, 5, "@finn", true},
		{"😀 @finn", 3, 5, "@finn", true}, // the emoji is two UTF-16 units
		{"😀 @finn", 1, 5, "", false},     // starts inside the emoji's surrogate pair
		{"ab", 1, 5, "", false},
		{"ab", 2, 0, "", true},
		{"ab", -1, 1, "", false},
	}
	for _, tc := range tests {
		s, e, ok := UTF16Span(tc.text, tc.offset, tc.length)
		if ok != tc.ok || ok && tc.text[s:e] != tc.want {
			t.Errorf("UTF16Span(%q, %d, %d) = %d, %d, %v; want %q, %v", tc.text, tc.offset, tc.length, s, e, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseMentions(f *testing.F) {
	for _, s := range []string{"@finn build", "Grüße @Jürgen!", "😀@x", "a@b @c", "@", "\xff@x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ms := ParseMentions(text)
		var cuts [][2]int
		prev := -1
		for _, m := range ms {
			if m.Start <= prev || m.Start >= m.End || m.End > len(text) || text[m.Start] != '@' {
				t.Fatalf("bad mention %+v in %q", m, text)
			}
			if m.Name == "" || text[m.Start+1:m.End] != m.Name {
				t.Fatalf("name %q does not match span in %q", m.Name, text)
			}
			prev = m.End
			cuts = append(cuts, [2]int{m.Start, m.End})
		}
		out := stripRanges(text, cuts)
		if utf8.ValidString(text) && !utf8.ValidString(out) {
			t.Fatalf("stripping made invalid UTF-8 from %q: %q", text, out)
		}
		if len(ms) > 0 {
			ev := Event{Platform: "web", ChatID: "c", ChatType: chat.Group, MessageID: "1", Sender: Sender{PlatformID: "web-x"}, Text: text + "x", Mentions: ms}
			if err := ev.Validate(); err != nil {
				t.Fatalf("parsed mentions do not validate: %v", err)
			}
		}
	})
}

func FuzzUTF16Span(f *testing.F) {
	f.Add("héllo @finn", 6, 5)
	f.Add("😀 @finn", 3, 5)
	f.Fuzz(func(t *testing.T, text string, offset, length int) {
		s, e, ok := UTF16Span(text, offset, length)
		if !ok {
			return
		}
		if s < 0 || e < s || e > len(text) {
			t.Fatalf("span [%d,%d) outside %q", s, e, text)
		}
		if utf8.ValidString(text) && !utf8.ValidString(text[s:e]) {
			t.Fatalf("span [%d,%d) of %q splits a character", s, e, text)
		}
	})
}
