// Package config loads, validates and watches Switchboard's two
// configuration files, bots.yaml and users.yaml (SPEC §2).
//
// Load reads both files into one Config snapshot, or reports every problem
// at once as Errors, each naming its file, key path and line. A Watcher
// keeps the last good snapshot and replaces it when an edit validates.
//
// A Config is immutable once returned: callers share it between goroutines
// and must not modify it or the slices it holds.
package config

import (
	"path/filepath"
	"strings"
	"time"
)

// Config is one validated snapshot of bots.yaml and users.yaml, with
// defaults applied.
type Config struct {
	// Dir is the absolute path of the configuration directory.
	Dir string
	// Gateway holds the process-wide settings of bots.yaml.
	Gateway Gateway
	// Bots lists the bots in the order bots.yaml declares them.
	Bots []Bot
	// Shared is bots.yaml's shared section: the shared world (SPEC §10).
	Shared Shared
	// Users is the content of users.yaml.
	Users Users
	// Warnings are the problems found that do not stop the configuration
	// from loading (an openai base_url without a version, say), sorted
	// by file then line.
	Warnings Errors
}

// DatabasePath returns gateway.database, the SQLite database, ready to
// open: a relative path is joined to Dir, while an absolute path, a SQLite
// "file:" URI and ":memory:" are returned as written. It is "" when the
// store is PostgreSQL (gateway.database_env); see PostgresURL.
func (c *Config) DatabasePath() string {
	db := c.Gateway.Database
	switch {
	case db == "":
		return ""
	case strings.HasPrefix(db, "file:"), db == ":memory:", filepath.IsAbs(db):
		return db
	}
	return filepath.Join(c.Dir, db)
}

// DatabaseSource says which database the configuration names, for
// comparing two configurations and for logs: the SQLite path of
// DatabasePath, or "$NAME" for the variable gateway.database_env names.
// It never holds a URL.
func (c *Config) DatabaseSource() string {
	if c.Gateway.DatabaseEnv != "" {
		return "$" + c.Gateway.DatabaseEnv
	}
	return c.DatabasePath()
}

// Bot returns the bot with the given ID. The result points into c.Bots and
// must not be modified.
func (c *Config) Bot(id string) (*Bot, bool) {
	for i := range c.Bots {
		if c.Bots[i].ID == id {
			return &c.Bots[i], true
		}
	}
	return nil, false
}

// Shared is the shared section of bots.yaml (SPEC §10). Every key takes
// effect live.
type Shared struct {
	// Findings configures the findings board.
	Findings SharedFindings `yaml:"findings"`
	// Insights configures what bots find of each other's insights.
	Insights SharedInsights `yaml:"insights"`
	// Gossip configures gossip (gossip.go).
	Gossip SharedGossip `yaml:"gossip"`
	// Context bounds the shared context a prompt gets.
	Context SharedContext `yaml:"context"`
}

// SharedContext is shared.context (SPEC §10.7): how much of a space's
// shared context a prompt (and a script template's .Context) gets.
type SharedContext struct {
	// Events is how many of the newest events (default 10).
	Events int `yaml:"events"`
	// Entities is how many of the most recently updated entities
	// (default 20).
	Entities int `yaml:"entities"`
	// Facts is how many of the newest facts (default 20).
	Facts int `yaml:"facts"`
	// MinConfidence keeps the facts of at least this confidence
	// (default 0.5), from 0 to 1.
	MinConfidence float64 `yaml:"min_confidence"`
	// Chain is how many of the artifact chain's newest steps; an exec
	// turn finds their outputs under artifacts/ (default 5).
	Chain int `yaml:"chain"`
}

// SharedFindings is shared.findings.
type SharedFindings struct {
	// Inject is how many of a space's newest findings a prompt (and a
	// script template's .Findings) gets (default 15); 0 gives none.
	Inject int `yaml:"inject"`
}

// SharedInsights is shared.insights (SPEC §10.4): which insights other
// bots left about a person a turn finds.
type SharedInsights struct {
	// Enabled turns the finding on (default true); remember stores
	// insights either way.
	Enabled bool `yaml:"enabled"`
	// ConfidenceThreshold is the least confidence of an insight a turn
	// finds (default 0.7), from 0 to 1.
	ConfidenceThreshold float64 `yaml:"confidence_threshold"`
	// Limit is how many insights a turn finds at most (default 3); 0
	// finds none.
	Limit int `yaml:"limit"`
}

// Gateway is the gateway section of bots.yaml.
type Gateway struct {
	// Listen is the HTTP listen address (default 127.0.0.1:8080). A change
	// needs a restart.
	Listen string `yaml:"listen"`
	// Database is the SQLite path as written (default switchboard.db,
	// unless DatabaseEnv is set); use Config.DatabasePath to open it. A
	// change needs a restart.
	Database string `yaml:"database"`
	// DatabaseEnv names the environment variable holding a postgres://
	// URL, which makes the store PostgreSQL (SPEC §11); use
	// Config.PostgresURL to read it. At most one of Database and
	// DatabaseEnv is set. A change needs a restart.
	DatabaseEnv string `yaml:"database_env"`
	// Web configures the web widget's identities and origins.
	Web WebSettings `yaml:"web"`
	// Delegation holds the limits on bot-to-bot hand-offs.
	Delegation DelegationLimits `yaml:"delegation"`
	// Crossbot holds the limits on bot-to-bot talk in shared groups.
	Crossbot CrossbotLimits `yaml:"crossbot"`
	// Retention says how long data is kept.
	Retention Retention `yaml:"retention"`
}

// Retention is gateway.retention (SPEC §12). Durations accept days:
// "30d", "1d12h".
type Retention struct {
	// Anonymous is how long an anonymous web visitor's data is kept after
	// their last message (default 30d); 0 keeps it forever.
	Anonymous time.Duration `yaml:"anonymous"`
	// Messages is how long anyone's messages are kept (default 0:
	// forever); sessions, chats and delegation records stay.
	Messages time.Duration `yaml:"messages"`
}

// WebSettings is gateway.web.
type WebSettings struct {
	// SecretEnv names the environment variable holding the HMAC key for
	// verified web users; empty or unset means anonymous users only.
	SecretEnv string `yaml:"secret_env"`
	// AllowedOrigins lists origins ("https://example.com") or "*" that may
	// open /ws; empty means same origin only.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// SecureCookies marks the dashboard's session cookie Secure on plain
	// HTTP too, for a gateway behind a TLS proxy (default false; over TLS
	// the cookie is always Secure). Live.
	SecureCookies bool `yaml:"secure_cookies"`
	// MaxConnectionsPerIP bounds the open /ws connections from one remote
	// address (default 100); 0 means no limit.
	MaxConnectionsPerIP int `yaml:"max_connections_per_ip"`
	// MaxMessagesPerSecondPerPerson is the sustained rate of messages one
	// person may send across all their connections (default 5); 0 means
	// no limit.
	MaxMessagesPerSecondPerPerson float64 `yaml:"max_messages_per_second_per_person"`
	// MaxMessagesPerSecondPerIP is the sustained rate of messages that
	// anonymous visitors from one address may send together (default 2);
	// 0 means no limit.
	MaxMessagesPerSecondPerIP float64 `yaml:"max_messages_per_second_per_ip"`
}

// DelegationLimits is gateway.delegation.
type DelegationLimits struct {
	// MaxDepth is the deepest hand-off chain allowed (default 3).
	MaxDepth int `yaml:"max_depth"`
	// Cooldown is the minimum time between hand-offs of one (from bot,
	// to bot, user) (default 30s).
	Cooldown time.Duration `yaml:"cooldown"`
	// ContextMessages is how many recent messages go into the hand-off
	// wrapper (default 3).
	ContextMessages int `yaml:"context_messages"`
	// Timeout bounds a delegated turn (default 5m).
	Timeout time.Duration `yaml:"timeout"`
}

// CrossbotLimits is gateway.crossbot: bot-to-bot chains in group chats
// (SPEC §10.6). Every key is live.
type CrossbotLimits struct {
	// Enabled turns chains on (default true). Off, a bot's message in a
	// group wakes no other bot (a hand-off trigger aside).
	Enabled bool `yaml:"enabled"`
	// MaxChain is the most steps of one chain, the last one a closing
	// turn (default 3); 0 allows none.
	MaxChain int `yaml:"max_chain"`
	// ResponseChance is the probability, in [0,1], that a bot mentioned
	// in another bot's message answers it (default 0.35); a name in
	// plain text gets 0.3 times it.
	ResponseChance float64 `yaml:"response_chance"`
	// Cooldown is how long after a chain with at least one step no new
	// chain starts in that chat (default 6h).
	Cooldown time.Duration `yaml:"cooldown"`
	// Burst is the time within which consecutive messages of one bot
	// count as one message (default 30s).
	Burst time.Duration `yaml:"burst"`
	// Seed, when set, makes the response draws reproducible.
	Seed *int `yaml:"seed"`
}

// Bot is one entry of bots.yaml's bots list.
type Bot struct {
	// ID is unique and matches [a-z0-9_-]+.
	ID string `yaml:"id"`
	// Name is the display name (default: ID).
	Name string `yaml:"name"`
	// Aliases are more names that address or target the bot.
	Aliases []string `yaml:"aliases"`
	// Public bots see raw platform IDs and neither delegate nor receive
	// delegations.
	Public bool `yaml:"public"`
	// Persona is the bot's system prompt.
	Persona string `yaml:"persona"`
	// Brain says how the bot produces replies.
	Brain Brain `yaml:"brain"`
	// Platforms says where the bot is reachable.
	Platforms Platforms `yaml:"platforms"`
	// Groups configures behaviour in group chats.
	Groups Groups `yaml:"groups"`
	// Delegation configures the bot's hand-offs to other bots.
	Delegation BotDelegation `yaml:"delegation"`
}

// On reports whether the bot is on the named platform: "web", "telegram"
// or "discord". Any other name reports false.
func (b *Bot) On(platform string) bool {
	switch platform {
	case PlatformWeb:
		return b.Platforms.Web != nil
	case PlatformTelegram:
		return b.Platforms.Telegram != nil
	case PlatformDiscord:
		return b.Platforms.Discord != nil
	}
	return false
}

// Platform names as used by Bot.On and in platform IDs.
const (
	PlatformWeb      = "web"
	PlatformTelegram = "telegram"
	PlatformDiscord  = "discord"
)

// Groups is a bot's groups section.
type Groups struct {
	// SessionScope is "user" (one session per person, the default) or
	// "group" (one shared session per group chat).
	SessionScope string `yaml:"session_scope"`
}

// Session scopes of Groups.SessionScope.
const (
	ScopeUser  = "user"
	ScopeGroup = "group"
)

// BotDelegation is a bot's delegation section.
type BotDelegation struct {
	// Allow lists the bot IDs this bot may hand work to; "*" means any.
	Allow []string `yaml:"allow"`
	// Triggers are patterns containing {bot} and {task} once each; when
	// omitted they default to DefaultTriggers. An explicit empty list means
	// the bot never delegates from text.
	Triggers []string `yaml:"triggers"`
}

// DefaultTriggers are the triggers of a bot whose delegation.triggers is
// omitted.
var DefaultTriggers = []string{"tell {bot} to {task}", "ask {bot} to {task}"}

// Platforms is a bot's platforms section. A nil pointer means the bot is
// not on that platform; `web: {}` (or `web:`) puts it on the web widget.
type Platforms struct {
	// Web puts the bot on the web widget, which needs no token.
	Web *Web `yaml:"web"`
	// Telegram puts the bot on Telegram.
	Telegram *Telegram `yaml:"telegram"`
	// Discord puts the bot on Discord.
	Discord *Discord `yaml:"discord"`
}

// Web is a bot's web widget settings; it has no keys yet.
type Web struct{}

// Telegram is a bot's Telegram settings.
type Telegram struct {
	// TokenEnv names the environment variable holding the bot token.
	TokenEnv string `yaml:"token_env"`
	// APIURL optionally points at a self-hosted Bot API server.
	APIURL string `yaml:"api_url"`
	// Mode is "polling" (default) or "webhook".
	Mode string `yaml:"mode"`
	// Webhook is used in webhook mode; URL is then required.
	Webhook Webhook `yaml:"webhook"`
}

// Telegram modes of Telegram.Mode.
const (
	ModePolling = "polling"
	ModeWebhook = "webhook"
)

// Webhook is a Telegram bot's webhook settings.
type Webhook struct {
	// URL is the public URL registered with setWebhook.
	URL string `yaml:"url"`
	// SecretEnv names the environment variable holding the secret token
	// Telegram sends in X-Telegram-Bot-Api-Secret-Token.
	SecretEnv string `yaml:"secret_env"`
}

// Discord is a bot's Discord settings.
type Discord struct {
	// TokenEnv names the environment variable holding the bot token.
	TokenEnv string `yaml:"token_env"`
	// APIURL optionally overrides the REST base URL.
	APIURL string `yaml:"api_url"`
	// GatewayURL optionally overrides the gateway WebSocket URL.
	GatewayURL string `yaml:"gateway_url"`
}
