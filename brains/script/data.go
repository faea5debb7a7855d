package script

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/switchboard-chat/switchboard/brains"
)

// This file holds what a template sees. The types are unexported so the
// template surface is exactly the documented one (SPEC §6) and not
// whatever brains.Turn grows into; their fields and methods are exported
// only because text/template can reach nothing else.

// data is the dot of every template a rule executes.
type data struct {
	// Text is the message; on a delegated turn, the task.
	Text     string
	User     person
	Bot      person
	Platform string
	Group    bool
	History  []entry
	// Findings are the shared findings the bot may see (SPEC §10.2),
	// oldest first.
	Findings []finding
	// Insights are what other bots noticed about the person that
	// relates to the message (SPEC §10.4), oldest first.
	Insights []insight
	// Memories are the gossip memories the bot has of the person (SPEC
	// §10.5), oldest first.
	Memories []memory
	// Context is the shared context of the turn's space (SPEC §10.7),
	// always there: its lists are empty when the space holds nothing,
	// so {{range .Context.Facts}} needs no guard.
	Context sharedContext
	// Delegation is nil unless the turn was handed over by another bot,
	// so {{if .Delegation}} and {{with .Delegation}} test for it.
	Delegation *delegation
	// Help is nil unless the turn answers a help request or is the
	// asking bot's follow-up to its answer (SPEC §10.3).
	Help *help
	// Crossbot is nil unless the turn answers another bot's message in a
	// group, as a step of a bot-to-bot chain (SPEC §10.6).
	Crossbot *crossbot
	// Match holds the winning rule's submatches, index 0 the whole match;
	// it is empty for the default reply.
	Match []string
}

// person is a user or a bot: .ID and .Name.
type person struct {
	ID   string
	Name string
}

// entry is one earlier message of the session: .Kind (human, bot or
// system), .From, .Text and .Time. The template reads the turn's own
// slice, so it is brains.Entry itself.
type entry = brains.Entry

// finding is one shared finding: .Bot (the author's name), .BotID,
// .Severity, .Text and .Stage, as brains.Finding has them.
type finding = brains.Finding

// insight is one insight another bot left about the person: .Bot (its
// name), .BotID, .Kind, .Text and .Confidence, as brains.Insight has
// them.
type insight = brains.Insight

// memory is one gossip memory: .From (the name of the bot that was
// told) and .Text, as brains.Memory has them.
type memory = brains.Memory

// sharedContext is the shared context of the turn's space, each list
// oldest first.
type sharedContext struct {
	Events   []contextEvent
	Entities []contextEntity
	Facts    []contextFact
	Chain    []chainStep
}

// contextEvent is an entry of the space's timeline: .Bot (the adding
// bot's name), .BotID, .Text and .Time, as brains.ContextEvent has them.
type contextEvent = brains.ContextEvent

// contextEntity is a named thing: .Name and .Attributes, a JSON object
// as text ({"pricing":"$99/month"}), as brains.ContextEntity has them.
type contextEntity = brains.ContextEntity

// contextFact is a statement: .Subject, .Predicate, .Object,
// .Confidence (0 to 1), .Bot (the stating bot's name) and .BotID, as
// brains.ContextFact has them.
type contextFact = brains.ContextFact

// chainStep is a hand-off that ended in the space. Inputs and Outputs
// are file names: a template prints them, and the contents are the
// exec brain's to hand over.
type chainStep struct {
	// Step numbers the space's steps from 1.
	Step int
	// Producer is the working bot's display name, ProducerID its ID.
	Producer, ProducerID string
	Task                 string
	Inputs, Outputs      []string
	// Status is done or failed.
	Status string
}

// newSharedContext is c as templates see it; nil gives empty lists.
func newSharedContext(c *brains.SharedContext) sharedContext {
	if c.Empty() {
		return sharedContext{}
	}
	sc := sharedContext{Events: c.Events, Entities: c.Entities, Facts: c.Facts}
	for _, s := range c.Chain {
		sc.Chain = append(sc.Chain, chainStep{
			Step: s.Step, Producer: s.Producer, ProducerID: s.ProducerID, Task: s.Task,
			Inputs: artifactNames(s.Inputs), Outputs: artifactNames(s.Outputs), Status: s.Status,
		})
	}
	return sc
}

// artifactNames lists the artifacts' names.
func artifactNames(arts []brains.Artifact) []string {
	var names []string
	for _, a := range arts {
		names = append(names, a.Name)
	}
	return names
}

// input is an artifact handed over with a delegation; Content is text so
// templates can print it.
type input struct {
	ID        string
	Name      string
	MediaType string
	Content   string
}

// errNotDelegated is what a template gets for reaching into .Delegation on
// a turn that is not delegated.
var errNotDelegated = errors.New("the turn is not delegated: .Delegation is nil; guard with {{if .Delegation}} or {{with .Delegation}}")

// delegation exposes the hand-off through methods rather than fields.
// text/template calls a method even on a nil pointer receiver, so
// {{.Delegation.Task}} on an ordinary turn fails with errNotDelegated
// instead of text/template's terse "nil pointer evaluating" message,
// while {{if .Delegation}} still sees nil and is false.
type delegation struct {
	d      brains.Delegation
	inputs []input
}

// ID is the delegation record's ID.
func (d *delegation) ID() (string, error) {
	if d == nil {
		return "", errNotDelegated
	}
	return d.d.ID, nil
}

// From is the delegating bot's display name.
func (d *delegation) From() (string, error) {
	if d == nil {
		return "", errNotDelegated
	}
	return d.d.From, nil
}

// FromID is the delegating bot's ID.
func (d *delegation) FromID() (string, error) {
	if d == nil {
		return "", errNotDelegated
	}
	return d.d.FromID, nil
}

// Task is the task the delegating bot handed over.
func (d *delegation) Task() (string, error) {
	if d == nil {
		return "", errNotDelegated
	}
	return d.d.Task, nil
}

// Depth is how many hand-offs led to this turn, 1 for a direct one.
func (d *delegation) Depth() (int, error) {
	if d == nil {
		return 0, errNotDelegated
	}
	return d.d.Depth, nil
}

// Inputs are the artifacts handed over with the task.
func (d *delegation) Inputs() ([]input, error) {
	if d == nil {
		return nil, errNotDelegated
	}
	return d.inputs, nil
}

// errNotHelp is what a template gets for reaching into .Help on a turn
// that neither answers nor follows up a help request.
var errNotHelp = errors.New("the turn is no help request: .Help is nil; guard with {{if .Help}} or {{with .Help}}")

// help exposes a help request through methods, as delegation does: on
// the helper's turn .From is the bot that asks and .Answer is empty; on
// the asking bot's follow-up .From is the bot that answered.
type help struct{ h brains.Help }

// From is the other bot's display name.
func (h *help) From() (string, error) {
	if h == nil {
		return "", errNotHelp
	}
	return h.h.From, nil
}

// FromID is the other bot's ID.
func (h *help) FromID() (string, error) {
	if h == nil {
		return "", errNotHelp
	}
	return h.h.FromID, nil
}

// Question is what the asking bot asked.
func (h *help) Question() (string, error) {
	if h == nil {
		return "", errNotHelp
	}
	return h.h.Question, nil
}

// Answer is the helper's answer, empty on the helper's own turn.
func (h *help) Answer() (string, error) {
	if h == nil {
		return "", errNotHelp
	}
	return h.h.Answer, nil
}

// errNotCrossbot is what a template gets for reaching into .Crossbot on
// a turn that is no step of a bot-to-bot chain.
var errNotCrossbot = errors.New("the turn is no bot-to-bot chain step: .Crossbot is nil; guard with {{if .Crossbot}} or {{with .Crossbot}}")

// crossbot exposes a chain step through methods, as delegation does:
// .Length is the chain's steps, this one included, and .Closing is true
// on the step that reaches max_chain.
type crossbot struct{ c brains.Crossbot }

// Length is the chain's steps, this one included.
func (c *crossbot) Length() (int, error) {
	if c == nil {
		return 0, errNotCrossbot
	}
	return c.c.Length, nil
}

// Closing reports whether this is the chain's last step.
func (c *crossbot) Closing() (bool, error) {
	if c == nil {
		return false, errNotCrossbot
	}
	return c.c.Closing, nil
}

// newData builds a template's dot from a turn and the winning rule's
// submatches.
func newData(t brains.Turn, match []string) *data {
	dt := &data{
		Text:     turnText(t),
		User:     person{ID: t.User.ID, Name: t.User.Name},
		Bot:      person{ID: t.Bot.ID, Name: t.Bot.Name},
		Platform: t.Platform,
		Group:    t.Group,
		Context:  newSharedContext(t.Shared),
		Match:    match,
	}
	if len(t.History) > 0 {
		dt.History = t.History
	}
	if len(t.Findings) > 0 {
		dt.Findings = t.Findings
	}
	if len(t.Insights) > 0 {
		dt.Insights = t.Insights
	}
	if len(t.Memories) > 0 {
		dt.Memories = t.Memories
	}
	if t.Delegation != nil {
		dl := &delegation{d: *t.Delegation}
		for _, a := range t.Delegation.Inputs {
			dl.inputs = append(dl.inputs, input{ID: a.ID, Name: a.Name, MediaType: a.MediaType, Content: string(a.Content)})
		}
		dt.Delegation = dl
	}
	if t.Help != nil {
		dt.Help = &help{h: *t.Help}
	}
	if t.Crossbot != nil {
		dt.Crossbot = &crossbot{c: *t.Crossbot}
	}
	return dt
}

// turnText is the text rules match: the message, or on a delegated turn
// whose Text the gateway left empty, the task.
func turnText(t brains.Turn) string {
	if t.Text == "" && t.Delegation != nil {
		return t.Delegation.Task
	}
	return t.Text
}

// funcs are the helpers every template may call besides text/template's
// builtins (len, index, printf, ...).
var funcs = template.FuncMap{
	"lower": strings.ToLower,
	"upper": strings.ToUpper,
	"trim":  strings.TrimSpace,
	"join":  strings.Join,
}

// FuncNames lists the helpers templates may call besides text/template's
// builtins, sorted.
func FuncNames() []string {
	names := make([]string, 0, len(funcs))
	for n := range funcs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// parse compiles one template of the config. The template takes the last
// part of the field's path as its name, so text/template's own messages
// ("template: reply:1: ...") do not repeat what FieldError says.
func parse(field, text string) (*template.Template, error) {
	name := field[strings.LastIndexByte(field, '.')+1:]
	tmpl, err := template.New(name).Funcs(funcs).Parse(text)
	if err != nil {
		return nil, &FieldError{Field: field, Err: err}
	}
	return tmpl, nil
}

// execute runs tmpl on dt, naming field in the error. Execution stops at
// the template's next write once ctx ends, so a runaway template (deep
// {{template}} recursion, say) cannot hold a turn past its timeout.
func execute(ctx context.Context, field string, tmpl *template.Template, dt *data) (string, error) {
	w := &ctxWriter{ctx: ctx}
	if err := tmpl.Execute(w, dt); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &FieldError{Field: field, Err: err}
	}
	return w.b.String(), nil
}

// ctxWriter collects a template's output until its context ends.
type ctxWriter struct {
	ctx context.Context
	b   strings.Builder
}

// Write appends p, or fails with the context's error once it has ended.
func (w *ctxWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	return w.b.Write(p)
}

// FieldError reports a rule field that does not compile in New, or a
// template that fails to execute in Reply. Field is the path of the field
// in the brain's config, such as "rules[2].match", "default" or
// "rules[0].artifacts[1].content", so a config checker can prefix it with
// where the brain sits.
type FieldError struct {
	Field string
	Err   error
}

// Error returns "script: FIELD: cause".
func (e *FieldError) Error() string {
	return fmt.Sprintf("script: %s: %v", e.Field, e.Err)
}

// Unwrap returns the cause.
func (e *FieldError) Unwrap() error { return e.Err }
