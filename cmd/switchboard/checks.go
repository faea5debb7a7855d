package main

import (
	"github.com/switchboard-chat/switchboard/brains/script"
	"github.com/switchboard-chat/switchboard/config"
)

// configChecks are the checks config cannot make alone, given to every
// load (check, serve's start and each reload): the script brain's
// templates, run against the data they really receive, and its rules'
// actions against the action registry.
func configChecks() []config.Option {
	reg, err := newActions(worldParts{})
	if err != nil {
		panic(err) // the registry's own actions: a mistake in this program
	}
	return []config.Option{
		config.WithBrainCheck(config.KindScript, checkScriptBrain),
		config.WithBrainCheck(config.KindScript, func(b *config.Brain) []config.Finding { return checkScriptActions(reg, b) }),
	}
}

// checkScriptBrain reports what script.Check finds in a script brain.
func checkScriptBrain(b *config.Brain) []config.Finding {
	var out []config.Finding
	for _, f := range script.Check(scriptConfig(b)) {
		out = append(out, config.Finding{Key: f.Field, Line: f.Line, Message: f.Message})
	}
	return out
}

// scriptConfig is a script brain's section as the script package takes it.
func scriptConfig(b *config.Brain) script.Config {
	sc := script.Config{Default: b.Default}
	for _, r := range b.Rules {
		rule := script.Rule{Match: r.Match, Reply: r.Reply}
		for _, a := range r.Artifacts {
			rule.Artifacts = append(rule.Artifacts, script.ArtifactTemplate{Name: a.Name, MediaType: a.MediaType, Content: a.Content})
		}
		for _, item := range r.Actions {
			name, args, _ := item.Name()
			at := script.ActionTemplate{Name: name, Args: map[string]string{}}
			for arg, text := range args {
				at.Args[arg] = string(text)
			}
			rule.Actions = append(rule.Actions, at)
		}
		sc.Rules = append(sc.Rules, rule)
	}
	return sc
}
