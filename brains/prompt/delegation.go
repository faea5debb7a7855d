package prompt

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/brains"
)

// MaxInlineInput is the most bytes of one text input put in a prompt when
// the brain has no working directory; the rest is cut with a note.
const MaxInlineInput = 32 << 10

// task is a delegated task as the gateway framed it; a turn without a
// wrapper (an API caller's brain test, say) gets a minimal one.
func task(d *brains.Delegation) string {
	if w := strings.TrimSpace(d.Wrapper); w != "" {
		return w
	}
	return fmt.Sprintf("DELEGATED TASK FROM %s\nTask: %s", strings.ToUpper(d.From), d.Task)
}

// inputs lists the artifacts handed over with a task. With a working
// directory they are files there; without one, text contents are shown.
func inputs(arts []brains.Artifact, workdir bool) string {
	if len(arts) == 0 {
		return ""
	}
	var sb strings.Builder
	if workdir {
		sb.WriteString("These input files are in your current working directory:\n")
		for _, a := range arts {
			fmt.Fprintf(&sb, "- %s (%s, %d bytes)\n", a.Name, mediaType(a.MediaType), len(a.Content))
		}
		return sb.String()
	}
	sb.WriteString("These inputs come with the task:\n")
	for _, a := range arts {
		fmt.Fprintf(&sb, "\n--- %s (%s, %d bytes) ---\n", a.Name, mediaType(a.MediaType), len(a.Content))
		if !utf8.Valid(a.Content) {
			sb.WriteString("(binary content, not shown)\n")
		} else {
			sb.WriteString(cut(string(a.Content), MaxInlineInput))
			sb.WriteString("\n")
		}
		fmt.Fprintf(&sb, "--- end of %s ---\n", a.Name)
	}
	return sb.String()
}

// expected lists the outputs a task must produce.
func expected(exp []brains.Expected, workdir bool) string {
	if len(exp) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("This task must produce these outputs:\n")
	for _, e := range exp {
		fmt.Fprintf(&sb, "- %s (%s)\n", e.Name, mediaType(e.MediaType))
	}
	if workdir {
		sb.WriteString("Write each one as a file of exactly that name in your current working directory.")
	} else {
		sb.WriteString("Give each one in your answer under its name.")
	}
	return sb.String()
}

// mediaType names an unset media type.
func mediaType(t string) string {
	if t == "" {
		return "any type"
	}
	return t
}

// cut shortens s to at most n bytes on a rune boundary, saying so.
func cut(s string, n int) string {
	if len(s) <= n {
		return strings.TrimRight(s, "\n")
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return fmt.Sprintf("%s\n(… %d more bytes not shown)", s[:i], len(s)-i)
}
