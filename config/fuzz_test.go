package config

import (
	"errors"
	"os"
	"testing"
)

// FuzzLoad feeds arbitrary bytes as bots.yaml: parsing must never panic,
// and must return either a Config or Errors that each name the file.
func FuzzLoad(f *testing.F) {
	for _, path := range []string{"../bots.yaml", "testdata/full/bots.yaml"} {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"", "bots: [", minimalBots, "- a\n", "a: &a [*a]\n", "---\n---\n",
		"bots:\n  - id: a\n    brain: &b {kind: script, default: hi, <<: *b}\n",
		"gateway: {delegation: {max_depth: 1e9, cooldown: -1h}}\n",
		"gateway: {retention: {anonymous: 30d, messages: 1d12h}}\n" + minimalBots,
		"gateway: {retention: {anonymous: 106752d}}\n",
		"gateway: {web: {a: 1, b: 2, c: 3}}\n",
		"gateway: {database_env: SB_DB, database: 'postgres://u:p@h/db'}\n" + minimalBots,
		"bots:\n  - {id: a, brain: {kind: script, rules: [{match: '(', reply: '{{'}]}}\n",
		"bots:\n  - {id: a, brain: {kind: script, rules: [{match: x, actions: [{post_finding: {text: 1, severity: [x]}}, {a: {}, b: {}}, {c: x}]}]}}\n",
		"shared: {findings: {inject: -3}}\n" + minimalBots,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parse("/cfg", data, []byte(minimalUsers), options{})
		if (cfg == nil) == (err == nil) {
			t.Fatalf("parse returned config %v and error %v", cfg != nil, err)
		}
		if err == nil {
			return
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error %T %v, want non-empty Errors", err, err)
		}
		for _, e := range errs {
			if e.File != BotsFile || e.Message == "" || e.Line < 0 {
				t.Fatalf("bad error %#v", e)
			}
		}
		_ = errs.Error()
	})
}
