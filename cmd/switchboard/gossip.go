package main

import (
	"regexp"

	"github.com/switchboard-chat/switchboard/config"
	"github.com/switchboard-chat/switchboard/world/gossip"
)

// gossipSettings are shared.gossip for the grapevine. The patterns were
// compiled once already, when the configuration was checked.
func gossipSettings(cfg *config.Config) gossip.Settings {
	g := cfg.Shared.Gossip
	s := gossip.Settings{
		Enabled: g.Enabled, MinMessages: g.MinMessages, Memories: g.Memories,
		SensitiveTopics: g.SensitiveTopics, Classifier: g.Classifier,
	}
	for _, p := range g.Patterns {
		if re, err := regexp.Compile(p.Match); err == nil {
			s.Patterns = append(s.Patterns, gossip.Pattern{Match: re, Topic: p.Topic})
		}
	}
	return s
}
