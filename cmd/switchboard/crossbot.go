package main

import (
	"github.com/switchboard-chat/switchboard/config"
	"github.com/switchboard-chat/switchboard/world/chains"
)

// crossbotSettings is gateway.crossbot as the gateway's chains take it
// (SPEC §10.6).
func crossbotSettings(c config.CrossbotLimits) chains.Settings {
	s := chains.Settings{
		Enabled: c.Enabled, MaxChain: c.MaxChain, ResponseChance: c.ResponseChance,
		Cooldown: c.Cooldown, Burst: c.Burst,
	}
	if c.Seed != nil {
		s.Seeded, s.Seed = true, int64(*c.Seed)
	}
	return s
}
