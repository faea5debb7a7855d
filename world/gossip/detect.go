package gossip

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pattern is one of shared.gossip.patterns: a message that Match finds
// is news of Topic.
type Pattern struct {
	Match *regexp.Regexp
	Topic string
}

// DefaultSensitiveTopics are the words that block an event by default
// (SPEC §10, seed 000): health, money, relationships, the law, secrets.
var DefaultSensitiveTopics = []string{
	"health", "medical", "doctor", "therapy", "medication", "diagnosis",
	"finance", "money", "debt", "salary", "income", "bankrupt",
	"relationship", "dating", "partner", "divorce", "breakup",
	"legal", "lawsuit", "arrest", "crime", "court",
	"secret", "private", "confidential", "don't tell",
}

// DefaultPatterns are the patterns used when shared.gossip.patterns is
// not written (SPEC §10); the first that matches wins.
var DefaultPatterns = []struct{ Match, Topic string }{
	{`(?i)\b(got a new job|started (a )?new job|got promoted)\b`, "career"},
	{`(?i)\b(moving to|moved to|relocating to)\b`, "relocation"},
	{`(?i)\b(graduating|graduated|got my degree)\b`, "education"},
}

// Match checks text against patterns in order: the first that matches
// gives the topic, and the sentence its match starts in is the summary.
func Match(patterns []Pattern, text string) (topic, summary string, ok bool) {
	for _, p := range patterns {
		if p.Match == nil {
			continue
		}
		if loc := p.Match.FindStringIndex(text); loc != nil {
			return p.Topic, Summary(text, loc[0]), true
		}
	}
	return "", "", false
}

// Summary is the sentence of text that holds byte offset at, trimmed,
// with its final punctuation, cut to MaxSummary characters. A sentence
// ends after a run of '.', '!' or '?' or at a line break.
func Summary(text string, at int) string {
	at = max(0, min(at, len(text)))
	start, end := 0, len(text)
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '\n' || r == '\r':
			if i >= at {
				end = i
				return clip(text[start:end])
			}
			start = i + size
		case r == '.' || r == '!' || r == '?':
			// The sentence ends after the whole run ("?!", "...").
			j := i + size
			for j < len(text) && strings.IndexByte(".!?", text[j]) >= 0 {
				j++
			}
			if j > at {
				return clip(text[start:j])
			}
			start, i = j, j
			continue
		}
		i += size
	}
	return clip(text[start:end])
}

// clip trims s and cuts it to MaxSummary characters, the last of them an
// ellipsis when it was longer.
func clip(s string) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
	if utf8.RuneCountInString(s) <= MaxSummary {
		return s
	}
	runes := []rune(s)
	return strings.TrimSpace(string(runes[:MaxSummary-1])) + "…"
}

// Sensitive returns the first of words that the topic or the text holds,
// case aside. A word counts where a word of the text starts with it, so
// that "doctors", "divorced" and "lawsuits" count as "doctor", "divorce"
// and "lawsuit" (and so does "secretary" as "secret": privacy errs on the
// side of silence); "updating" does not hold "dating".
func Sensitive(words []string, topic, text string) (string, bool) {
	topic, text = fold(topic), fold(text)
	for _, w := range words {
		w = fold(strings.TrimSpace(w))
		if w == "" {
			continue
		}
		if startsWord(topic, w) || startsWord(text, w) {
			return w, true
		}
	}
	return "", false
}

// apostrophes writes typographic apostrophes as "'".
var apostrophes = strings.NewReplacer("\u2019", "'", "\u2018", "'", "\u02bc", "'")

// fold lower-cases s and writes its typographic apostrophes as "'", so
// that "Don’t tell" holds "don't tell".
func fold(s string) string { return apostrophes.Replace(strings.ToLower(s)) }

// startsWord reports whether a word of s starts with w: w occurs where
// the character before it is no letter or digit.
func startsWord(s, w string) bool {
	for i := 0; i <= len(s)-len(w); {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		if j == 0 {
			return true
		}
		r, _ := utf8.DecodeLastRuneInString(s[:j])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return true
		}
		_, size := utf8.DecodeRuneInString(s[j:])
		i = j + size
	}
	return false
}

// NoteMarker starts every memory's system message; a message that
// carries it repeats gossip.
const NoteMarker = "[Gossip from "

// DepthOf is the depth of news heard in text: 1 when the text carries a
// memory (it repeats gossip, which never travels on), else 0.
func DepthOf(text string) int {
	if strings.Contains(text, NoteMarker) {
		return 1
	}
	return 0
}
