package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/config"
	"github.com/switchboard-chat/switchboard/world/actions"
	"github.com/switchboard-chat/switchboard/world/findings"
	"github.com/switchboard-chat/switchboard/world/insights"
	"github.com/switchboard-chat/switchboard/world/shared"
)

// The shared world's wiring (SPEC §10): the findings board and the
// insights on the store, and the action registry every brain kind
// calls.

// worldParts carry out the actions of the shared world; any may be nil
// in a registry that only checks calls (switchboard check), whose
// handlers never run.
type worldParts struct {
	board    *findings.Board
	pool     *insights.Pool
	keeper   *shared.Keeper
	helper   actions.Helper
	reporter actions.Reporter
}

// newActions is the action registry with every action the gateway
// carries out: delegate (the registry's own), request_help by the
// helper (the gateway), post_finding on the board, remember in the pool,
// add_event, add_entity and add_fact in the keeper and progress by the
// reporter (the gateway). serve makes the registry before the gateway
// that binds it, and registers into it with registerActions once the
// gateway is made; check builds it from no parts, for checking scripts
// before any store is open. Both know the same actions.
func newActions(p worldParts) (*actions.Registry, error) {
	reg := actions.New()
	return reg, registerActions(reg, p)
}

// registerActions registers in reg the actions newActions describes,
// besides delegate, in the order SPEC §10.1 lists them. Register the
// actions of later features here, each from the package that carries
// it out, so that serve and check know the same actions.
func registerActions(reg *actions.Registry, p worldParts) error {
	all := []actions.Action{actions.Help(p.helper), findings.Action(p.board), insights.Action(p.pool)}
	all = append(all, shared.Actions(p.keeper)...)
	all = append(all, actions.ProgressAction(p.reporter))
	for _, a := range all {
		if err := reg.Register(a); err != nil {
			return err
		}
	}
	return nil
}

// checkScriptActions reports the actions of a script brain's rules that
// the registry would refuse whatever the message: an action that does not
// exist, an argument it does not take, a required one missing, and a
// value written out (not a template) that does not fit its schema.
func checkScriptActions(reg *actions.Registry, b *config.Brain) []config.Finding {
	var out []config.Finding
	for i, rule := range b.Rules {
		for j, item := range rule.Actions {
			name, args, ok := item.Name()
			if !ok {
				continue // config's own check says why
			}
			key := fmt.Sprintf("rules[%d].actions[%d]", i, j)
			spec, known := reg.Spec(name)
			if !known {
				out = append(out, config.Finding{Key: key, Message: fmt.Sprintf("unknown action %q%s (the actions are %s)",
					name, closestName(name, reg.Names()), strings.Join(reg.Names(), ", "))})
				continue
			}
			given := map[string]string{}
			var templated []string
			for arg, text := range args {
				if strings.Contains(string(text), "{{") {
					templated = append(templated, arg)
				} else {
					given[arg] = string(text)
				}
			}
			slices.Sort(templated)
			raw, err := brains.ActionArgs(spec, given)
			if err == nil {
				err = reg.CheckWritten(name, raw, templated)
			}
			var ae *actions.ArgumentError
			switch {
			case err == nil:
			case errors.As(err, &ae) && ae.Arg != "":
				out = append(out, config.Finding{Key: key + "." + name + "." + strings.SplitN(ae.Arg, ".", 2)[0], Message: ae.Problem})
			default:
				out = append(out, config.Finding{Key: key + "." + name, Message: strings.TrimPrefix(err.Error(), name+": ")})
			}
		}
	}
	return out
}

// closestName is " (did you mean X?)" for the name of names within two
// edits of name, or "".
func closestName(name string, names []string) string {
	best, dist := "", 3
	for _, n := range names {
		if d := editDistance(name, n); d < dist {
			best, dist = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// editDistance is the Levenshtein distance between short names.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
