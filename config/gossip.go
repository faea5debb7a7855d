package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SharedGossip is shared.gossip (SPEC §10.5): news a person tells one bot
// reaching the other bots that know them. Every key takes effect live.
type SharedGossip struct {
	// Enabled turns gossip on (default true).
	Enabled bool `yaml:"enabled"`
	// MinMessages is how many messages a person must have sent a bot
	// before it hears news about them (default 3).
	MinMessages int `yaml:"min_messages"`
	// Memories is how many of a bot's newest memories of a person a
	// prompt shows (default 5); 0 shows none.
	Memories int `yaml:"memories"`
	// SensitiveTopics are the words that block news (default
	// DefaultGossipSensitiveTopics; an empty list blocks nothing by
	// word).
	SensitiveTopics []string `yaml:"sensitive_topics"`
	// Patterns are checked in order, the first match winning (default
	// DefaultGossipPatterns).
	Patterns []GossipPattern `yaml:"patterns"`
	// Classifier is the ID of a bot whose brain judges the messages no
	// pattern matched; "" for none.
	Classifier string `yaml:"classifier"`
}

// GossipPattern is one of shared.gossip.patterns: a message Match (a Go
// regexp) finds is news of Topic.
type GossipPattern struct {
	Match string `yaml:"match"`
	Topic string `yaml:"topic"`
}

// Defaults of shared.gossip (SPEC §10).
const (
	DefaultGossipMinMessages = 3
	DefaultGossipMemories    = 5
)

// DefaultGossipSensitiveTopics is shared.gossip.sensitive_topics when
// omitted.
var DefaultGossipSensitiveTopics = []string{
	"health", "medical", "doctor", "therapy", "medication", "diagnosis",
	"finance", "money", "debt", "salary", "income", "bankrupt",
	"relationship", "dating", "partner", "divorce", "breakup",
	"legal", "lawsuit", "arrest", "crime", "court",
	"secret", "private", "confidential", "don't tell",
}

// DefaultGossipPatterns is shared.gossip.patterns when omitted.
var DefaultGossipPatterns = []GossipPattern{
	{Match: `(?i)\b(got a new job|started (a )?new job|got promoted)\b`, Topic: "career"},
	{Match: `(?i)\b(moving to|moved to|relocating to)\b`, Topic: "relocation"},
	{Match: `(?i)\b(graduating|graduated|got my degree)\b`, Topic: "education"},
}

// maxGossipTopic is the longest topic, in characters.
const maxGossipTopic = 64

// applyGossipDefaults fills in what shared.gossip leaves out.
func applyGossipDefaults(g *SharedGossip, doc *index) {
	setIfOmitted(doc, "shared.gossip.enabled", &g.Enabled, true)
	setIfOmitted(doc, "shared.gossip.min_messages", &g.MinMessages, DefaultGossipMinMessages)
	setIfOmitted(doc, "shared.gossip.memories", &g.Memories, DefaultGossipMemories)
	setIfOmitted(doc, "shared.gossip.sensitive_topics", &g.SensitiveTopics, slices.Clone(DefaultGossipSensitiveTopics))
	setIfOmitted(doc, "shared.gossip.patterns", &g.Patterns, slices.Clone(DefaultGossipPatterns))
}

// validateGossip checks shared.gossip against the bots.
func validateGossip(r *report, g *SharedGossip, bots []Bot) {
	const key = "shared.gossip"
	atLeast(r, key+".min_messages", g.MinMessages, 0)
	atLeast(r, key+".memories", g.Memories, 0)
	for i, w := range g.SensitiveTopics {
		if strings.TrimSpace(w) == "" {
			r.errorf(fmt.Sprintf("%s.sensitive_topics[%d]", key, i), "must not be empty")
		}
	}
	for i, p := range g.Patterns {
		k := fmt.Sprintf("%s.patterns[%d]", key, i)
		if p.Match == "" {
			r.errorf(k+".match", "required")
		} else if _, err := regexp.Compile(p.Match); err != nil {
			r.errorf(k+".match", "not a valid Go regexp: %v", err)
		}
		switch topic := p.Topic; {
		case strings.TrimSpace(topic) == "":
			r.errorf(k+".topic", "required")
		case utf8.RuneCountInString(topic) > maxGossipTopic:
			r.errorf(k+".topic", "longer than %d characters", maxGossipTopic)
		case strings.IndexFunc(topic, unicode.IsControl) >= 0:
			r.errorf(k+".topic", "holds a control character")
		}
	}
	if id := g.Classifier; id != "" {
		i := slices.IndexFunc(bots, func(b Bot) bool { return b.ID == id })
		switch {
		case i < 0:
			r.errorf(key+".classifier", "%q is not a bot id%s", id, closestBot(id, bots))
		case bots[i].Public:
			r.errorf(key+".classifier", "bot %s is public: a public bot takes no part in the shared world", id)
		}
	}
}
