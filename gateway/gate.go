package gateway

import (
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/chat"
)

// address is one bot that an event asks to answer, with the text its
// brain should see.
type address struct {
	bot  *Bot
	text string
}

// addressed decides which bots answer ev (SPEC §4): in a private chat the
// chat's bot always; in a group only bots addressed by a mention, a
// leading /command or a reply to one of their messages, in the order they
// were addressed. present are the bots in a group chat.
func (g *Gateway) addressed(ctx context.Context, ev Event, roster *Roster, present []string) ([]address, error) {
	if ev.ChatType == chat.Private {
		b, ok := roster.Bot(ev.Bot)
		if !ok {
			return nil, nil
		}
		return []address{{bot: b, text: strings.TrimSpace(ev.Text)}}, nil
	}

	type hit struct {
		bot        *Bot
		start, end int // byte range to strip; start<0 when nothing to strip
	}
	var hits []hit
	add := func(b *Bot, start, end int) {
		if b == nil || !slices.Contains(present, b.ID) {
			return
		}
		hits = append(hits, hit{b, start, end})
	}
	if ev.ReplyTo != "" {
		id, ok, err := g.store.BotOfMessage(ctx, ev.Platform, ev.ChatID, ev.ReplyTo)
		if err != nil {
			return nil, err
		}
		if ok {
			b, _ := roster.Bot(id)
			add(b, -1, -1)
		}
	}
	if name, end := leadingCommand(ev.Text); name != "" {
		b, _ := roster.ByName(name)
		add(b, 0, end)
	}
	for _, m := range ev.Mentions {
		b, ok := roster.Bot(m.Bot)
		if !ok {
			b, _ = roster.ByName(m.Name)
		}
		add(b, m.Start, m.End)
	}
	if len(hits) == 0 {
		return nil, nil
	}

	// Strip every address to an answering bot; keep mentions of others.
	var cuts [][2]int
	for _, h := range hits {
		if h.start >= 0 {
			cuts = append(cuts, [2]int{h.start, h.end})
		}
	}
	text := stripRanges(ev.Text, cuts)

	var out []address
	for _, h := range hits {
		if !slices.ContainsFunc(out, func(a address) bool { return a.bot.ID == h.bot.ID }) {
			out = append(out, address{bot: h.bot, text: text})
		}
	}
	return out, nil
}

// leadingCommand parses "/name" or "/name@username" at the start of text
// and returns the name and the end of the token.
func leadingCommand(text string) (name string, end int) {
	if !strings.HasPrefix(text, "/") {
		return "", 0
	}
	end = 1
	for end < len(text) {
		r, size := utf8.DecodeRuneInString(text[end:])
		if !isNameRune(r) && r != '@' {
			break
		}
		end += size
	}
	name, _, _ = strings.Cut(text[1:end], "@")
	return name, end
}

// stripRanges removes the byte ranges from text and tidies the spaces and
// punctuation the removal leaves behind ("@finn, build it" → "build it").
func stripRanges(text string, cuts [][2]int) string {
	slices.SortFunc(cuts, func(a, b [2]int) int { return a[0] - b[0] })
	var sb strings.Builder
	pos := 0
	for _, c := range cuts {
		if c[0] < pos {
			continue // overlapping ranges: the first wins
		}
		sb.WriteString(text[pos:c[0]])
		pos = c[1]
		// "@finn, do it" and "@finn: do it" lose the punctuation too.
		if pos < len(text) && (text[pos] == ',' || text[pos] == ':') {
			pos++
		}
	}
	sb.WriteString(text[pos:])
	out := strings.Join(strings.Fields(sb.String()), " ")
	out = strings.TrimLeft(out, ",:;")
	return strings.TrimSpace(out)
}

// ParseMentions finds "@name" tokens in text, where '@' starts the text or
// follows a character that cannot be part of a name. It is used by
// platforms whose messages carry no mention entities (the web widget, the
// CLI).
func ParseMentions(text string) []Mention {
	var out []Mention
	prev := ' '
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == '@' && !isNameRune(prev) && prev != '@' {
			j := i + size
			for j < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[j:])
				if !isNameRune(r2) {
					break
				}
				j += s2
			}
			// A name may not end in '-' or '.' ("@finn." is "@finn").
			for j > i+size && strings.ContainsRune("-.", rune(text[j-1])) {
				j--
			}
			if j > i+size {
				out = append(out, Mention{Start: i, End: j, Name: text[i+size : j]})
				prev = 'x'
				i = j
				continue
			}
		}
		prev = r
		i += size
	}
	return out
}

func isNameRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-' || r == '.'
}
