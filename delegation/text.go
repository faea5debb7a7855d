package delegation

import (
	"fmt"
	"strings"

	"github.com/switchboard-chat/switchboard/chat"
)

// Line is one message of recent context shown in a wrapper.
type Line struct {
	// Human is true for a person's message, false for a bot's.
	Human bool
	Name  string
	Text  string
}

// Wrapper is the message the target bot's session receives for a task
// (SPEC §5 step 2).
func Wrapper(fromName, userName, task string, context []Line) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "DELEGATED TASK FROM %s\n", strings.ToUpper(fromName))
	fmt.Fprintf(&sb, "User: %s\n", userName)
	fmt.Fprintf(&sb, "Task: %s\n", task)
	if len(context) > 0 {
		fmt.Fprintf(&sb, "\nRecent context from %s conversation:\n", fromName)
		for _, l := range context {
			kind := "Bot"
			if l.Human {
				kind = "Human"
			}
			fmt.Fprintf(&sb, "- [%s: %s] %s\n", kind, l.Name, oneLine(l.Text))
		}
	}
	sb.WriteString("\nPlease complete this task and respond directly.")
	return sb.String()
}

// HelpWrapper is the message the helper's session receives for a help
// request (SPEC §10.3).
func HelpWrapper(fromName, userName, question string) string {
	return fmt.Sprintf("HELP REQUEST FROM %s\nUser: %s\nQuestion: %s\n\nAnswer %s; your answer is not shown to the user.",
		strings.ToUpper(fromName), userName, question, fromName)
}

// HelpCallback is the system message the asking bot's session receives
// with the helper's answer; the asking bot then gets a turn on it.
func HelpCallback(toID, question, answer string) string {
	return fmt.Sprintf("[Bot @%s answered] Question: %s Answer: %s", toID, question, answer)
}

// HelpFailedCallback is the system message for a help request that
// failed.
func HelpFailedCallback(toID, question, reason string) string {
	return fmt.Sprintf("[Bot @%s failed to answer] Question: %s Error: %s", toID, question, reason)
}

// Callback is the system message the asking bot's session receives when
// the target finishes (SPEC §5 step 4).
//
// The files the hand-off produced are listed with their sizes and
// hashes, so the asking bot can tell them apart and check them (SPEC
// §10.7): "[Bot @coder completed] Task: … Outputs: competitors.json
// (2048 bytes, sha256:…) Result: …".
func Callback(toID, task string, outputs []chat.Artifact, result string) string {
	if len(outputs) == 0 {
		return fmt.Sprintf("[Bot @%s completed] Task: %s Result: %s", toID, task, result)
	}
	files := make([]string, len(outputs))
	for i, a := range outputs {
		files[i] = fmt.Sprintf("%s (%d bytes, sha256:%s)", a.Name, a.Size, a.SHA256)
	}
	return fmt.Sprintf("[Bot @%s completed] Task: %s Outputs: %s Result: %s", toID, task, strings.Join(files, ", "), result)
}

// FailedCallback is the system message for a hand-off that failed.
func FailedCallback(toID, task, reason string) string {
	return fmt.Sprintf("[Bot @%s failed] Task: %s Error: %s", toID, task, reason)
}

// Acknowledgement is what the asking bot says at once.
func Acknowledgement(toName, task string) string {
	return fmt.Sprintf("Handing this to %s: %s. I'll let you know when it's done.", toName, task)
}

// Finished is the notice in the chat a hand-off came from, when the
// result was delivered elsewhere: the result with its line breaks, cut
// to at most finishedRunes (the whole of it is in the target's chat).
func Finished(toName, result string) string {
	return fmt.Sprintf("%s finished: %s", toName, Excerpt(result, finishedRunes))
}

// finishedRunes bounds a Finished notice's result: a page folds it after
// a few lines, and it stays one message on every platform.
const finishedRunes = 1500

// Excerpt is s with its line breaks kept, trailing spaces and runs of
// blank lines dropped, cut to at most n runes at a line or word
// boundary when one is near, with "…" marking the cut.
func Excerpt(s string, n int) string {
	var lines []string
	blank := false
	for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		line = strings.TrimRight(line, " \t\r")
		if line == "" {
			blank = true
			continue
		}
		if blank && len(lines) > 0 {
			lines = append(lines, "")
		}
		blank = false
		lines = append(lines, line)
	}
	r := []rune(strings.Join(lines, "\n"))
	if len(r) <= n {
		return string(r)
	}
	cut := string(r[:n-1])
	// Back to the last line or word boundary in the final fifth.
	if i := strings.LastIndexAny(cut, "\n "); i >= len(cut)*4/5 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " \n") + "…"
}

// Unknown is the reply to a hand-off naming no bot.
func Unknown(written, suggestName string) string {
	if suggestName == "" {
		return fmt.Sprintf("I don't know a bot called %s.", written)
	}
	return fmt.Sprintf("I don't know a bot called %s — did you mean %s?", written, suggestName)
}

// Summary is the first line of s, cut to at most n runes.
func Summary(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
