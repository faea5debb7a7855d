package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/world"
)

// Context is a call's context.
type Context = context.Context

// Turn is the registry bound to one turn: a brains.Actions. It is safe
// for concurrent use (an agent CLI may call tools in parallel).
type Turn struct {
	reg    *Registry
	caller Caller

	mu    sync.Mutex
	ended bool
	// handoffs are the delegate calls made so far, in order.
	handoffs []brains.Handoff
}

var _ brains.Actions = (*Turn)(nil)

// Caller is who the turn acts as.
func (t *Turn) Caller() Caller { return t.caller }

// Specs implements brains.Actions: the actions offered to the turn's
// caller, in the order registered; none for a public bot.
func (t *Turn) Specs() []brains.ActionSpec {
	if t.caller.Public {
		return nil
	}
	t.reg.mu.RLock()
	entries := append([]*entry(nil), t.reg.ordered...)
	t.reg.mu.RUnlock()
	var out []brains.ActionSpec
	for _, e := range entries {
		schema := e.shown
		if e.Offer != nil {
			shown, offered := e.Offer(t.caller)
			if !offered {
				continue
			}
			if shown != nil {
				b, err := json.Marshal(shown)
				if err != nil {
					continue // a broken view is not offered; Schema still checks calls
				}
				schema = b
			}
		}
		out = append(out, brains.ActionSpec{Name: e.Name, Description: e.Description, Schema: schema})
	}
	return out
}

// Call implements brains.Actions: it checks args against the action's
// schema and runs its handler. A public bot's calls, calls after the
// turn ended and calls of an action that is not registered are refused
// (brains.ErrActionRefused); arguments that do not fit, the schema's
// or a handler's *world.InvalidError, are an *ArgumentError naming the
// argument.
func (t *Turn) Call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	if t.caller.Public {
		return "", fmt.Errorf("%w: %s is a public bot, and public bots take no part in the shared world", brains.ErrActionRefused, t.caller.Bot)
	}
	if t.isEnded() {
		return "", fmt.Errorf("%w: %s: %w", brains.ErrActionRefused, quoteName(name), ErrTurnEnded)
	}
	e, ok := t.reg.lookup(name)
	if !ok {
		return "", t.reg.unknown(name)
	}
	if e.Refuse != nil {
		if err := e.Refuse(t.caller); err != nil {
			return "", err
		}
	}
	checked, err := e.check(args)
	if err != nil {
		return "", err
	}
	out, err := e.Handle(ctx, Call{Caller: t.caller, Args: checked, action: e.Name, turn: t})
	var ie *world.InvalidError
	if errors.As(err, &ie) { // what the handler adds breaks a rule of its space
		return "", &ArgumentError{Action: e.Name, Arg: ie.Field, Problem: ie.Problem}
	}
	return out, err
}

// End ends the turn: later calls are refused. It returns the hand-offs
// the turn's delegate calls asked for, in order, for the gateway to
// route; a second End returns none.
func (t *Turn) End() []brains.Handoff {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ended = true
	hs := t.handoffs
	t.handoffs = nil
	return hs
}

func (t *Turn) isEnded() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ended
}

// handOff records a delegate call; false when the turn has ended.
func (t *Turn) handOff(h brains.Handoff) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return false
	}
	t.handoffs = append(t.handoffs, h)
	return true
}
