package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sync"

	"github.com/switchboard-chat/switchboard/brains"
	execbrain "github.com/switchboard-chat/switchboard/brains/exec"
	"github.com/switchboard-chat/switchboard/brains/openai"
	"github.com/switchboard-chat/switchboard/brains/script"
	"github.com/switchboard-chat/switchboard/config"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/identity"
	"github.com/switchboard-chat/switchboard/platforms/discord"
	"github.com/switchboard-chat/switchboard/platforms/telegram"
	"github.com/switchboard-chat/switchboard/retention"
	"github.com/switchboard-chat/switchboard/world/insights"
	"github.com/switchboard-chat/switchboard/world/shared"
)

// apply turns a validated configuration into the gateway's roster and user
// directory and publishes both, and hands each platform its bots.
func (m *Main) apply(cfg *config.Config) error {
	roster, err := m.brains.roster(cfg, m.Logger)
	if err != nil {
		return err
	}
	dir, err := buildDirectory(cfg)
	if err != nil {
		return err
	}
	m.gw.SetRoster(roster)
	m.gw.SetDirectory(dir)
	d := cfg.Gateway.Delegation
	limits := delegation.DefaultLimits
	limits.MaxDepth, limits.Cooldown = d.MaxDepth, d.Cooldown
	m.gw.SetDelegation(gateway.DelegationSettings{Limits: limits, ContextMessages: d.ContextMessages, Timeout: d.Timeout})
	m.gw.SetCrossbot(crossbotSettings(cfg.Gateway.Crossbot))
	if m.links != nil {
		// Before the platforms, which report on the new settings.
		m.links.configure(cfg)
	}
	if m.discord != nil {
		m.discord.Configure(discordBots(cfg))
	}
	if m.telegram != nil {
		m.telegram.Configure(telegramBots(cfg))
	}
	m.retain.Configure(retentionPolicy(cfg))
	m.board.SetInject(cfg.Shared.Findings.Inject)
	m.insights.Configure(insightSettings(cfg))
	m.gossip.Configure(gossipSettings(cfg))
	m.context.SetLimits(contextLimits(cfg))
	return nil
}

// contextLimits is shared.context.
func contextLimits(cfg *config.Config) shared.Limits {
	c := cfg.Shared.Context
	return shared.Limits{Events: c.Events, Entities: c.Entities, Facts: c.Facts, MinConfidence: c.MinConfidence, Chain: c.Chain}
}

// insightSettings is shared.insights.
func insightSettings(cfg *config.Config) insights.Settings {
	in := cfg.Shared.Insights
	return insights.Settings{Enabled: in.Enabled, Threshold: in.ConfidenceThreshold, Limit: in.Limit}
}

// retentionPolicy is gateway.retention, with the identities users.yaml
// lists: nothing of theirs is deleted as an anonymous visitor's.
func retentionPolicy(cfg *config.Config) retention.Policy {
	listed := map[string]bool{}
	for _, u := range cfg.Users.Users {
		for _, id := range u.Identities {
			listed[id] = true
		}
	}
	r := cfg.Gateway.Retention
	return retention.Policy{Anonymous: r.Anonymous, Messages: r.Messages, Listed: func(id string) bool { return listed[id] }}
}

// reload is the config watcher's subscriber: a valid edit takes effect
// without a restart, except the keys that need one, which it names.
func (m *Main) reload(old, cfg *config.Config) {
	if err := m.apply(cfg); err != nil {
		m.Logger.Error("config reload rejected", "err", err)
		return
	}
	m.web.Configure(webSettings(cfg, m.Logger))
	m.admin.SetSecureCookies(cfg.Gateway.Web.SecureCookies)
	if old.Gateway.Listen != cfg.Gateway.Listen {
		m.Logger.Warn("gateway.listen changed; restart switchboard for it to take effect", "running", old.Gateway.Listen, "new", cfg.Gateway.Listen)
	}
	if old.DatabaseSource() != cfg.DatabaseSource() {
		m.Logger.Warn("gateway.database changed; restart switchboard for it to take effect", "running", old.DatabaseSource(), "new", cfg.DatabaseSource())
	}
	m.Logger.Info("configuration reloaded", "bots", len(cfg.Bots), "users", len(cfg.Users.Users))
}

// brainSet builds bots' brains and keeps them across reloads while their
// configuration is unchanged, so a brain's own state (an exec brain's
// memory of outputs, an openai brain's tool support) survives edits of
// other bots.
type brainSet struct {
	workRoot string
	// tools serves exec brains' turns their actions (the /mcp endpoint).
	tools execbrain.Tools
	mu    sync.Mutex
	built map[string]builtBrain
	// contained logs, once, the containment exec brains get here.
	contained sync.Once
}

type builtBrain struct {
	cfg    config.Brain
	apiKey string
	brain  brains.Brain
}

// roster makes the gateway's bots, each with its brain.
func (s *brainSet) roster(cfg *config.Config, log *slog.Logger) (*gateway.Roster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]builtBrain, len(cfg.Bots))
	bots := make([]*gateway.Bot, 0, len(cfg.Bots))
	for i := range cfg.Bots {
		cb := &cfg.Bots[i]
		key := ""
		if cb.Brain.APIKeyEnv != "" {
			key = os.Getenv(cb.Brain.APIKeyEnv)
		}
		if cb.Brain.Kind == config.KindExec {
			s.contained.Do(func() { execbrain.Probe().Log(log) })
		}
		prev, ok := s.built[cb.ID]
		brain := prev.brain
		if !ok || !reflect.DeepEqual(prev.cfg, cb.Brain) || prev.apiKey != key {
			var err error
			if brain, err = buildBrain(cb, key, s.workRoot, s.tools, log); err != nil {
				return nil, fmt.Errorf("bot %s: %w", cb.ID, err)
			}
		}
		next[cb.ID] = builtBrain{cfg: cb.Brain, apiKey: key, brain: brain}
		b := &gateway.Bot{
			ID:            cb.ID,
			Name:          cb.Name,
			Aliases:       cb.Aliases,
			Public:        cb.Public,
			Persona:       cb.Persona,
			Brain:         brain,
			BrainKind:     cb.Brain.Kind,
			Timeout:       cb.Brain.Timeout,
			HistoryWindow: cb.Brain.ContextMessages,
			SessionScope:  cb.Groups.SessionScope,
			Allow:         cb.Delegation.Allow,
			Triggers:      cb.Delegation.Triggers,
		}
		for _, p := range []string{gateway.PlatformWeb, gateway.PlatformTelegram, gateway.PlatformDiscord} {
			if cb.On(p) {
				b.Platforms = append(b.Platforms, p)
			}
		}
		// Every bot is reachable from the terminal (SPEC §9); the cli
		// platform's PrivateChat keeps §3's routing to people who spoke
		// to the bot there.
		b.Platforms = append(b.Platforms, gateway.PlatformCLI)
		bots = append(bots, b)
	}
	s.built = next
	return gateway.NewRoster(bots), nil
}

// buildBrain picks the brain implementation for a bot; exec brains get
// tools, the MCP endpoint of their turns' actions.
func buildBrain(b *config.Bot, apiKey, workRoot string, tools execbrain.Tools, log *slog.Logger) (brains.Brain, error) {
	log = log.With("bot", b.ID)
	switch b.Brain.Kind {
	case "script":
		sc := scriptConfig(&b.Brain)
		sc.Logger = log
		return script.New(sc)
	case "exec":
		eb, err := execbrain.New(execbrain.Config{
			Command: b.Brain.Command, ResumeCommand: b.Brain.ResumeCommand, Env: b.Brain.Env,
			Timeout: b.Brain.Timeout, WorkRoot: filepath.Join(workRoot, b.ID), Logger: log,
			ContextMessages: b.Brain.ContextMessages, RunAs: b.Brain.RunAs, Tools: tools,
		})
		if err != nil {
			return nil, err
		}
		warnRunsAsRoot(eb, log)
		return eb, nil
	case "openai":
		if b.Brain.APIKeyEnv != "" && apiKey == "" {
			log.Warn("openai brain: api key variable is unset; requests go without a key", "env", b.Brain.APIKeyEnv)
		}
		return openai.New(openai.Config{
			BaseURL: b.Brain.BaseURL, Model: b.Brain.Model, APIKey: apiKey, Timeout: b.Brain.Timeout,
			ContextMessages: b.Brain.ContextMessages, TokenBudget: openaiTokenBudget,
			Temperature: b.Brain.Temperature, MaxTokens: b.Brain.MaxTokens, Logger: log,
		})
	}
	return nil, fmt.Errorf("unknown brain kind %q", b.Brain.Kind)
}

// warnRunsAsRoot says, when a bot's programs run as root, what they can
// reach (SPEC §12: brain.run_as is the remedy).
func warnRunsAsRoot(eb *execbrain.Brain, log *slog.Logger) {
	if !eb.RunsAsRoot() {
		return
	}
	if execbrain.Probe().UserNS {
		log.Warn("exec brain: its programs run as root and can read every file root can, the database included (not the gateway's environment or memory); set brain.run_as to run them as another user")
		return
	}
	log.Warn("exec brain: its programs run as root and can read the gateway's environment (every token), its memory and every file root can; set brain.run_as to run them as another user")
}

// telegramBots lists the bots with a Telegram section whose token is set.
func telegramBots(cfg *config.Config) []telegram.BotConfig {
	var out []telegram.BotConfig
	for _, b := range cfg.Bots {
		t := b.Platforms.Telegram
		if t == nil || t.TokenEnv == "" || os.Getenv(t.TokenEnv) == "" {
			continue
		}
		bc := telegram.BotConfig{BotID: b.ID, Token: os.Getenv(t.TokenEnv), APIURL: t.APIURL, Mode: t.Mode, WebhookURL: t.Webhook.URL}
		if t.Webhook.SecretEnv != "" {
			bc.WebhookSecret = os.Getenv(t.Webhook.SecretEnv)
		}
		out = append(out, bc)
	}
	return out
}

// openaiTokenBudget is the estimated prompt size (about four characters a
// token) an openai brain trims its history to, on top of context_messages:
// small enough for an 8k-context local model, a fraction of a cloud model's.
const openaiTokenBudget = 6000

// discordBots lists the bots with a Discord section whose token is set.
func discordBots(cfg *config.Config) []discord.BotConfig {
	var out []discord.BotConfig
	for _, b := range cfg.Bots {
		d := b.Platforms.Discord
		if d == nil || d.TokenEnv == "" || os.Getenv(d.TokenEnv) == "" {
			continue
		}
		out = append(out, discord.BotConfig{BotID: b.ID, Token: os.Getenv(d.TokenEnv), APIURL: d.APIURL, GatewayURL: d.GatewayURL})
	}
	return out
}

// buildDirectory makes the identity directory from users.yaml.
func buildDirectory(cfg *config.Config) (*identity.Directory, error) {
	users := make([]identity.User, 0, len(cfg.Users.Users))
	for _, u := range cfg.Users.Users {
		share, invisible := u.EffectivePrivacy(cfg.Users.Defaults.Privacy)
		users = append(users, identity.User{
			ID: u.ID, Name: u.Name, Identities: u.Identities,
			ShareWithOtherBots: share, Invisible: invisible,
		})
	}
	return identity.NewDirectory(users)
}

// logSkippedPlatforms says, once per bot and platform, why Telegram and
// Discord are not connected.
func logSkippedPlatforms(cfg *config.Config, log *slog.Logger) {
	for _, b := range cfg.Bots {
		if t := b.Platforms.Telegram; t != nil {
			logPlatform(log, b.ID, "telegram", t.TokenEnv)
		}
		if d := b.Platforms.Discord; d != nil {
			logPlatform(log, b.ID, "discord", d.TokenEnv)
		}
	}
}

func logPlatform(log *slog.Logger, bot, platform, env string) {
	if env == "" || os.Getenv(env) == "" {
		log.Info(platform+" skipped: token variable unset", "bot", bot, "env", env)
	}
}
