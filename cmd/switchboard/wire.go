package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/brains/script"
	"github.com/switchboard-chat/switchboard/config"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/identity"
)

// apply turns a validated configuration into the gateway's roster and user
// directory and publishes both.
func (m *Main) apply(cfg *config.Config) error {
	roster, err := buildRoster(cfg)
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
	return nil
}

// reload is the config watcher's subscriber: a valid edit takes effect
// without a restart, except the keys that need one, which it names.
func (m *Main) reload(old, cfg *config.Config) {
	if err := m.apply(cfg); err != nil {
		m.Logger.Error("config reload rejected", "err", err)
		return
	}
	m.web.Configure(webSecret(cfg, m.Logger), cfg.Gateway.Web.AllowedOrigins)
	if old.Gateway.Listen != cfg.Gateway.Listen {
		m.Logger.Warn("gateway.listen changed; restart switchboard for it to take effect", "running", old.Gateway.Listen, "new", cfg.Gateway.Listen)
	}
	if old.DatabasePath() != cfg.DatabasePath() {
		m.Logger.Warn("gateway.database changed; restart switchboard for it to take effect", "running", old.DatabasePath(), "new", cfg.DatabasePath())
	}
	m.Logger.Info("configuration reloaded", "bots", len(cfg.Bots), "users", len(cfg.Users.Users))
}

// buildRoster makes the gateway's bots, each with its brain.
func buildRoster(cfg *config.Config) (*gateway.Roster, error) {
	bots := make([]*gateway.Bot, 0, len(cfg.Bots))
	for i := range cfg.Bots {
		cb := &cfg.Bots[i]
		brain, err := buildBrain(cb)
		if err != nil {
			return nil, fmt.Errorf("bot %s: %w", cb.ID, err)
		}
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
		bots = append(bots, b)
	}
	return gateway.NewRoster(bots), nil
}

// buildBrain picks the brain implementation for a bot.
func buildBrain(b *config.Bot) (brains.Brain, error) {
	switch b.Brain.Kind {
	case "script":
		sc := script.Config{Default: b.Brain.Default}
		for _, r := range b.Brain.Rules {
			rule := script.Rule{Match: r.Match, Reply: r.Reply}
			for _, a := range r.Artifacts {
				rule.Artifacts = append(rule.Artifacts, script.ArtifactTemplate{Name: a.Name, MediaType: a.MediaType, Content: a.Content})
			}
			sc.Rules = append(sc.Rules, rule)
		}
		return script.New(sc)
	default:
		return unavailableBrain{kind: b.Brain.Kind}, nil
	}
}

// unavailableBrain stands in for brain kinds this build does not run yet
// (exec and openai arrive with issue 6): every turn fails with a clear
// reason, so the user gets the bot's apology and the log says why.
type unavailableBrain struct{ kind string }

func (u unavailableBrain) Reply(context.Context, brains.Turn) (brains.Reply, error) {
	return brains.Reply{}, fmt.Errorf("brain kind %q is not supported by this build yet", u.kind)
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
		return
	}
	log.Warn(platform+" adapter is not part of this build yet; the bot is reachable on the web only", "bot", bot)
}
