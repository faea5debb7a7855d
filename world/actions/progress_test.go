package actions_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/world/actions"
)

// reporter records the progress it is given.
type reporter struct{ got []string }

func (r *reporter) ReportProgress(_ context.Context, c actions.Caller, p delegation.Progress) error {
	r.got = append(r.got, c.Delegation+" "+p.Label())
	return nil
}

// progress is offered only to a delegated turn; a call outside one, or
// one whose step does not fit, is refused and reports nothing.
func TestProgressAction(t *testing.T) {
	r := &reporter{}
	reg := actions.New()
	if err := reg.Register(actions.ProgressAction(r)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	names := func(specs []brains.ActionSpec) []string {
		var out []string
		for _, s := range specs {
			out = append(out, s.Name)
		}
		return out
	}
	ordinary := reg.Bind(actions.Caller{Bot: "coder", User: "ann", Space: "user:ann"})
	if slices.Contains(names(ordinary.Specs()), actions.Progress) {
		t.Error("progress offered to an ordinary turn")
	}
	if _, err := ordinary.Call(ctx, actions.Progress, json.RawMessage(`{"text":"x","step":1,"total":3}`)); !errors.Is(err, brains.ErrActionRefused) ||
		!strings.Contains(err.Error(), "works on no task handed to it") {
		t.Errorf("progress outside a hand-off: %v", err)
	}
	// A help request's turns work on no hand-off: refused whatever the
	// arguments.
	helping := reg.Bind(actions.Caller{Bot: "coder", User: "ann", Space: "user:ann", Delegation: "dlg-h", DelegationKind: delegation.KindHelp})
	if slices.Contains(names(helping.Specs()), actions.Progress) {
		t.Error("progress offered to a helper's turn")
	}
	if _, err := helping.Call(ctx, actions.Progress, json.RawMessage(`{"text":"x","step":1,"total":3}`)); !errors.Is(err, brains.ErrActionRefused) {
		t.Errorf("progress on a helper's turn: %v", err)
	}
	delegated := reg.Bind(actions.Caller{Bot: "coder", User: "ann", Space: "user:ann", Delegation: "dlg-1", DelegationKind: delegation.KindHandoff})
	if !slices.Contains(names(delegated.Specs()), actions.Progress) {
		t.Error("progress not offered to a delegated turn")
	}
	for _, tc := range []struct{ args, want string }{
		{`{"text":"Reading","step":4,"total":3}`, "progress: step: must be at most total (3)"},
		{`{"text":"Reading","total":3}`, "progress: step: is required with total"},
		{`{"text":"Reading","step":0}`, "progress: step"},
		{`{"text":"   "}`, "progress: text: must not be blank"},
		{`{"text":"x","step":1.5}`, "progress: step"},
		{`{"step":1}`, "progress: text: missing"},
	} {
		if _, err := delegated.Call(ctx, actions.Progress, json.RawMessage(tc.args)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.args, err, tc.want)
		}
	}
	for _, args := range []string{`{"text":"Reading","step":1,"total":3}`, `{"text":"Writing","step":2}`, `{"text":"Almost"}`} {
		if _, err := delegated.Call(ctx, actions.Progress, json.RawMessage(args)); err != nil {
			t.Errorf("%s: %v", args, err)
		}
	}
	if want := []string{"dlg-1 Step 1/3: Reading", "dlg-1 Step 2: Writing", "dlg-1 Almost"}; !slices.Equal(r.got, want) {
		t.Errorf("reported %q, want %q", r.got, want)
	}
}
