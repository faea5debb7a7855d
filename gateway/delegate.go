package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/delegation"
)

// ErrBadRequest marks a programmatic request that cannot be carried out
// as asked (an empty task, an unusable schema, an unknown input).
var ErrBadRequest = errors.New("bad request")

// DelegateRequest is a programmatic hand-off (POST /api/v1/delegations).
type DelegateRequest struct {
	From, To string
	// User is a master user ID or a platform ID.
	User     string
	Task     string
	Inputs   []string
	Expected []ExpectedOutput
}

// Delegate starts a hand-off outside any chat. The record is stored
// whether it is queued or refused; a refusal is returned as a
// *delegation.Refusal error alongside it.
func (g *Gateway) Delegate(ctx context.Context, r DelegateRequest) (Delegation, error) {
	if g.stopped.Load() {
		return Delegation{}, ErrStopped
	}
	roster := g.roster.Load()
	from, ok := roster.Bot(r.From)
	if !ok {
		return Delegation{}, fmt.Errorf("%w: from_bot %q", ErrUnknownBot, r.From)
	}
	to, ok := roster.Bot(r.To)
	if !ok {
		return Delegation{}, fmt.Errorf("%w: to_bot %q", ErrUnknownBot, r.To)
	}
	r.Task = strings.TrimSpace(r.Task)
	switch {
	case r.Task == "":
		return Delegation{}, fmt.Errorf("%w: task is empty", ErrBadRequest)
	case strings.TrimSpace(r.User) == "":
		return Delegation{}, fmt.Errorf("%w: user is empty", ErrBadRequest)
	}
	seen := map[string]bool{}
	for i, e := range r.Expected {
		switch {
		case strings.TrimSpace(e.Name) == "":
			return Delegation{}, fmt.Errorf("%w: expected_outputs[%d] has no name", ErrBadRequest, i)
		case seen[e.Name]:
			return Delegation{}, fmt.Errorf("%w: expected_outputs[%d]: %q named twice", ErrBadRequest, i, e.Name)
		}
		seen[e.Name] = true
		if len(e.Schema) > 0 {
			if _, err := delegation.CompileSchema(e.Schema); err != nil {
				return Delegation{}, fmt.Errorf("%w: expected_outputs[%d]: %v", ErrBadRequest, i, err)
			}
		}
	}
	if _, err := g.store.Artifacts(ctx, r.Inputs); errors.Is(err, ErrNotFound) {
		return Delegation{}, fmt.Errorf("%w: inputs: %v", ErrBadRequest, err)
	} else if err != nil {
		return Delegation{}, err
	}

	u, _ := g.users.Load().User(r.User)
	name := u.Name
	if name == "" {
		name = u.ID
	}
	fromKey := SessionKey{Bot: from.ID, Scope: ScopeUser, ScopeID: u.ID}
	rec := Delegation{
		ID: "dlg-" + uuid.NewString(), From: from.ID, To: to.ID, UserID: u.ID, UserName: name,
		Task: r.Task, Depth: 1, Status: StatusQueued, Expected: r.Expected, Inputs: r.Inputs,
	}
	nd := NewDelegation{Record: rec, FromSession: &fromKey}
	err := g.policy.Admit(delegation.Request{
		From: from.ID, To: to.ID, FromName: from.Name, ToName: to.Name, User: u.ID, Depth: 1,
		Allowed: from.Allows(to.ID), Public: from.Public || to.Public, Programmatic: true,
	})
	var refusal *delegation.Refusal
	if errors.As(err, &refusal) {
		nd.Record.Status, nd.Record.Error = StatusRefused, refusal.Reason
	} else {
		nd.Target = SessionKey{Bot: to.ID, Scope: ScopeUser, ScopeID: u.ID}
		nd.Wrapper = delegation.Wrapper(from.Name, name, r.Task, g.recentLines(ctx, fromKey))
	}
	_, err = g.store.StartDelegations(ctx, []NewDelegation{nd}, func(turns []TurnRef) {
		g.notify(nd.Record)
		for _, t := range turns {
			g.push(t)
		}
	})
	if err != nil {
		return Delegation{}, err
	}
	g.log.Info("delegation via API", "delegation", rec.ID, "from", from.ID, "to", to.ID, "status", nd.Record.Status)
	if refusal != nil {
		return nd.Record, refusal
	}
	return nd.Record, nil
}

// recentLines are the last context messages of a session, for a wrapper.
func (g *Gateway) recentLines(ctx context.Context, key SessionKey) []delegation.Line {
	n := g.delegation.Load().ContextMessages
	s, ok, err := g.store.FindSession(ctx, key)
	if err != nil || !ok || n <= 0 {
		return nil
	}
	msgs, err := g.store.SessionMessages(ctx, s.ID, n)
	if err != nil {
		return nil
	}
	var lines []delegation.Line
	for _, m := range msgs {
		lines = append(lines, delegation.Line{Human: m.From.Kind == "human", Name: m.From.Name, Text: m.Text})
	}
	return lines
}

// Delegation returns one stored delegation.
func (g *Gateway) Delegation(ctx context.Context, id string) (Delegation, error) {
	return g.store.GetDelegation(ctx, id)
}

// Delegations lists stored delegations; user is a master or platform ID.
func (g *Gateway) Delegations(ctx context.Context, user, status string) ([]Delegation, error) {
	f := DelegationFilter{Status: status}
	if user != "" {
		u, _ := g.users.Load().User(user)
		f.UserIDs = append([]string{u.ID}, u.Identities...)
	}
	return g.store.ListDelegations(ctx, f)
}
