package insights

import (
	"iter"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxWords bounds the words a message is searched with: its first
// MaxWords distinct words count (a message is at most 64 KiB; no
// conversation needs more to find what it relates to).
const MaxWords = 256

// MaxWordLen is the longest word searched for or indexed (on SQLite), in
// characters: longer runs of letters are no word anyone writes twice.
const MaxWordLen = 64

// Words returns the words of text an insight must share to be found: its
// runs of letters, digits and marks, lower-cased, without PostgreSQL's
// english stop words, each once, in the order they first appear, at
// most MaxWords of them. Both stores search with these, so a message
// finds the same insights on either.
func Words(text string) []string {
	var out []string
	seen := map[string]bool{}
	for w := range terms(text) {
		if seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == MaxWords {
			break
		}
	}
	return out
}

// Indexed is text as a store's full-text index that cannot leave stop
// words out itself (SQLite's) indexes it: its words, as Words splits
// them, lower-cased, without stop words, every one in order, joined by
// spaces. PostgreSQL's english configuration leaves the same stop words
// out of its index, so a word that only stems like a stop word ("one",
// "on") finds nothing on either.
func Indexed(text string) string {
	var sb strings.Builder
	for w := range terms(text) {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(w)
	}
	return sb.String()
}

// terms yields text's words, lower-cased, without stop words and
// overlong runs.
func terms(text string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for w := range strings.FieldsFuncSeq(text, notWordRune) {
			w = strings.ToLower(w)
			if stopWords[w] || utf8.RuneCountInString(w) > MaxWordLen {
				continue
			}
			if !yield(w) {
				return
			}
		}
	}
}

// IsWord reports whether w is a word as Words makes them (not a stop
// word): stores put nothing else into a full-text query.
func IsWord(w string) bool {
	n := utf8.RuneCountInString(w)
	return n > 0 && n <= MaxWordLen && utf8.ValidString(w) && strings.IndexFunc(w, notWordRune) < 0 &&
		w == strings.ToLower(w) && !stopWords[w]
}

// notWordRune separates words: what is not a letter, a digit or a mark
// (a combining accent belongs to its letter), as SQLite's unicode61
// tokenizer and PostgreSQL's parser split text.
func notWordRune(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r) || r == utf8.RuneError
}

// stopWords are PostgreSQL's english stop words
// (share/tsearch_data/english.stop, the Snowball project's list), which
// its english text search configuration leaves out of documents and
// queries. The SQLite store searches without them too.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		i me my myself we our ours ourselves you your yours yourself yourselves
		he him his himself she her hers herself it its itself they them their
		theirs themselves what which who whom this that these those am is are
		was were be been being have has had having do does did doing a an the
		and but if or because as until while of at by for with about against
		between into through during before after above below to from up down
		in out on off over under again further then once here there when where
		why how all any both each few more most other some such no nor not only
		own same so than too very s t can will just don should now`) {
		m[w] = true
	}
	return m
}()
