package config

import (
	"slices"
	"strings"
	"testing"
)

func TestGossipDefaults(t *testing.T) {
	g := mustLoad(t, writeDir(t, minimalBots, minimalUsers)).Shared.Gossip
	if !g.Enabled || g.MinMessages != 3 || g.Memories != 5 || g.Classifier != "" ||
		!slices.Equal(g.SensitiveTopics, DefaultGossipSensitiveTopics) || !slices.Equal(g.Patterns, DefaultGossipPatterns) {
		t.Errorf("defaults = %+v", g)
	}
	if !slices.Contains(g.SensitiveTopics, "don't tell") || len(g.Patterns) != 3 || g.Patterns[0].Topic != "career" {
		t.Errorf("SPEC's defaults missing: %+v", g)
	}
}

func TestGossipSettings(t *testing.T) {
	g := mustLoad(t, writeDir(t, minimalBots+`  - id: judge
    brain: {kind: script, default: none}
shared:
  gossip:
    enabled: false
    min_messages: 0
    memories: 0
    sensitive_topics: []
    patterns:
      - {match: '(?i)\bnew (puppy|kitten)\b', topic: pets}
    classifier: judge
`, minimalUsers)).Shared.Gossip
	if g.Enabled || g.MinMessages != 0 || g.Memories != 0 || len(g.SensitiveTopics) != 0 || g.Classifier != "judge" ||
		!slices.Equal(g.Patterns, []GossipPattern{{Match: `(?i)\bnew (puppy|kitten)\b`, Topic: "pets"}}) {
		t.Errorf("settings = %+v; zeros and empty lists are settings, not omissions", g)
	}
}

func TestGossipErrors(t *testing.T) {
	errs := loadErrors(t, writeDir(t, minimalBots+`  - id: kiosk
    public: true
    brain: {kind: script, default: hi}
shared:
  gossip:
    enabled: maybe
    min_messages: -1
    memories: -2
    sensitive_topics: [health, "  "]
    patterns:
      - {match: '(unclosed', topic: career}
      - {topic: career}
      - {match: 'x'}
      - {match: 'y', topic: "`+strings.Repeat("t", 65)+`"}
      - {match: 'z', topic: pets, colour: red}
    classifier: kiosk
`, minimalUsers))
	for key, want := range map[string]string{
		"shared.gossip.enabled":             "",
		"shared.gossip.min_messages":        "",
		"shared.gossip.memories":            "",
		"shared.gossip.sensitive_topics[1]": "must not be empty",
		"shared.gossip.patterns[0].match":   "not a valid Go regexp",
		"shared.gossip.patterns[1].match":   "required",
		"shared.gossip.patterns[2].topic":   "required",
		"shared.gossip.patterns[3].topic":   "longer than 64 characters",
		"shared.gossip.patterns[4].colour":  "",
		"shared.gossip.classifier":          "public",
	} {
		e := findError(t, errs, BotsFile, key)
		if !strings.Contains(e.Message, want) {
			t.Errorf("%s: %q, want %q", key, e.Message, want)
		}
	}
	errs = loadErrors(t, writeDir(t, minimalBots+`shared:
  gossip: {classifier: ab}
`, minimalUsers))
	if e := findError(t, errs, BotsFile, "shared.gossip.classifier"); !strings.Contains(e.Message, `"ab" is not a bot id (did you mean a?)`) {
		t.Errorf("an unknown classifier: %q", e.Message)
	}
}
