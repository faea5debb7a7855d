package gossip

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func defaultPatterns() []Pattern { return DefaultSettings().Patterns }

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		text, topic, summary string
	}{
		{"Guess what? I got a new job at a tech company", "career", "I got a new job at a tech company"},
		{"Big news! I GOT PROMOTED today!!! Cake later.", "career", "I GOT PROMOTED today!!!"},
		{"hi\nwe are moving to Lisbon in May\nso excited", "relocation", "we are moving to Lisbon in May"},
		{"I graduated. I also started a new job.", "career", "I also started a new job."},
		{"Relocating to Oslo?! Yes.", "relocation", "Relocating to Oslo?!"},
		{"nothing to see here", "", ""},
		{"I got a new jobs list", "", ""},
	} {
		topic, summary, ok := Match(defaultPatterns(), tc.text)
		if ok != (tc.topic != "") || topic != tc.topic || summary != tc.summary {
			t.Errorf("Match(%q) = %q, %q, %v; want %q, %q", tc.text, topic, summary, ok, tc.topic, tc.summary)
		}
	}
	// The first pattern that matches wins, wherever its match is.
	ps := []Pattern{{regexp.MustCompile(`(?i)moving`), "first"}, {regexp.MustCompile(`(?i)job`), "second"}}
	if topic, _, _ := Match(ps, "New job. Moving too."); topic != "first" {
		t.Errorf("first pattern: topic %q", topic)
	}
}

func TestSummaryLength(t *testing.T) {
	long := "I got a new job " + strings.Repeat("and it is wonderful ", 20) + "."
	got := Summary(long, 2)
	if n := utf8.RuneCountInString(got); n != MaxSummary || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "I got a new job") {
		t.Errorf("summary of a long sentence: %d characters, %q", n, got)
	}
	if got := Summary("   ", 0); got != "" {
		t.Errorf("summary of blanks = %q", got)
	}
	if got := Summary("one. two", 100); got != "two" {
		t.Errorf("summary past the end = %q", got)
	}
}

func TestSensitive(t *testing.T) {
	words := DefaultSensitiveTopics
	for _, tc := range []struct {
		topic, text, want string
	}{
		{"career", "I got a new job, and my salary doubled", "salary"},
		{"health", "I got a new job", "health"},
		{"career", "Got promoted! Don’t tell anyone yet", "don't tell"},
		{"career", "Got promoted after the Lawsuits ended", "lawsuit"},
		{"career", "I got a new job as a secretary", "secret"},
		{"career", "I got a new job updating records", ""},
		{"career", "I got a new job at a tech company", ""},
		{"relocation", "Moving to Lisbon; my DOCTOR said the sun helps", "doctor"},
	} {
		got, ok := Sensitive(words, tc.topic, tc.text)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Sensitive(%q, %q) = %q, %v; want %q", tc.topic, tc.text, got, ok, tc.want)
		}
	}
	if _, ok := Sensitive([]string{"", "  "}, "x", "anything"); ok {
		t.Error("blank words matched")
	}
}

func TestDepthOf(t *testing.T) {
	if DepthOf("I got a new job") != 0 {
		t.Error("a person's own news has depth 0")
	}
	if DepthOf("Elena says: [Gossip from Elena] Bryan: I got a new job") != 1 {
		t.Error("news that repeats a memory has depth 1")
	}
}

func FuzzSummary(f *testing.F) {
	f.Add("Guess what? I got a new job at a tech company", 12)
	f.Add("a\r\nb!?c...", 4)
	f.Add("\xff\xfe. x", 1)
	f.Fuzz(func(t *testing.T, text string, at int) {
		s := Summary(text, at)
		if utf8.RuneCountInString(s) > MaxSummary {
			t.Errorf("summary of %d characters", utf8.RuneCountInString(s))
		}
		if !utf8.ValidString(s) {
			t.Errorf("summary %q is not valid UTF-8", s)
		}
		if s != strings.TrimSpace(s) {
			t.Errorf("summary %q is not trimmed", s)
		}
		if strings.ContainsAny(s, "\n\r") {
			t.Errorf("summary %q spans lines", s)
		}
	})
}

func FuzzSensitive(f *testing.F) {
	f.Add("career", "I got a new job, don't tell")
	f.Add("x", "\xffsecret")
	f.Fuzz(func(t *testing.T, topic, text string) {
		w, ok := Sensitive(DefaultSensitiveTopics, topic, text)
		if ok != (w != "") {
			t.Errorf("Sensitive = %q, %v", w, ok)
		}
	})
}
