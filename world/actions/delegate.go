package actions

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/delegation"
)

// Delegate is the name of the action that hands a task to another bot.
const Delegate = "delegate"

// maxOutputs bounds the outputs one delegate call may ask for.
const maxOutputs = 32

// delegateSchema is delegate's arguments: bot, task, expected_outputs?
// (SPEC §10.1), as POST /api/v1/delegations takes them, and inputs?, the
// files handed with the task by name (SPEC §10.7).
func delegateSchema() *jsonschema.Schema {
	output := Object([]string{"name"},
		Text("name", "The file name of the output, such as report.md: a name, never a path.", 255),
		Property{"media_type", &jsonschema.Schema{Type: "string", Description: "Its media type, such as application/json."}},
		Property{"schema", &jsonschema.Schema{Type: "object", Description: "A JSON Schema its content must pass (for JSON outputs)."}},
	)
	return Object([]string{"bot", "task"},
		Text("bot", "The ID of the bot to hand the task to.", 200),
		Text("task", "What the bot should do, complete enough to act on without this conversation.", 0),
		Property{"expected_outputs", &jsonschema.Schema{
			Type: "array", Items: output, MaxItems: jsonschema.Ptr(maxOutputs),
			Description: "Files the bot must produce; missing or invalid ones get it one corrective retry.",
		}},
		Property{"inputs", &jsonschema.Schema{
			Type: "array", MaxItems: jsonschema.Ptr(maxOutputs),
			Items: &jsonschema.Schema{Type: "string", MinLength: jsonschema.Ptr(1), MaxLength: jsonschema.Ptr(255)},
			Description: "Files to hand the bot, by file name (competitors.json): files you produced in this turn, " +
				"were handed, or that this conversation's artifact chain holds.",
		}},
	)
}

// delegateAction is delegate: its calls are collected by the turn, and
// the gateway routes them when the turn ends, through the same limits
// (depth, loops, cooldown, allow) as a trigger typed in the reply.
func delegateAction() Action {
	return Action{
		Name: Delegate,
		Description: "Hand a task to another bot of your team. That bot does the work and answers the user " +
			"itself; you are told the result later. Use it when the task is that bot's job, not yours.",
		Schema: delegateSchema(),
		Offer:  offerToTeam(delegateSchema),
		Handle: handleDelegate,
	}
}

// offerToTeam offers an action whose bot argument names a member of the
// caller's team (delegate, request_help) to callers that have a team,
// with a schema made by schema whose bot lists the members' IDs.
func offerToTeam(schema func() *jsonschema.Schema) func(Caller) (*jsonschema.Schema, bool) {
	return func(c Caller) (*jsonschema.Schema, bool) {
		if len(c.Team) == 0 {
			return nil, false
		}
		s := schema()
		for _, m := range c.Team {
			s.Properties["bot"].Enum = append(s.Properties["bot"].Enum, m.ID)
		}
		return s, true
	}
}

// delegateArgs are delegate's arguments.
type delegateArgs struct {
	Bot             string `json:"bot"`
	Task            string `json:"task"`
	ExpectedOutputs []struct {
		Name      string         `json:"name"`
		MediaType string         `json:"media_type"`
		Schema    map[string]any `json:"schema"`
	} `json:"expected_outputs"`
	Inputs []string `json:"inputs"`
}

func handleDelegate(_ Context, call Call) (string, error) {
	var args delegateArgs
	if err := call.Decode(&args); err != nil {
		return "", err
	}
	h := brains.Handoff{Bot: teamID(args.Bot, call.Caller.Team), Task: strings.TrimSpace(args.Task)}
	switch {
	case strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(args.Bot), "@")) == "":
		return "", &ArgumentError{Action: Delegate, Arg: "bot", Problem: "must name a bot"}
	case h.Task == "":
		return "", &ArgumentError{Action: Delegate, Arg: "task", Problem: "must not be blank"}
	}
	for i, name := range args.Inputs {
		name = strings.TrimSpace(name)
		// A name, or an artifact's ID; never a path (SPEC §12).
		if err := brains.CheckArtifactName(name); err != nil {
			return "", &ArgumentError{Action: Delegate, Arg: fmt.Sprintf("inputs[%d]", i), Problem: err.Error()}
		}
		if !slices.Contains(h.Inputs, name) {
			h.Inputs = append(h.Inputs, name)
		}
	}
	seen := map[string]bool{}
	for i, o := range args.ExpectedOutputs {
		at := fmt.Sprintf("expected_outputs[%d]", i)
		if err := brains.CheckArtifactName(o.Name); err != nil {
			return "", &ArgumentError{Action: Delegate, Arg: at + ".name", Problem: err.Error()}
		}
		if seen[o.Name] {
			return "", &ArgumentError{Action: Delegate, Arg: at + ".name", Problem: fmt.Sprintf("%q is named twice", o.Name)}
		}
		seen[o.Name] = true
		e := brains.Expected{Name: o.Name, MediaType: o.MediaType}
		if o.Schema != nil {
			raw, err := json.Marshal(o.Schema)
			if err == nil {
				_, err = delegation.CompileSchema(raw)
			}
			if err != nil {
				return "", &ArgumentError{Action: Delegate, Arg: at + ".schema", Problem: "not a usable JSON Schema: " + firstLine(err.Error(), 200)}
			}
			e.Schema = raw
		}
		h.Expected = append(h.Expected, e)
	}
	if !call.turn.handOff(h) {
		return "", fmt.Errorf("%w: %s: %w", brains.ErrActionRefused, Delegate, ErrTurnEnded)
	}
	return fmt.Sprintf("The hand-off to %s is recorded. It starts when this turn ends, if the hand-off limits allow; "+
		"%s answers the user itself, and you will be told the result.", mateName(h.Bot, call.Caller.Team), mateName(h.Bot, call.Caller.Team)), nil
}

// teamID maps what a caller wrote for a bot to a team member's ID when it
// names one by ID or display name, in any case, with or without '@';
// anything else is passed on for the gateway's router to refuse with its
// usual explanation (an unknown bot, one not allowed).
func teamID(s string, team []brains.Mate) string {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "@"))
	for _, m := range team {
		if strings.EqualFold(s, m.ID) || strings.EqualFold(s, m.Name) {
			return m.ID
		}
	}
	return s
}

// mateName is a team member's display name, or id itself.
func mateName(id string, team []brains.Mate) string {
	for _, m := range team {
		if m.ID == id {
			return m.Name
		}
	}
	return id
}
