// Package prompt assembles what a model-backed brain sends for one turn:
// a system part made of titled blocks in a fixed order (the bot's
// persona, the chat, the team it may hand work to, the shared findings
// and the shared context of the turn's space, the insights and gossip
// memories other bots left about the person, context the gateway
// injects, the group's recent talk, a delegated task and its outputs)
// and the session's recent history as role-tagged messages, ending with
// the new message.
//
// Every block is rendered as
//
//	=== TITLE ===
//	body
//
// so a model can tell them apart, and later features arrive as new
// brains.Block values in Turn.Context without any change here. The
// shared-world blocks are the exceptions: SPEC §10.2, §10.4, §10.5 and
// §10.7 fix their formats, headings included ("SHARED FINDINGS (newest
// last)", then "1. [Bot] severity: text" a line; "SHARED CONTEXT", then
// a line each of events, entities, facts and the artifact chain;
// "[INSIGHTS FROM OTHER CHARACTERS]", then "- Bot noticed: text" a
// line; "[MEMORIES FROM OTHER CHARACTERS]", then "- Bot told you: text"
// a line), which are kept as they are. Build is pure: the same Turn and
// Options give the same Prompt, byte for byte, which the golden files in
// testdata pin down.
package prompt

import (
	"github.com/switchboard-chat/switchboard/brains"
)

// The roles of a Message, as chat-completion APIs name them.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Options tunes Build for one brain.
type Options struct {
	// ContextMessages is the most history messages kept, newest first;
	// 0 keeps all the turn carries (the gateway already windows it).
	ContextMessages int
	// TokenBudget is the most tokens the whole prompt may take, estimated
	// with EstimateTokens; history is dropped oldest first to fit. The
	// system part and the new message are never dropped, so a prompt may
	// exceed a budget they alone exceed. 0 means no budget.
	TokenBudget int
	// Workdir says the brain runs in a working directory: input artifacts
	// are files there, the artifact chain's outputs are files under
	// ArtifactsDir, and expected outputs are to be written there.
	// Without it, the contents of text inputs are put in the prompt.
	Workdir bool
	// DelegateTool says the brain offers the model a delegate(bot, task)
	// tool, which the team block then mentions.
	DelegateTool bool
}

// Message is one chat message of a Prompt.
type Message struct {
	// Role is RoleUser, RoleAssistant or RoleSystem.
	Role string
	// Name is the speaker's display name when known. Chat APIs do not
	// need it; Text uses it to label lines.
	Name    string
	Content string
}

// Prompt is an assembled prompt.
type Prompt struct {
	// System is the system message: the rendered blocks, in order.
	System string
	// Messages are the kept history, oldest first, then the new message
	// as the last RoleUser message. It is never empty.
	Messages []Message
}

// Build assembles the prompt of turn t. The new message is t.Text (on a
// delegated turn, the task), labelled "[Human: <name>] " in a group as
// the group's earlier messages are.
func Build(t brains.Turn, opts Options) Prompt {
	system := render(blocks(t, opts))
	last := Message{Role: RoleUser, Name: t.User.Name, Content: t.Text}
	switch {
	case t.Delegation != nil && t.Delegation.From != "":
		last.Name = t.Delegation.From
	case t.Help != nil && t.Help.From != "":
		// The question, or the answer: the other bot's words.
		last.Name = t.Help.From
	case t.Crossbot != nil:
		// Another bot's message in the group: labelled as the group's
		// bots are, never put in a person's mouth.
		last.Name = t.Crossbot.From
		last.Content = label(brains.Entry{Kind: "bot", From: t.Crossbot.From}) + " " + t.Text
	case t.Group:
		// Labelled like the group's earlier messages in History.
		last.Content = label(brains.Entry{Kind: "human", From: t.User.Name}) + " " + t.Text
	}
	history := window(messages(t), opts.ContextMessages)
	if opts.TokenBudget > 0 {
		// The system part and the new message are fixed costs.
		left := opts.TokenBudget - EstimateTokens(system) - messageTokens(last)
		history = fit(history, left)
	}
	return Prompt{System: system, Messages: append(history, last)}
}

// messages converts the turn's history to messages. Wrappers and
// delegation results are stored as system messages and stay so. Another
// bot's words are never put in this bot's mouth: they become user
// messages labelled with the speaker, as do people's in a group, where
// several may talk in one session.
func messages(t brains.Turn) []Message {
	out := make([]Message, 0, len(t.History)+1)
	for _, e := range t.History {
		m := Message{Role: role(e.Kind), Name: e.From, Content: e.Text}
		switch {
		case e.Kind == "bot" && e.From != "" && e.From != t.Bot.Name:
			m.Role, m.Content = RoleUser, label(e)+" "+e.Text
		case e.Kind == "human" && t.Group:
			m.Content = label(e) + " " + e.Text
		}
		out = append(out, m)
	}
	return out
}

// role maps an entry's kind to a message role; an unknown kind is shown
// as a system message rather than put in someone's mouth.
func role(kind string) string {
	switch kind {
	case "human":
		return RoleUser
	case "bot":
		return RoleAssistant
	}
	return RoleSystem
}
