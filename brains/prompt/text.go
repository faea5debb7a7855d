package prompt

import (
	"fmt"
	"strings"
)

// Text flattens p into one document for programs that read a single
// prompt on stdin: the system blocks, then the kept history as labelled
// lines under "=== CONVERSATION ===", then the new message under
// "=== NEW MESSAGE ===".
func (p Prompt) Text() string {
	var sb strings.Builder
	sb.WriteString(p.System)
	if len(p.Messages) == 0 {
		return sb.String()
	}
	history, last := p.Messages[:len(p.Messages)-1], p.Messages[len(p.Messages)-1]
	if len(history) > 0 {
		section(&sb, "CONVERSATION")
		sb.WriteString("Earlier messages of this conversation, oldest first:\n")
		for _, m := range history {
			sb.WriteString(line(m))
			sb.WriteByte('\n')
		}
	}
	section(&sb, "NEW MESSAGE")
	if last.Name != "" && !labelled(last.Content) {
		fmt.Fprintf(&sb, "From %s:\n", last.Name)
	}
	sb.WriteString(strings.TrimSpace(last.Content))
	sb.WriteByte('\n')
	return sb.String()
}

// section starts a block in Text, after a blank line unless first.
func section(sb *strings.Builder, title string) {
	if sb.Len() > 0 {
		s := sb.String()
		switch {
		case strings.HasSuffix(s, "\n\n"):
		case strings.HasSuffix(s, "\n"):
			sb.WriteByte('\n')
		default:
			sb.WriteString("\n\n")
		}
	}
	fmt.Fprintf(sb, "=== %s ===\n", title)
}

// line renders a history message in Text, labelled as in the group
// block. Messages already labelled in their content (another bot's, or a
// person's in a group) are not labelled twice.
func line(m Message) string {
	text := indent(m.Content)
	var l string
	switch m.Role {
	case RoleUser:
		if labelled(text) {
			return text
		}
		l = "[Human: " + m.Name + "]"
	case RoleAssistant:
		l = "[Bot: " + m.Name + "]"
		if m.Name == "" {
			l = "[You]"
		}
	default:
		l = "[System]"
		if m.Name != "" {
			l = "[System: " + m.Name + "]"
		}
	}
	return l + " " + text
}

// labelled reports whether a message's content starts with its speaker's
// label, as another bot's or a person's in a group does.
func labelled(content string) bool {
	return strings.HasPrefix(content, "[Human: ") || strings.HasPrefix(content, "[Bot: ")
}
