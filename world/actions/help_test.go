package actions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/world/actions"
)

// helper records the help requests it is given.
type helper struct {
	calls []string
	err   error
}

func (h *helper) RequestHelp(_ context.Context, c actions.Caller, bot, question string) (string, error) {
	h.calls = append(h.calls, fmt.Sprintf("%s for %s in %s from %s/%s: ask %s %q", c.Bot, c.User, c.Space, c.Chat.Platform, c.Sender, bot, question))
	return "asked " + bot, h.err
}

// request_help is offered, like delegate, only to a bot with a team,
// with the team's IDs in its schema; a call goes to the helper as the
// turn's caller, with a team member's name made its ID, and blank
// arguments never reach it.
func TestHelp(t *testing.T) {
	r := actions.New()
	h := &helper{}
	if err := r.Register(actions.Help(h)); err != nil {
		t.Fatal(err)
	}
	lonely := r.Bind(actions.Caller{Bot: "matty"})
	if specs := lonely.Specs(); len(specs) != 0 {
		t.Errorf("a bot without a team is offered %v", specs)
	}
	c := actions.Caller{Bot: "matty", User: "user-ann", Space: "user:user-ann", Chat: chat.Ref{Platform: "web", ID: "x"}, Sender: "web-ann", Team: team}
	turn := r.Bind(c)
	var names []string
	var schema string
	for _, s := range turn.Specs() {
		names = append(names, s.Name)
		if s.Name == actions.RequestHelp {
			schema = string(s.Schema)
		}
	}
	if !slices.Equal(names, []string{"delegate", "request_help"}) || !strings.Contains(schema, `"enum":["finnshipley","priest"]`) {
		t.Errorf("offered %v, request_help schema %s", names, schema)
	}

	for _, tc := range []struct{ args, arg, problem string }{
		{`{"bot": "priest"}`, "question", "missing; it is required"},
		{`{"bot": " @ ", "question": "q"}`, "bot", "must name a bot"},
		{`{"bot": "priest", "question": "  "}`, "question", "must not be blank"},
		{`{"bot": "priest", "question": "` + strings.Repeat("x", actions.MaxQuestion+1) + `"}`, "question", "at most 4000 characters"},
	} {
		_, err := turn.Call(context.Background(), actions.RequestHelp, json.RawMessage(tc.args))
		var ae *actions.ArgumentError
		if !errors.As(err, &ae) || ae.Arg != tc.arg || !strings.Contains(ae.Problem, tc.problem) {
			t.Errorf("%.40s: err = %v, want %s: %s", tc.args, err, tc.arg, tc.problem)
		}
	}
	if len(h.calls) != 0 {
		t.Errorf("the helper got bad calls: %q", h.calls)
	}

	out, err := turn.Call(context.Background(), actions.RequestHelp, json.RawMessage(`{"bot": "Finn Shipley", "question": "auth?"}`))
	if err != nil || out != "asked finnshipley" {
		t.Errorf("call = %q, %v", out, err)
	}
	want := `matty for user-ann in user:user-ann from web/web-ann: ask finnshipley "auth?"`
	if len(h.calls) != 1 || h.calls[0] != want {
		t.Errorf("helper got %q, want %q", h.calls, want)
	}
	// The helper's refusal goes back as it is.
	h.err = fmt.Errorf("bot %q: %w: not allowed", "priest", brains.ErrActionRefused)
	if _, err := turn.Call(context.Background(), actions.RequestHelp, json.RawMessage(`{"bot": "priest", "question": "q"}`)); !errors.Is(err, brains.ErrActionRefused) {
		t.Errorf("refusal = %v", err)
	}
	// After the turn, no request.
	turn.End()
	if _, err := turn.Call(context.Background(), actions.RequestHelp, json.RawMessage(`{"bot": "priest", "question": "q"}`)); !errors.Is(err, actions.ErrTurnEnded) {
		t.Errorf("call after End: err = %v", err)
	}
	if len(h.calls) != 2 {
		t.Errorf("helper calls %d, want 2", len(h.calls))
	}
}
