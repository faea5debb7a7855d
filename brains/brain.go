// Package brains defines the contract between the gateway and whatever
// produces a bot's replies: a scripted rule set, an agent CLI, or a model
// server. The gateway builds a Turn for each message that needs an answer
// and hands it to the bot's Brain; implementations live in sub-packages
// (script, exec, openai) and know nothing of platforms or storage.
package brains

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Brain turns one Turn into one Reply.
//
// Reply is called for at most one turn of a given session at a time, but
// turns of different sessions run concurrently, so implementations must be
// safe for concurrent use. Reply must return when ctx ends; the gateway
// bounds every turn with the brain's timeout through ctx. An error means
// the turn produced nothing usable: the gateway apologises to the user on
// the bot's behalf and logs the error, so the error text may be detailed
// but must not contain secrets.
//
// The turn's slices (History, GroupHistory, Team, Context, Findings,
// Insights, Memories, Shared's, and the delegation's) belong to the gateway, which may share them between
// turns: a brain reads them and does not write into them, and copies what
// it keeps past its return.
type Brain interface {
	Reply(ctx context.Context, turn Turn) (Reply, error)
}

// Turn is everything a brain may use to answer one message.
type Turn struct {
	// SessionID is the gateway's stable ID for the (bot, scope) session.
	SessionID string
	// ResumeID is the brain's own session handle stored after an earlier
	// turn (Reply.ResumeID); empty on a session's first turn.
	ResumeID string
	// Bot is the bot that answers.
	Bot Bot
	// User is the person the turn answers, resolved through identity.
	User User
	// Platform is where the message came from: web, telegram, discord,
	// cli or api.
	Platform string
	// Group is true when the message was said in a group chat.
	Group bool
	// Text is the message the bot answers, with any address to the bot
	// stripped. On a delegated turn it is the task.
	Text string
	// History holds the session's earlier messages, oldest first, not
	// including Text.
	History []Entry
	// GroupHistory holds recent messages of the group chat, oldest first,
	// when the turn happens in a group.
	GroupHistory []Entry
	// Delegation is set when the turn is a task handed over by another bot.
	Delegation *Delegation
	// Help is set when the turn answers another bot's help request, or
	// is the asking bot's follow-up to the answer (SPEC §10.3).
	Help *Help
	// Crossbot is set when the turn answers another bot's message in a
	// group: a step of a bot-to-bot chain (SPEC §10.6). Text is then
	// that bot's message.
	Crossbot *Crossbot
	// Team lists the bots this bot may hand work to.
	Team []Mate
	// Context holds extra blocks the gateway injects into the prompt
	// (insights, memories, …), each rendered under its title.
	Context []Block
	// Findings are the newest findings of the turn's space that its bot
	// may see (SPEC §10.2), oldest first: shown to script templates as
	// .Findings and to models as the SHARED FINDINGS block.
	Findings []Finding
	// Insights are what other bots noticed about the turn's person that
	// relates to its message (SPEC §10.4), oldest first: shown to script
	// templates as .Insights and to models as the [INSIGHTS FROM OTHER
	// CHARACTERS] block.
	Insights []Insight
	// Memories are the newest gossip memories the bot has of the
	// person (SPEC §10.5), oldest first: shown to script templates as
	// .Memories and to models as the MEMORIES FROM OTHER CHARACTERS
	// block.
	Memories []Memory
	// Shared is the shared context of the turn's space (SPEC §10.7):
	// events, entities, facts and the artifact chain, within the
	// shared.context limits; nil when the space holds none. Shown to
	// script templates as .Context and to models as the SHARED CONTEXT
	// block.
	Shared *SharedContext
	// Files reads the content of the artifacts Shared's chain names
	// (its steps' inputs and outputs); nil when there are none. An
	// exec brain writes the outputs under artifacts/ in the working
	// directory.
	Files Files
	// Actions are the actions the turn may take, bound to its bot,
	// person and space; nil when it may take none (a public bot).
	Actions Actions
}

// SharedContext is a space's shared context as a turn sees it, each
// list oldest first.
type SharedContext struct {
	Events   []ContextEvent
	Entities []ContextEntity
	Facts    []ContextFact
	Chain    []ChainStep
}

// ContextEvent is an entry of the space's timeline.
type ContextEvent struct {
	// Bot is the adding bot's display name, BotID its ID.
	Bot, BotID string
	Text       string
	Time       time.Time
}

// ContextEntity is a named thing and what the bots know of it.
type ContextEntity struct {
	Name string
	// Attributes is a JSON object, its keys sorted:
	// {"pricing":"$99/month"}.
	Attributes string
}

// ContextFact is a statement about a subject.
type ContextFact struct {
	Subject, Predicate, Object string
	// Confidence is from 0 to 1.
	Confidence float64
	// Bot is the stating bot's display name, BotID its ID.
	Bot, BotID string
}

// ChainStep is a hand-off that ended in the space: which bot produced
// which files from which inputs.
type ChainStep struct {
	// Step numbers the space's steps from 1.
	Step int
	// Producer is the working bot's display name, ProducerID its ID.
	Producer, ProducerID string
	Task                 string
	// Inputs and Outputs name the artifacts (no content: read it
	// through Turn.Files).
	Inputs, Outputs []Artifact
	// Status is done or failed.
	Status string
}

// Files reads the content of the artifacts a turn's shared context
// names; any other ID is an error.
type Files interface {
	ReadFile(ctx context.Context, id string) ([]byte, error)
}

// Finding is one finding of the shared board as a turn sees it.
type Finding struct {
	// Bot is the author's display name, BotID its ID.
	Bot, BotID string
	// Severity is low, medium, high or critical.
	Severity string
	Text     string
	// Stage is the stage it was posted in, "" for none.
	Stage string
}

// Insight is one insight another bot left about the turn's person, as
// a turn sees it.
type Insight struct {
	// Bot is the writing bot's display name, BotID its ID.
	Bot, BotID string
	// Kind is epiphany, diary, dream or observation.
	Kind string
	Text string
	// Confidence is from 0 to 1.
	Confidence float64
}

// Memory is news about the person another bot was told, as gossip
// brought it (SPEC §10.5).
type Memory struct {
	// From is the display name of the bot that was told.
	From string
	// Text is the news: "Bryan: I got a new job at a tech company".
	Text string
}

// Mate is a bot the answering bot may hand work to.
type Mate struct {
	ID   string
	Name string
	// Summary is the first line of the mate's persona.
	Summary string
}

// Block is a titled piece of injected context.
type Block struct {
	Title string
	Body  string
}

// Bot describes the answering bot.
type Bot struct {
	ID      string
	Name    string
	Persona string
}

// User describes the person a turn answers.
type User struct {
	// ID is the master user ID, or the platform ID for unlisted users and
	// public bots.
	ID   string
	Name string
}

// Entry is one message of history.
type Entry struct {
	// Kind is "human", "bot" or "system".
	Kind string
	// From is the display name of the speaker.
	From string
	Text string
	Time time.Time
}

// Delegation describes a task handed to the bot by another bot.
type Delegation struct {
	ID     string
	From   string // the delegating bot's display name
	FromID string // the delegating bot's ID
	Task   string
	Depth  int
	Inputs []Artifact
	// Wrapper is the hand-off message as the gateway framed it: who asks,
	// for whom, the task and recent context (SPEC §5).
	Wrapper string
	// Expected are the outputs the delegation requires, by name.
	Expected []Expected
}

// Help describes a help request (SPEC §10.3) to the two turns it makes.
// On the helper's turn it is the question, From naming the bot that asks,
// and Turn.Text is the question; the answer is never shown to the person.
// On the asking bot's follow-up turn From names the bot that answered,
// Answer is set, and Turn.Text is the answer; that turn's reply goes to
// the chat the request came from.
type Help struct {
	ID string
	// From and FromID name the other bot of the request: the asking bot
	// on the helper's turn, the helper on the follow-up.
	From     string
	FromID   string
	Question string
	// Answer is the helper's answer, on the follow-up turn only.
	Answer string
	// Wrapper is the request as the gateway framed it for the helper
	// (HELP REQUEST FROM …), on the helper's turn only.
	Wrapper string
}

// Answered reports whether h is the asking bot's follow-up.
func (h *Help) Answered() bool { return h != nil && h.Answer != "" }

// Crossbot describes a step of a bot-to-bot chain in a group chat.
type Crossbot struct {
	// Length is the chain's steps, this one included.
	Length int
	// Closing is set on the chain's last step: the bot should close the
	// conversation, as no bot will answer it.
	Closing bool
	// From and FromID name the bot whose message the turn answers.
	From   string
	FromID string
}

// ClosingSentence is what a model brain is told on a chain's closing
// turn (SPEC §10.6).
const ClosingSentence = "This is the last message in this conversation chain; close it naturally."

// Expected is an output a delegated task must produce.
type Expected struct {
	Name      string
	MediaType string
	// Schema, when set, is a JSON Schema the output's content must pass
	// (asked for by a delegate action; a delegated turn is not shown it).
	Schema json.RawMessage
}

// Reply is what a brain says back.
type Reply struct {
	Text string
	// Artifacts are files the turn produced, stored with the reply.
	Artifacts []Artifact
	// ResumeID, when not empty, replaces the session's stored resume
	// handle for the next turn.
	ResumeID string
}

// Handoff asks the gateway to hand a task to another bot: what a turn's
// delegate actions collect (Turn.Actions). The gateway routes them
// through the same router and limits as triggers typed in the reply.
type Handoff struct {
	Bot  string
	Task string
	// Expected are the outputs the task must produce.
	Expected []Expected
	// Inputs name files the task takes: the file names of artifacts
	// the turn produced or was handed, or of its space's artifact
	// chain (SPEC §10.7), or artifact IDs.
	Inputs []string
}

// Artifact is a named piece of content a turn consumed or produced.
type Artifact struct {
	ID        string
	Name      string
	MediaType string
	Content   []byte
}

// ErrEmptyReply is returned by a brain that produced no text and no
// artifacts.
var ErrEmptyReply = errors.New("brain produced an empty reply")
