// Package delegation is the hand-off logic of SPEC §5: finding "tell Finn
// to …" triggers in a message, the policy that refuses runaway chains
// (depth, loops, cooldowns, allow lists, pair rate limits), and the texts a
// hand-off produces (the wrapper the target bot reads, the result callback).
// It knows nothing of platforms, storage or brains.
package delegation

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultTriggers are used when a bot configures none.
var DefaultTriggers = []string{"tell {bot} to {task}", "ask {bot} to {task}"}

// Bot is what the parser knows of a bot: its ID and every name that
// addresses it (ID, display name, first word of the name, aliases).
type Bot struct {
	ID    string
	Name  string
	Names []string
}

// Match is one trigger found in a message.
type Match struct {
	// Start and End are the byte range of the whole trigger and its task.
	Start, End int
	// Written is the bot's name as written, without a leading '@'.
	Written string
	// At is true when the name was written with '@'.
	At bool
	// Bot is the ID of the named bot; empty when the name is unknown.
	Bot string
	// Suggest is the ID of the closest bot for an unknown name, when one
	// is within two edits.
	Suggest string
	// Task is the text of the task.
	Task string
	// Expected are the outputs the hand-off asks for (a delegate
	// action's expected_outputs; a typed trigger asks for none).
	Expected []Expected
	// Inputs name the files the hand-off takes (a delegate action's
	// inputs: file names of the space's artifact chain, or artifact
	// IDs); a typed trigger takes none.
	Inputs []string
}

// Parser finds triggers for one bot's trigger phrases against one set of
// bots. It is immutable and safe for concurrent use.
type Parser struct {
	patterns []*regexp.Regexp
	// firsts are, for each pattern, the runes a sentence must begin with
	// for it to match there (firstRunes), nil for any.
	firsts [][]rune
	bots   []Bot
	byName map[string]string // lower-cased name → bot ID
}

// namePattern matches a name not known to the parser: up to three words.
const namePattern = `[\p{L}\p{N}_.'-]+(?:[ \t]+[\p{L}\p{N}_.'-]+){0,2}?`

// NewParser compiles triggers (each containing {bot} and {task}) for the
// given bots. No triggers make a parser that finds nothing.
func NewParser(triggers []string, bots []Bot) (*Parser, error) {
	p := &Parser{bots: bots, byName: make(map[string]string)}
	var names []string
	for _, b := range bots {
		for _, n := range append([]string{b.ID, b.Name}, b.Names...) {
			n = strings.ToLower(strings.TrimSpace(n))
			if n == "" {
				continue
			}
			if _, dup := p.byName[n]; !dup {
				p.byName[n] = b.ID
				names = append(names, n)
			}
		}
	}
	// Longest first: the alternation is leftmost-first, so "finn shipley"
	// must be tried before "finn".
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) })
	var alts []string
	for _, n := range names {
		alts = append(alts, regexp.QuoteMeta(n))
	}
	alts = append(alts, namePattern)
	botGroup := `(?P<bot>@?(?:` + strings.Join(alts, "|") + `))`

	for _, t := range triggers {
		re, err := compileTrigger(t, botGroup)
		if err != nil {
			return nil, err
		}
		p.patterns = append(p.patterns, re)
		p.firsts = append(p.firsts, firstRunes(t))
	}
	return p, nil
}

// firstRunes are the runes a sentence must begin with for trigger t to
// match there: the case variants of t's first rune (its pattern matches
// case-insensitively, which regexp does by unicode.SimpleFold's orbits),
// or nil when t begins with a placeholder, a space or invalid UTF-8.
// Find checks them before running the pattern: most messages start with
// none of them, and the check is a fraction of a regexp's run.
func firstRunes(t string) []rune {
	if strings.HasPrefix(t, "{bot}") || strings.HasPrefix(t, "{task}") {
		return nil
	}
	r, _ := utf8.DecodeRuneInString(t)
	if r == utf8.RuneError || unicode.IsSpace(r) {
		return nil
	}
	orbit := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		orbit = append(orbit, f)
	}
	return orbit
}

// compileTrigger turns "tell {bot} to {task}" into an anchored,
// case-insensitive regexp. Spaces in the phrase match any run of spaces.
func compileTrigger(t, botGroup string) (*regexp.Regexp, error) {
	bi, ti := strings.Index(t, "{bot}"), strings.Index(t, "{task}")
	if bi < 0 || ti < 0 {
		return nil, fmt.Errorf("delegation: trigger %q needs {bot} and {task}", t)
	}
	var sb strings.Builder
	sb.WriteString(`(?is)^`)
	rest := t
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, "{bot}"):
			sb.WriteString(botGroup)
			// A name ends at a word boundary.
			sb.WriteString(`(?:\b|$)`)
			rest = rest[len("{bot}"):]
		case strings.HasPrefix(rest, "{task}"):
			rest = rest[len("{task}"):]
			if strings.TrimSpace(rest) == "" {
				sb.WriteString(`(?P<task>\S.*)`)
			} else {
				sb.WriteString(`(?P<task>\S.*?)`)
			}
		default:
			r, size := utf8.DecodeRuneInString(rest)
			if unicode.IsSpace(r) {
				sb.WriteString(`\s+`)
				for rest = rest[size:]; rest != ""; {
					r, size = utf8.DecodeRuneInString(rest)
					if !unicode.IsSpace(r) {
						break
					}
					rest = rest[size:]
				}
				continue
			}
			sb.WriteString(regexp.QuoteMeta(string(r)))
			rest = rest[size:]
		}
	}
	return regexp.Compile(sb.String())
}

// Find returns the triggers in text: at its start or at the start of a
// sentence, in order. A task runs to the next trigger or the end of text.
// A name that is neither a known bot, '@'-prefixed, nor close to a bot's
// name is not a trigger ("tell me to relax" is an ordinary message).
func (p *Parser) Find(text string) []Match {
	var out []Match
	for _, start := range sentenceStarts(text) {
		if len(out) > 0 && start < out[len(out)-1].taskStart() {
			continue
		}
		m, ok := p.matchAt(text, start)
		if !ok {
			continue
		}
		if n := len(out); n > 0 {
			out[n-1].cut(text, start)
		}
		out = append(out, m)
	}
	return out
}

// taskStart is where the task begins (End minus the task's length).
func (m Match) taskStart() int { return m.End - len(m.Task) }

// cut ends m's task where the next trigger starts.
func (m *Match) cut(text string, next int) {
	if next < m.End {
		m.Task = cleanTask(text[m.taskStart():next])
		m.End = next
	}
}

func (p *Parser) matchAt(text string, start int) (Match, bool) {
	for i, re := range p.patterns {
		if f := p.firsts[i]; f != nil {
			if r, _ := utf8.DecodeRuneInString(text[start:]); !slices.Contains(f, r) {
				continue
			}
		}
		sub := re.FindStringSubmatchIndex(text[start:])
		if sub == nil {
			continue
		}
		bi, ti := re.SubexpIndex("bot"), re.SubexpIndex("task")
		written := text[start+sub[2*bi] : start+sub[2*bi+1]]
		m := Match{Start: start, End: start + sub[1]}
		m.Written, m.At = strings.CutPrefix(written, "@")
		m.Task = cleanTask(text[start+sub[2*ti] : start+sub[2*ti+1]])
		m.End = start + sub[2*ti] + len(m.Task)
		if m.Task == "" {
			continue
		}
		if id, ok := p.byName[strings.ToLower(m.Written)]; ok {
			m.Bot = id
			return m, true
		}
		m.Suggest = p.closest(m.Written)
		if m.At || m.Suggest != "" {
			return m, true
		}
	}
	return Match{}, false
}

// cleanTask trims spaces and a final full stop or exclamation mark.
func cleanTask(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, ".!")
	return strings.TrimSpace(s)
}

// sentenceStarts lists byte offsets where a sentence may start: the start
// of text, and after '.', '!', '?', ';' or a newline followed by space.
func sentenceStarts(text string) []int {
	starts := []int{skipSpace(text, 0)}
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '.', '!', '?', ';':
			if i+1 < len(text) && (text[i+1] == ' ' || text[i+1] == '\n' || text[i+1] == '\t') {
				starts = append(starts, skipSpace(text, i+1))
			}
		case '\n':
			starts = append(starts, skipSpace(text, i+1))
		}
	}
	slices.Sort(starts)
	return slices.Compact(starts)
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}
