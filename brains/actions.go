package brains

import (
	"context"
	"encoding/json"
	"errors"
)

// Actions are what a bot can do in the shared world during one turn
// besides replying (SPEC §10.1): hand work to another bot, ask one for
// help, post a finding, remember, and so on. The gateway binds them to
// the turn's bot, person and space before the brain sees them, so a
// brain never names who acts: every brain kind calls the same Actions
// (a script rule's actions list, a model's function tools, an agent
// CLI's MCP tools).
//
// Call checks the arguments against the action's schema, stores what the
// action does, and returns what to tell the caller (a model, an agent) on
// success. An error is what to tell it otherwise: its text names the
// argument at fault and holds no secrets; it wraps ErrActionRefused when
// the action was understood and refused (a limit, a public bot, no such
// action).
type Actions interface {
	// Specs lists the actions the turn may call, in a stable order.
	Specs() []ActionSpec
	// Call runs the action name with its arguments (a JSON object).
	Call(ctx context.Context, name string, args json.RawMessage) (string, error)
}

// ActionSpec describes one action to a caller.
type ActionSpec struct {
	Name        string
	Description string
	// Schema is the JSON schema of the arguments object.
	Schema json.RawMessage
}

// ErrActionRefused is wrapped by the errors of an action that was
// refused rather than malformed.
var ErrActionRefused = errors.New("action refused")
