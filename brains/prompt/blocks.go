package prompt

import (
	"fmt"
	"strings"

	"github.com/switchboard-chat/switchboard/brains"
)

// block is one titled part of the system message.
type block struct {
	title string
	body  string
	// own marks a block that carries its own heading in its body, in a
	// format SPEC §10 fixes: it is rendered as it is, without a title
	// line.
	own bool
}

// Titles of the fixed blocks, in the order they appear. The shared
// findings (Turn.Findings, under FindingsHeading), the space's shared
// context (Turn.Shared, under SharedContextHeading), the insights of
// other bots (Turn.Insights, under InsightsHeading), the gossip
// memories (Turn.Memories, under MemoriesHeading) and the injected
// context blocks (Turn.Context, under their own titles, upper-cased)
// come between TitleTeam and TitleGroup.
const (
	TitlePersona  = "PERSONA"
	TitleChat     = "CHAT"
	TitleTeam     = "TEAM"
	TitleGroup    = "GROUP CHAT"
	TitleTask     = "DELEGATED TASK"
	TitleInputs   = "INPUTS"
	TitleExpected = "EXPECTED OUTPUTS"
	TitleHelp     = "HELP REQUEST"
	TitleAnswered = "HELP ANSWERED"
)

// FindingsHeading heads the shared findings block, which SPEC §10.2
// writes as
//
//	SHARED FINDINGS (newest last)
//	1. [Matty Atlas] high: The auth module uses JWT with 24h expiry
const FindingsHeading = "SHARED FINDINGS (newest last)"

// InsightsHeading heads the insights other bots left about the person,
// which SPEC §10.4 writes as
//
//	[INSIGHTS FROM OTHER CHARACTERS]
//	- Elena noticed: User expressed excitement about new job
const InsightsHeading = "[INSIGHTS FROM OTHER CHARACTERS]"

// MemoriesHeading heads the gossip memories block, which SPEC §10.5
// writes as
//
//	[MEMORIES FROM OTHER CHARACTERS]
//	- Elena told you: Bryan: I got a new job at a tech company
const MemoriesHeading = "[MEMORIES FROM OTHER CHARACTERS]"

// blocks lists the system blocks of t in their fixed order; blocks with
// nothing to say are left out.
func blocks(t brains.Turn, opts Options) []block {
	out := []block{
		{title: TitlePersona, body: persona(t.Bot)},
		{title: TitleChat, body: chat(t)},
		{title: TitleTeam, body: team(t.Team, opts.DelegateTool)},
		sharedFindings(t.Findings),
		sharedContext(t.Shared, opts.Workdir),
		insights(t.Insights),
		memories(t.Memories),
	}
	for _, c := range t.Context {
		title := strings.ToUpper(strings.TrimSpace(c.Title))
		if title == "" {
			title = "CONTEXT"
		}
		out = append(out, block{title: title, body: c.Body})
	}
	if t.Group {
		out = append(out, block{title: TitleGroup, body: group(t.GroupHistory)})
	}
	if h := t.Help; h != nil {
		out = append(out, helpBlock(h, t.User.Name))
	}
	if d := t.Delegation; d != nil {
		out = append(out,
			block{title: TitleTask, body: task(d)},
			block{title: TitleInputs, body: inputs(d.Inputs, opts.Workdir)},
			block{title: TitleExpected, body: expected(d.Expected, opts.Workdir)},
		)
	}
	return out
}

// helpBlock is a help request as the helper sees it (the wrapper the
// gateway framed), or its answer as the asking bot sees it.
func helpBlock(h *brains.Help, user string) block {
	if h.Answered() {
		return block{title: TitleAnswered, body: fmt.Sprintf("You asked %s: %s\n%s answered: %s\n\nUse the answer to continue with %s; they have not seen it.",
			h.From, h.Question, h.From, h.Answer, user)}
	}
	if w := strings.TrimSpace(h.Wrapper); w != "" {
		return block{title: TitleHelp, body: w}
	}
	return block{title: TitleHelp, body: fmt.Sprintf("HELP REQUEST FROM %s\nQuestion: %s", strings.ToUpper(h.From), h.Question)}
}

// render joins the blocks that have a body, each under its title line.
func render(bs []block) string {
	var sb strings.Builder
	for _, b := range bs {
		body := strings.TrimSpace(b.body)
		if body == "" {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteString("\n\n")
		}
		if b.own {
			sb.WriteString(body)
			continue
		}
		fmt.Fprintf(&sb, "=== %s ===\n%s", b.title, body)
	}
	return sb.String()
}

// persona is the bot's system prompt, or a one-line stand-in when the
// configuration gives none.
func persona(b brains.Bot) string {
	if p := strings.TrimSpace(b.Persona); p != "" {
		return p
	}
	return fmt.Sprintf("You are %s.", b.Name)
}

// chat says who the bot is talking to, and where.
func chat(t brains.Turn) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Your name is %s (@%s).", t.Bot.Name, t.Bot.ID)
	switch {
	case t.Delegation != nil:
		fmt.Fprintf(&sb, " You are working on a task %s handed you on behalf of %s.", t.Delegation.From, t.User.Name)
	case t.Help.Answered():
		fmt.Fprintf(&sb, " %s answered the question you asked on behalf of %s; your reply goes to %s on %s.", t.Help.From, t.User.Name, t.User.Name, t.Platform)
	case t.Help != nil:
		fmt.Fprintf(&sb, " %s asks you for help on behalf of %s; your answer goes to %s only, never to %s.", t.Help.From, t.User.Name, t.Help.From, t.User.Name)
	case t.Crossbot != nil:
		fmt.Fprintf(&sb, " You are in a group chat on %s, answering %s, another bot, in a conversation %s started.", t.Platform, t.Crossbot.From, t.User.Name)
		if t.Crossbot.Closing {
			sb.WriteString(" " + brains.ClosingSentence)
		}
	case t.Group:
		fmt.Fprintf(&sb, " You are in a group chat on %s, answering %s.", t.Platform, t.User.Name)
	default:
		fmt.Fprintf(&sb, " You are talking with %s in a private chat on %s.", t.User.Name, t.Platform)
	}
	return sb.String()
}

// team lists the bots this bot may hand work to and how to do it.
func team(mates []brains.Mate, tool bool) string {
	if len(mates) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("You can hand work to these bots:\n")
	for _, m := range mates {
		fmt.Fprintf(&sb, "- %s (@%s)", m.Name, m.ID)
		if s := strings.TrimSpace(m.Summary); s != "" {
			fmt.Fprintf(&sb, ": %s", s)
		}
		sb.WriteByte('\n')
	}
	if tool {
		sb.WriteString("To hand work over, call the delegate tool with the bot's ID and the task. ")
		sb.WriteString("The bot answers the user itself; you will be told when it is done.")
	} else {
		sb.WriteString("To hand work over, write on a line of its own: tell <name> to <task>. ")
		sb.WriteString("The bot answers the user itself; you will be told when it is done.")
	}
	return sb.String()
}

// headed is a block in a format SPEC §10 fixes: its heading, then its
// lines; a block without lines is left out.
func headed(heading string, lines []string) block {
	if len(lines) == 0 {
		return block{}
	}
	return block{body: heading + "\n" + strings.Join(lines, "\n"), own: true}
}

// sharedFindings is the findings board of the turn's space as SPEC
// §10.2 writes it: a heading, then one numbered line a finding, oldest
// first.
func sharedFindings(fs []brains.Finding) block {
	lines := make([]string, len(fs))
	for i, f := range fs {
		lines[i] = fmt.Sprintf("%d. [%s] %s: %s", i+1, f.Bot, f.Severity, indent(f.Text))
	}
	return headed(FindingsHeading, lines)
}

// insights are the insights of other bots the turn found, as SPEC
// §10.4 writes them: a heading, then a line an insight naming the bot
// that noticed it.
func insights(ins []brains.Insight) block {
	lines := make([]string, len(ins))
	for i, in := range ins {
		lines[i] = fmt.Sprintf("- %s noticed: %s", in.Bot, indent(in.Text))
	}
	return headed(InsightsHeading, lines)
}

// memories are the gossip memories of the turn as SPEC §10.5 writes
// them: a heading, then one line a memory, oldest first.
func memories(ms []brains.Memory) block {
	lines := make([]string, len(ms))
	for i, m := range ms {
		lines[i] = fmt.Sprintf("- %s told you: %s", m.From, indent(m.Text))
	}
	return headed(MemoriesHeading, lines)
}

// group is the group chat's recent talk, one labelled line a message.
func group(entries []brains.Entry) string {
	if len(entries) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("Recent messages in this group, oldest first:\n")
	for _, e := range entries {
		fmt.Fprintf(&sb, "%s %s\n", label(e), indent(e.Text))
	}
	return sb.String()
}

// label names an entry's speaker as the hand-off wrapper does:
// "[Human: Ann]", "[Bot: Matty Atlas]", "[System]".
func label(e brains.Entry) string {
	switch e.Kind {
	case "human":
		return "[Human: " + e.From + "]"
	case "bot":
		return "[Bot: " + e.From + "]"
	}
	if e.From == "" {
		return "[System]"
	}
	return "[System: " + e.From + "]"
}

// indent keeps a multi-line message under its label.
func indent(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n  ")
}
