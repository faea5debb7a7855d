package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world"
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
	Expected []delegation.Expected
}

// Delegate starts a hand-off outside any chat. The record is stored
// whether it is queued or refused; a refusal is returned as a
// *delegation.Refusal error beside it.
func (g *Gateway) Delegate(ctx context.Context, r DelegateRequest) (delegation.Record, error) {
	if g.stopped.Load() {
		return delegation.Record{}, ErrStopped
	}
	roster := g.roster.Load()
	from, ok := roster.Bot(r.From)
	if !ok {
		return delegation.Record{}, fmt.Errorf("%w: from_bot %q", ErrUnknownBot, r.From)
	}
	to, ok := roster.Bot(r.To)
	if !ok {
		return delegation.Record{}, fmt.Errorf("%w: to_bot %q", ErrUnknownBot, r.To)
	}
	r.Task = strings.TrimSpace(r.Task)
	switch {
	case r.Task == "":
		return delegation.Record{}, fmt.Errorf("%w: task is empty", ErrBadRequest)
	case strings.TrimSpace(r.User) == "":
		return delegation.Record{}, fmt.Errorf("%w: user is empty", ErrBadRequest)
	}
	seen := map[string]bool{}
	for i, e := range r.Expected {
		switch {
		case strings.TrimSpace(e.Name) == "":
			return delegation.Record{}, fmt.Errorf("%w: expected_outputs[%d] has no name", ErrBadRequest, i)
		case seen[e.Name]:
			return delegation.Record{}, fmt.Errorf("%w: expected_outputs[%d]: %q named twice", ErrBadRequest, i, e.Name)
		}
		// A name is a file name, never a path (SPEC §12), refused here
		// rather than when the target's brain would write it.
		if err := brains.CheckArtifactName(e.Name); err != nil {
			return delegation.Record{}, fmt.Errorf("%w: expected_outputs[%d]: %v", ErrBadRequest, i, err)
		}
		seen[e.Name] = true
		if len(e.Schema) > 0 {
			if _, err := delegation.CompileSchema(e.Schema); err != nil {
				return delegation.Record{}, fmt.Errorf("%w: expected_outputs[%d]: %v", ErrBadRequest, i, err)
			}
		}
	}
	if _, err := g.store.Artifacts(ctx, r.Inputs); errors.Is(err, delegation.ErrNotFound) {
		return delegation.Record{}, fmt.Errorf("%w: inputs: %v", ErrBadRequest, err)
	} else if err != nil {
		return delegation.Record{}, err
	}

	u, _ := g.users.Load().User(r.User)
	name := u.Name
	if name == "" {
		name = u.ID
	}
	fromKey := sessions.Key{Bot: from.ID, Scope: sessions.ScopeUser, ScopeID: u.ID}
	h := sessions.Handoff{FromSession: &fromKey, Record: delegation.Record{
		ID: "dlg-" + uuid.NewString(), Kind: delegation.KindHandoff, From: from.ID, To: to.ID, UserID: u.ID, UserName: name,
		Task: r.Task, Depth: 1, Status: delegation.StatusQueued, Expected: r.Expected, Inputs: r.Inputs,
		Space: world.User(u.ID).String(),
	}}
	err := g.policy.Admit(delegation.Request{
		From: from.ID, To: to.ID, FromName: from.Name, ToName: to.Name, User: u.ID, Depth: 1,
		Allowed: from.Allows(to.ID), Public: from.Public || to.Public, Programmatic: true,
	})
	var refusal *delegation.Refusal
	if errors.As(err, &refusal) {
		h.Record.Status, h.Record.Error = delegation.StatusRefused, refusal.Reason
	} else {
		h.Target = sessions.Key{Bot: to.ID, Scope: sessions.ScopeUser, ScopeID: u.ID}
		h.Wrapper = delegation.Wrapper(from.Name, name, r.Task, g.recentLines(ctx, fromKey))
	}
	turns, err := g.store.StartDelegations(ctx, []sessions.Handoff{h})
	if err != nil {
		return delegation.Record{}, err
	}
	g.notify(h.Record)
	for _, t := range turns {
		g.runner.Wake(t.SessionID)
	}
	g.log.Info("delegation via API", "delegation", h.Record.ID, "from", from.ID, "to", to.ID, "status", h.Record.Status)
	if refusal != nil {
		return h.Record, refusal
	}
	return h.Record, nil
}

// recentLines are the last context messages of a session, for a wrapper.
func (g *Gateway) recentLines(ctx context.Context, key sessions.Key) []delegation.Line {
	n := g.delegation.Load().ContextMessages
	if n <= 0 {
		return nil
	}
	msgs, err := sessions.History(ctx, g.sessions, key, chat.KindChat, n)
	if err != nil {
		g.log.Error("wrapper context", "err", err)
		return nil
	}
	var lines []delegation.Line
	for _, m := range msgs {
		lines = append(lines, delegation.Line{Human: m.From.Kind == chat.Human, Name: m.From.Name, Text: m.Text})
	}
	return lines
}

// Delegation returns one stored delegation.
func (g *Gateway) Delegation(ctx context.Context, id string) (delegation.Record, error) {
	return g.store.Delegation(ctx, id)
}

// Delegations lists stored delegations; user is a master or platform ID.
func (g *Gateway) Delegations(ctx context.Context, user, status string) ([]delegation.Record, error) {
	f := delegation.Filter{Status: status}
	if user != "" {
		u, _ := g.users.Load().User(user)
		f.UserIDs = u.IDs()
	}
	return g.store.Delegations(ctx, f)
}
