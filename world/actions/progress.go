package actions

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/delegation"
)

// Progress is the name of the action that reports how far a delegated
// task got.
const Progress = "progress"

// Reporter records progress of hand-offs (SPEC §10.7); the gateway is
// one.
type Reporter interface {
	// ReportProgress sets the progress of the hand-off c's turn works
	// for and shows it to its watchers. A turn that works for no running
	// hand-off of its bot is refused (wrapping brains.ErrActionRefused).
	ReportProgress(ctx context.Context, c Caller, p delegation.Progress) error
}

// progressSchema is progress's arguments: text, step?, total?.
func progressSchema() *jsonschema.Schema {
	return Object([]string{"text"},
		Text("text", "What you are doing now: Researching CompetitorX's pricing.", delegation.MaxProgressText),
		Property{"step", &jsonschema.Schema{Type: "integer", Description: "The step you are on, from 1.", Minimum: jsonschema.Ptr(1.0)}},
		Property{"total", &jsonschema.Schema{Type: "integer", Description: "How many steps there are.", Minimum: jsonschema.Ptr(1.0)}},
	)
}

// handedOver reports whether c's turn works on a hand-off's task.
func handedOver(c Caller) bool {
	return c.Delegation != "" && c.DelegationKind == delegation.KindHandoff
}

// ProgressAction is progress {text, step?, total?}, carried out by r:
// offered only to a turn working on a hand-off's task, where the person sees it under the
// hand-off ("Step 1/3: Researching CompetitorX…"). r may be nil in a
// registry that only checks calls.
func ProgressAction(r Reporter) Action {
	return Action{
		Name: Progress,
		Description: "Tell the person how far you got with the task another bot handed you, while you work on it: " +
			"they see it under the hand-off. Use it before each long step.",
		Schema: progressSchema(),
		Offer: func(c Caller) (*jsonschema.Schema, bool) {
			return nil, handedOver(c)
		},
		Refuse: func(c Caller) error {
			if !handedOver(c) {
				return fmt.Errorf("%w: progress: this turn works on no task handed to it; only a bot doing a hand-off's task reports progress", brains.ErrActionRefused)
			}
			return nil
		},
		Handle: func(ctx Context, call Call) (string, error) {
			var args struct {
				Text  string `json:"text"`
				Step  int    `json:"step"`
				Total int    `json:"total"`
			}
			if err := call.Decode(&args); err != nil {
				return "", err
			}
			p := delegation.Progress{Text: strings.TrimSpace(args.Text), Step: args.Step, Total: args.Total}
			switch {
			case p.Text == "":
				return "", &ArgumentError{Action: Progress, Arg: "text", Problem: "must not be blank"}
			case p.Total > 0 && p.Step > p.Total:
				return "", &ArgumentError{Action: Progress, Arg: "step", Problem: fmt.Sprintf("must be at most total (%d)", p.Total)}
			case p.Total > 0 && p.Step == 0:
				return "", &ArgumentError{Action: Progress, Arg: "step", Problem: "is required with total"}
			case r == nil:
				return "", errors.New("progress: progress is not recorded here")
			}
			if err := r.ReportProgress(ctx, call.Caller, p); err != nil {
				return "", err
			}
			return "Progress shown: " + p.Label() + ".", nil
		},
	}
}
