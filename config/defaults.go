package config

import (
	"fmt"
	"slices"
	"time"
)

// Defaults of the gateway section, applied when a key is omitted.
const (
	DefaultListen                    = "127.0.0.1:8080"
	DefaultDatabase                  = "switchboard.db"
	DefaultDelegationMaxDepth        = 3
	DefaultDelegationCooldown        = 30 * time.Second
	DefaultDelegationContextMessages = 3
	DefaultDelegationTimeout         = 5 * time.Minute
	DefaultCrossbotMaxChain          = 3
	DefaultCrossbotResponseChance    = 0.35
	DefaultCrossbotCooldown          = 6 * time.Hour
	DefaultCrossbotBurst             = 30 * time.Second
	DefaultRetentionAnonymous        = 30 * 24 * time.Hour
	DefaultSharedFindingsInject      = 15
	DefaultSharedInsightsThreshold   = 0.7
	DefaultSharedInsightsLimit       = 3
	DefaultSharedContextEvents       = 10
	DefaultSharedContextEntities     = 20
	DefaultSharedContextFacts        = 20
	DefaultSharedContextConfidence   = 0.5
	DefaultSharedContextChain        = 5
	// Limits of the web widget (SPEC §12).
	DefaultWebMaxConnectionsPerIP           = 100
	DefaultWebMaxMessagesPerSecondPerPerson = 5.0
	DefaultWebMaxMessagesPerSecondPerIP     = 2.0
)

// A default replaces a number or duration only when its key is omitted (or
// null): `cooldown: 0s` and `response_chance: 0` are meaningful settings.
// An empty string counts as omitted, since no string key is useful empty.

// applyBotsDefaults fills in what bots.yaml leaves out.
func applyBotsDefaults(cfg *Config, doc *index) {
	g := &cfg.Gateway
	setString(&g.Listen, DefaultListen)
	if g.DatabaseEnv == "" {
		setString(&g.Database, DefaultDatabase)
	}
	setIfOmitted(doc, "gateway.web.max_connections_per_ip", &g.Web.MaxConnectionsPerIP, DefaultWebMaxConnectionsPerIP)
	setIfOmitted(doc, "gateway.web.max_messages_per_second_per_person", &g.Web.MaxMessagesPerSecondPerPerson, DefaultWebMaxMessagesPerSecondPerPerson)
	setIfOmitted(doc, "gateway.web.max_messages_per_second_per_ip", &g.Web.MaxMessagesPerSecondPerIP, DefaultWebMaxMessagesPerSecondPerIP)
	setIfOmitted(doc, "gateway.delegation.max_depth", &g.Delegation.MaxDepth, DefaultDelegationMaxDepth)
	setIfOmitted(doc, "gateway.delegation.cooldown", &g.Delegation.Cooldown, DefaultDelegationCooldown)
	setIfOmitted(doc, "gateway.delegation.context_messages", &g.Delegation.ContextMessages, DefaultDelegationContextMessages)
	setIfOmitted(doc, "gateway.delegation.timeout", &g.Delegation.Timeout, DefaultDelegationTimeout)
	setIfOmitted(doc, "gateway.crossbot.max_chain", &g.Crossbot.MaxChain, DefaultCrossbotMaxChain)
	setIfOmitted(doc, "gateway.crossbot.response_chance", &g.Crossbot.ResponseChance, DefaultCrossbotResponseChance)
	setIfOmitted(doc, "gateway.crossbot.cooldown", &g.Crossbot.Cooldown, DefaultCrossbotCooldown)
	setIfOmitted(doc, "gateway.crossbot.burst", &g.Crossbot.Burst, DefaultCrossbotBurst)
	setIfOmitted(doc, "gateway.crossbot.enabled", &g.Crossbot.Enabled, true)
	setIfOmitted(doc, "gateway.retention.anonymous", &g.Retention.Anonymous, DefaultRetentionAnonymous)
	setIfOmitted(doc, "shared.findings.inject", &cfg.Shared.Findings.Inject, DefaultSharedFindingsInject)
	setIfOmitted(doc, "shared.insights.enabled", &cfg.Shared.Insights.Enabled, true)
	setIfOmitted(doc, "shared.insights.confidence_threshold", &cfg.Shared.Insights.ConfidenceThreshold, DefaultSharedInsightsThreshold)
	setIfOmitted(doc, "shared.insights.limit", &cfg.Shared.Insights.Limit, DefaultSharedInsightsLimit)
	setIfOmitted(doc, "shared.context.events", &cfg.Shared.Context.Events, DefaultSharedContextEvents)
	setIfOmitted(doc, "shared.context.entities", &cfg.Shared.Context.Entities, DefaultSharedContextEntities)
	setIfOmitted(doc, "shared.context.facts", &cfg.Shared.Context.Facts, DefaultSharedContextFacts)
	setIfOmitted(doc, "shared.context.min_confidence", &cfg.Shared.Context.MinConfidence, DefaultSharedContextConfidence)
	setIfOmitted(doc, "shared.context.chain", &cfg.Shared.Context.Chain, DefaultSharedContextChain)
	applyGossipDefaults(&cfg.Shared.Gossip, doc)

	for i := range cfg.Bots {
		b := &cfg.Bots[i]
		key := fmt.Sprintf("bots[%d]", i)
		setString(&b.Name, b.ID)
		setString(&b.Groups.SessionScope, ScopeUser)
		if !doc.set(key + ".delegation.triggers") {
			b.Delegation.Triggers = slices.Clone(DefaultTriggers)
		}
		applyBrainDefaults(&b.Brain, doc, key+".brain")
		applyPlatformDefaults(&b.Platforms, doc, key+".platforms")
	}
}

// applyBrainDefaults fills in a brain's omitted keys for its kind.
func applyBrainDefaults(br *Brain, doc *index, key string) {
	setIfOmitted(doc, key+".timeout", &br.Timeout, defaultBrainTimeout(br.Kind))
	switch br.Kind {
	case KindScript:
		for i := range br.Rules {
			for j := range br.Rules[i].Artifacts {
				setString(&br.Rules[i].Artifacts[j].MediaType, DefaultArtifactMediaType)
			}
		}
	case KindExec:
		if !doc.set(key + ".resume_command") {
			br.ResumeCommand = slices.Clone(br.Command)
		}
	case KindOpenAI:
		setIfOmitted(doc, key+".context_messages", &br.ContextMessages, DefaultOpenAIContextMessages)
	}
}

// applyPlatformDefaults makes a platform written with an empty value
// (`web:`) count as present, and sets Telegram's mode.
func applyPlatformDefaults(p *Platforms, doc *index, key string) {
	if p.Web == nil && doc.has(key+".web") {
		p.Web = &Web{}
	}
	if p.Telegram == nil && doc.has(key+".telegram") {
		p.Telegram = &Telegram{}
	}
	if p.Discord == nil && doc.has(key+".discord") {
		p.Discord = &Discord{}
	}
	if p.Telegram != nil {
		setString(&p.Telegram.Mode, ModePolling)
	}
}

// applyUsersDefaults fills in what users.yaml leaves out.
func applyUsersDefaults(us *Users) {
	if us.Defaults.Privacy.ShareWithOtherBots == nil {
		us.Defaults.Privacy.ShareWithOtherBots = ptr(true)
	}
	if us.Defaults.Privacy.Invisible == nil {
		us.Defaults.Privacy.Invisible = ptr(false)
	}
	for i := range us.Users {
		setString(&us.Users[i].Name, us.Users[i].ID)
	}
}

// setString sets *s to def when it is empty.
func setString(s *string, def string) {
	if *s == "" {
		*s = def
	}
}

// setIfOmitted sets *v to def when the key is not written in the file.
func setIfOmitted[T any](doc *index, key string, v *T, def T) {
	if !doc.set(key) {
		*v = def
	}
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }
