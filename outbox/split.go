package outbox

import "strings"

// MessageLimiter is implemented by platforms that cap a message's length.
// The outbox splits longer texts and sends them as several messages.
type MessageLimiter interface {
	// MaxMessageLength is the limit in UTF-16 code units (Telegram counts
	// those; for platforms that count characters it is conservative).
	MaxMessageLength() int
}

// SplitText cuts text into parts of at most limit UTF-16 code units,
// preferring to cut between paragraphs, then lines, then words, and never
// inside a character. Parts are trimmed of the spaces at the cut.
func SplitText(text string, limit int) []string {
	if limit <= 0 || utf16Len(text) <= limit {
		return []string{text}
	}
	var parts []string
	rest := text
	for utf16Len(rest) > limit {
		window := prefixUnits(rest, limit)
		cut := lastCut(window)
		part := strings.TrimRight(rest[:cut], " \t\n")
		if part == "" {
			// The text starts with a run of separators longer than the
			// limit: cut the window as it is.
			cut = len(window)
			part = window
		}
		parts = append(parts, part)
		rest = strings.TrimLeft(rest[cut:], " \t\n")
	}
	if rest != "" {
		parts = append(parts, rest)
	}
	return parts
}

// lastCut is the best place to cut window: after the last paragraph
// break, else line break, else space, else the whole window.
func lastCut(window string) int {
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(window, sep); i > 0 {
			return i + len(sep)
		}
	}
	return len(window)
}

// prefixUnits is the longest prefix of s within limit UTF-16 units.
func prefixUnits(s string, limit int) string {
	units := 0
	for i, r := range s {
		n := 1
		if r >= 0x10000 {
			n = 2
		}
		if units+n > limit {
			return s[:i]
		}
		units += n
	}
	return s
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
