package config

import (
	"strings"
	"testing"
)

func TestRuleActions(t *testing.T) {
	dir := writeDir(t, `bots:
  - id: a
    brain:
      kind: script
      rules:
        - match: '(?i)^found: (.*)'
          reply: noted
          actions:
            - post_finding: {text: '{{index .Match 1}}', severity: high}
            - remember: {kind: observation, text: '{{.Text}}', confidence: 0.9, step: 2, urgent: true}
            - delegate: {bot: b, task: t, inputs: [a.json, '{{.Text}}', 2], expected_outputs: '[{"name": "b.json"}]'}
        - match: '^quiet'
          actions: [{post_finding: {text: '{{.Text}}'}}]
`, minimalUsers)
	cfg := mustLoad(t, dir)
	rules := cfg.Bots[0].Brain.Rules
	name, args, ok := rules[0].Actions[0].Name()
	if !ok || name != "post_finding" || args["text"] != "{{index .Match 1}}" || args["severity"] != "high" {
		t.Errorf("first action = %q %v %v", name, args, ok)
	}
	_, args, _ = rules[0].Actions[1].Name()
	if args["confidence"] != "0.9" || args["step"] != "2" || args["urgent"] != "true" {
		t.Errorf("numbers and booleans as text: %v", args)
	}
	_, args, _ = rules[0].Actions[2].Name()
	if args["inputs"] != `["a.json","{{.Text}}",2]` || args["expected_outputs"] != `[{"name": "b.json"}]` {
		t.Errorf("a list as JSON text: %v", args)
	}
	if len(rules[1].Actions) != 1 || rules[1].Reply != "" {
		t.Errorf("a rule of actions alone = %+v", rules[1])
	}
}

func TestRuleActionErrors(t *testing.T) {
	// The shape of the items: each is reported with its line.
	errs := loadErrors(t, writeDir(t, `bots:
  - id: a
    brain:
      kind: script
      rules:
        - match: x
          actions:
            - post_finding: {text: {a: b}}
            - post_finding: text
            - post_finding: {text: a, text: b}
`, minimalUsers))
	for key, want := range map[string]string{
		"bots[0].brain.rules[0].actions[0].post_finding.text": "write a mapping as JSON text in quotes",
		"bots[0].brain.rules[0].actions[1].post_finding":      "expected a mapping",
		"bots[0].brain.rules[0].actions[2].post_finding.text": "duplicate key",
	} {
		e := findError(t, errs, BotsFile, key)
		if !strings.Contains(e.Message, want) || e.Line == 0 {
			t.Errorf("%s: %q (line %d), want %q with a line", key, e.Message, e.Line, want)
		}
	}
	// What they say.
	errs = loadErrors(t, writeDir(t, `bots:
  - id: a
    brain:
      kind: script
      rules:
        - match: x
          actions:
            - post_finding: {text: '{{.Text'}
            - {post_finding: {text: a}, remember: {text: b}}
            - Post-Finding: {text: a}
        - match: y
`, minimalUsers))
	for key, want := range map[string]string{
		"bots[0].brain.rules[0].actions[0].post_finding.text": "invalid template",
		"bots[0].brain.rules[0].actions[1]":                   "names one action",
		"bots[0].brain.rules[0].actions[2]":                   "not an action name",
		"bots[0].brain.rules[1].reply":                        "required unless the rule produces artifacts or takes actions",
	} {
		e := findError(t, errs, BotsFile, key)
		if !strings.Contains(e.Message, want) || e.Line == 0 {
			t.Errorf("%s: %q (line %d), want %q with a line", key, e.Message, e.Line, want)
		}
	}
}

func TestSharedFindings(t *testing.T) {
	if cfg := mustLoad(t, writeDir(t, minimalBots, minimalUsers)); cfg.Shared.Findings.Inject != DefaultSharedFindingsInject {
		t.Errorf("default inject = %d, want %d", cfg.Shared.Findings.Inject, DefaultSharedFindingsInject)
	}
	if cfg := mustLoad(t, writeDir(t, minimalBots+"shared:\n  findings: {inject: 0}\n", minimalUsers)); cfg.Shared.Findings.Inject != 0 {
		t.Errorf("inject 0 = %d", cfg.Shared.Findings.Inject)
	}
	errs := loadErrors(t, writeDir(t, minimalBots+"shared:\n  findings: {inject: -1, limit: 3}\n", minimalUsers))
	if e := findError(t, errs, BotsFile, "shared.findings.limit"); !strings.Contains(e.Message, "unknown key") {
		t.Errorf("unknown key: %q", e.Message)
	}
	errs = loadErrors(t, writeDir(t, minimalBots+"shared:\n  findings: {inject: -1}\n", minimalUsers))
	if e := findError(t, errs, BotsFile, "shared.findings.inject"); e.Line == 0 {
		t.Errorf("negative inject: %+v", e)
	}
}
