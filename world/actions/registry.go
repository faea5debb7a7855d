// Package actions is the registry of what a bot can do in the shared
// world besides replying (SPEC §10.1): each action has a name, a
// description, a JSON schema of its arguments and a handler. Bind makes
// a brains.Actions for one turn, acting as that turn's bot, for its
// person, in its space; every brain kind calls that same bound value (a
// script rule's actions list, a model's function tools, an agent CLI's
// MCP tools), so each action has one code path whatever the brain.
//
// The registry checks arguments against the action's schema (with
// github.com/google/jsonschema-go) before the handler runs, and its
// errors name the argument at fault. New registers the one action whose
// effect belongs to the turn itself, delegate: its calls are collected
// by the bound turn and handed to the gateway when the turn ends, which
// routes them as it routes typed triggers. Help makes request_help for
// the Helper that carries it out (the gateway); other actions
// (post_finding, and those of later features) are registered by the
// packages that carry them out.
package actions

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
)

// Caller is who acts, for whom and where: one bot's turn for one person
// in one space.
type Caller struct {
	// Bot is the acting bot's ID.
	Bot string
	// User is the person the turn answers (a master user ID, or the
	// platform ID of a person users.yaml does not list); UserName their
	// name.
	User, UserName string
	// Space is the turn's space (world.Space's String): the space of its
	// chat, or for a delegated turn the space its hand-off came from.
	Space string
	// Chat is where the turn speaks: the chat its reply goes to, and so
	// where the follow-up of a help request it makes answers. For a
	// helper's turn, whose answer is shown to nobody, the chat the
	// request came from; empty for work asked outside any chat (the
	// API).
	Chat chat.Ref
	// Sender is the person's platform ID in Chat, when known.
	Sender string
	// Session is the turn's session ID and Turn its stored turn ID.
	Session string
	Turn    int64
	// Delegation is the ID of the delegation record the turn works for
	// (a hand-off, a help request or its follow-up): a delegation or a
	// help request the turn makes is one deeper. "" for an ordinary
	// turn.
	Delegation string
	// DelegationKind is Delegation's kind: delegation.KindHandoff or
	// delegation.KindHelp ("" for an ordinary turn).
	DelegationKind string
	// Public marks a public bot, which takes no part in the shared
	// world: every call is refused.
	Public bool
	// Team are the bots this bot may hand work to (its allow list).
	Team []brains.Mate
}

// Handler carries out one call whose arguments passed the action's
// schema. It returns what to tell the caller; an error is told instead,
// so its text names the argument at fault (an *ArgumentError) and holds
// no secrets. A refusal wraps brains.ErrActionRefused.
type Handler func(ctx Context, call Call) (string, error)

// Action is one registered action.
type Action struct {
	// Name is the action's name, a tool name: lower-case letters, digits
	// and '_', starting with a letter.
	Name string
	// Description tells a model what the action is for and when to use
	// it.
	Description string
	// Schema is the JSON schema of the arguments object; calls are
	// checked against it. It must be an object schema.
	Schema *jsonschema.Schema
	// Refuse, when set, refuses every call of a caller it returns an
	// error for (wrapping brains.ErrActionRefused), before the
	// arguments are checked: an action that does not apply to the
	// caller's turn at all says so, whatever the arguments.
	Refuse func(Caller) error
	// Offer, when set, says whether a caller is offered the action and
	// may return the schema shown to that caller (nil: Schema), such as
	// one that lists the caller's team. An action not offered can still
	// be called (a script names it), and Schema still checks the call.
	Offer func(Caller) (shown *jsonschema.Schema, offered bool)
	// Handle carries the action out.
	Handle Handler
}

// Call is one call of an action, its arguments checked.
type Call struct {
	Caller Caller
	// Args is the arguments object, as the caller sent it.
	Args   json.RawMessage
	action string
	turn   *Turn
}

// Decode unmarshals the call's arguments into v; arguments that do not
// fit v are an *ArgumentError.
func (c Call) Decode(v any) error {
	args := c.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return &ArgumentError{Action: c.action, Problem: "the arguments do not decode: " + err.Error()}
	}
	return nil
}

// Registry holds the actions by name. It is safe for concurrent use;
// actions are registered at start, before turns bind it.
type Registry struct {
	mu      sync.RWMutex
	byName  map[string]*entry
	ordered []*entry
}

// entry is a registered action with its schema resolved for checks.
type entry struct {
	Action
	resolved *jsonschema.Resolved
	// props are the resolved schemas of the arguments, by name.
	props map[string]*jsonschema.Resolved
	// shown is Schema as JSON.
	shown json.RawMessage
}

// New returns a registry holding delegate.
func New() *Registry {
	r := &Registry{byName: map[string]*entry{}}
	if err := r.Register(delegateAction()); err != nil {
		panic(err) // a mistake in this package
	}
	return r
}

// namePattern is what an action's name may be: what every model API
// accepts as a function name.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Register adds an action. A name already taken, a name that is not a
// tool name, a missing handler or a schema that is not an object schema
// (or does not resolve) is an error, and nothing is added.
func (r *Registry) Register(a Action) error {
	switch {
	case !namePattern.MatchString(a.Name):
		return fmt.Errorf("actions: %q is not an action name (lower-case letters, digits and _)", a.Name)
	case a.Handle == nil:
		return fmt.Errorf("actions: %s has no handler", a.Name)
	case a.Schema == nil || a.Schema.Type != "object":
		return fmt.Errorf("actions: %s: the schema must be an object schema", a.Name)
	}
	e := &entry{Action: a, props: map[string]*jsonschema.Resolved{}}
	var err error
	if e.resolved, err = a.Schema.Resolve(nil); err != nil {
		return fmt.Errorf("actions: %s: schema: %w", a.Name, err)
	}
	for name, p := range a.Schema.Properties {
		if e.props[name], err = p.Resolve(nil); err != nil {
			return fmt.Errorf("actions: %s: schema of %s: %w", a.Name, name, err)
		}
	}
	if e.shown, err = json.Marshal(a.Schema); err != nil {
		return fmt.Errorf("actions: %s: schema: %w", a.Name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, taken := r.byName[a.Name]; taken {
		return fmt.Errorf("actions: %s is registered already", a.Name)
	}
	r.byName[a.Name] = e
	r.ordered = append(r.ordered, e)
	return nil
}

// Names lists the registered actions' names, in the order registered.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.ordered))
	for _, e := range r.ordered {
		out = append(out, e.Name)
	}
	return out
}

// Spec describes a registered action as a brain sees it, with its full
// schema (no caller's view); ok is false when there is none by that
// name.
func (r *Registry) Spec(name string) (brains.ActionSpec, bool) {
	e, ok := r.lookup(name)
	if !ok {
		return brains.ActionSpec{}, false
	}
	return brains.ActionSpec{Name: e.Name, Description: e.Description, Schema: e.shown}, true
}

// Check checks args against the schema of the action called name, as a
// call would, without running it: an unknown action wraps
// brains.ErrActionRefused, bad arguments are *ArgumentErrors.
func (r *Registry) Check(name string, args json.RawMessage) error {
	e, ok := r.lookup(name)
	if !ok {
		return r.unknown(name)
	}
	_, err := e.check(args)
	return err
}

func (r *Registry) lookup(name string) (*entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.byName[name]
	return e, ok
}

// unknown is the refusal of a call of an action that is not registered.
func (r *Registry) unknown(name string) error {
	return fmt.Errorf("%w: there is no action %s (the actions are %s)", brains.ErrActionRefused, quoteName(name), joinNames(r.Names()))
}

// Bind returns the actions of one turn, acting as c. Its Specs are the
// actions offered to c; End ends the turn and hands over what it
// collected.
func (r *Registry) Bind(c Caller) *Turn {
	c.Team = slices.Clone(c.Team)
	return &Turn{reg: r, caller: c}
}

// ErrTurnEnded is wrapped by the refusal of a call made after its turn
// ended.
var ErrTurnEnded = errors.New("the turn has ended")

// CheckWritten checks the arguments of a call written ahead of time (a
// script rule's actions): given holds the arguments whose values are
// known (a JSON object), templated names those whose values a template
// makes when the rule runs. Every argument must be one the action takes,
// every required one given or templated, and each given value must fit
// its schema; templated ones are checked when they are made. An unknown
// action wraps brains.ErrActionRefused, the rest are *ArgumentErrors.
func (r *Registry) CheckWritten(name string, given json.RawMessage, templated []string) error {
	e, ok := r.lookup(name)
	if !ok {
		return r.unknown(name)
	}
	var vals map[string]any
	if len(given) > 0 {
		if err := json.Unmarshal(given, &vals); err != nil {
			return &ArgumentError{Action: name, Problem: "the arguments must be a JSON object"}
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range vals {
			if !yield(k) {
				return
			}
		}
	})
	for _, arg := range append(names, templated...) {
		if _, known := e.Schema.Properties[arg]; !known {
			return &ArgumentError{Action: name, Arg: arg, Problem: "unknown argument; " + takes(e.Schema, "")}
		}
	}
	for _, req := range e.Schema.Required {
		if _, given := vals[req]; !given && !slices.Contains(templated, req) {
			return &ArgumentError{Action: name, Arg: req, Problem: "missing; it is required"}
		}
	}
	for _, arg := range names {
		if err := e.props[arg].Validate(vals[arg]); err != nil {
			if a, p := explain(e.Schema.Properties[arg], vals[arg], arg); p != "" {
				return &ArgumentError{Action: name, Arg: a, Problem: p}
			}
			return &ArgumentError{Action: name, Arg: arg, Problem: describe(e.Schema.Properties[arg])}
		}
	}
	return nil
}
