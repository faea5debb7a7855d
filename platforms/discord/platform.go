// Package discord is Switchboard's Discord platform: one adapter that
// multiplexes a gateway connection and a REST client per bot, built on
// github.com/bwmarrin/discordgo. It implements gateway.Platform,
// gateway.Typer, gateway.PrivateChatter and outbox.MessageLimiter.
//
// Inbound, every MESSAGE_CREATE a bot receives (guild messages, direct
// messages, with message content) becomes one gateway.Event, handed to the
// host in the order the gateway dispatched it. Outbound, Send posts one
// message, paced per channel, and classifies failures for the outbox: a
// 429 is a *outbox.RetryAfterError, a 4xx other than 408/429 wraps
// outbox.ErrPermanent, anything else is retried by the outbox.
//
// Retries belong to the outbox alone: each bot's discordgo session has
// ShouldRetryOnRateLimit off and MaxRestRetries 0, so a failed request
// is reported once and never repeated behind the outbox's back.
package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
)

// MaxMessageLength is Discord's limit on a message's content.
const MaxMessageLength = 2000

// Options configure the adapter.
type Options struct {
	Logger *slog.Logger
	// Now is the pacer's clock; time.Now when nil.
	Now func() time.Time
	// Pace limits messages per bot and channel; DefaultPace when zero.
	Pace Pace
	// RequestTimeout bounds one REST request; 15 s when zero.
	RequestTimeout time.Duration
	// Report, if set, hears each bot's connection state as it changes:
	// connecting at start and while resuming a dropped connection,
	// connected once the gateway session is open, failing with the error
	// of a failed connect (a refused token stays failing).
	Report gateway.LinkReport
	// Leader, when set, decides which of several processes sharing a
	// database holds each bot's gateway connection (the others send through REST); nil: this one holds every bot's.
	Leader gateway.Leader
}

// BotConfig is one bot's Discord settings.
type BotConfig struct {
	// BotID is the Switchboard bot ID.
	BotID string
	// Token is the bot token, with or without the "Bot " prefix.
	Token string
	// APIURL replaces Discord's REST base (https://discord.com/api/v9),
	// e.g. http://127.0.0.1:1234/api/v9; a URL without a path gets
	// /api/v9. Empty: Discord's.
	APIURL string
	// GatewayURL is the gateway WebSocket URL. Empty: discovered with
	// GET /gateway on the REST API.
	GatewayURL string
}

// LogValue implements slog.LogValuer; the token is never logged.
func (c BotConfig) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("bot", c.BotID),
		slog.String("api_url", c.APIURL),
		slog.String("gateway_url", c.GatewayURL),
	)
}

// Platform is the Discord adapter. Its methods are safe for concurrent
// use.
type Platform struct {
	log     *slog.Logger
	timeout time.Duration
	pacer   *pacer
	report  gateway.LinkReport
	leader  gateway.Leader

	mu   sync.Mutex
	bots map[string]*botConn // Switchboard bot ID → connection
	// users maps the Discord user ID of each connected bot to its
	// Switchboard ID, so a mention of any configured bot is recognized.
	users map[string]string
	// dms caches the DM channel of each (bot, Discord user).
	dms map[dmKey]string
	run *runState // nil while Run is not running
}

// runState is one call of Run.
type runState struct {
	ctx  context.Context
	host gateway.Host
	wg   sync.WaitGroup
}

type dmKey struct{ bot, user string }

var (
	_ gateway.Platform       = (*Platform)(nil)
	_ gateway.Typer          = (*Platform)(nil)
	_ gateway.PrivateChatter = (*Platform)(nil)
	_ outbox.MessageLimiter  = (*Platform)(nil)
)

// New returns an adapter with no bots; call Configure and Run.
func New(opts Options) *Platform {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 15 * time.Second
	}
	routeLibraryLogs()
	return &Platform{
		log:     opts.Logger.With("platform", gateway.PlatformDiscord),
		timeout: opts.RequestTimeout,
		report:  opts.Report,
		leader:  opts.Leader,
		pacer:   newPacer(opts.Pace, opts.Now),
		bots:    make(map[string]*botConn),
		users:   make(map[string]string),
		dms:     make(map[dmKey]string),
	}
}

// Name implements gateway.Platform.
func (p *Platform) Name() string { return gateway.PlatformDiscord }

// MaxMessageLength implements outbox.MessageLimiter.
func (p *Platform) MaxMessageLength() int { return MaxMessageLength }

// Configure sets the bots the adapter serves, replacing the previous set;
// it may be called at any time, also while Run runs. A new bot is
// connected, a removed one disconnected, and one whose settings changed is
// reconnected with them; the other bots are not disturbed. A config
// without a bot ID or token, or with a malformed URL, is skipped with a
// log line.
func (p *Platform) Configure(bots []BotConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := make(map[string]BotConfig, len(bots))
	for _, cfg := range bots {
		if cfg.BotID == "" || cfg.Token == "" {
			p.log.Warn("discord bot skipped: missing bot ID or token", "config", cfg)
			continue
		}
		want[cfg.BotID] = cfg
	}
	for id, c := range p.bots {
		if _, ok := want[id]; !ok {
			c.stop()
			delete(p.bots, id)
			p.forgetLocked(id)
			p.log.Info("discord bot removed", "bot", id)
		}
	}
	for id, cfg := range want {
		old := p.bots[id]
		if old != nil && old.cfg == cfg {
			continue
		}
		c, err := newBotConn(p, cfg)
		if err != nil {
			p.log.Error("discord bot skipped", "bot", id, "err", err)
			p.reportState(id, gateway.LinkFailing, err)
			continue
		}
		if old != nil {
			// The new connection waits until the old one is closed, so
			// one token never has two gateway sessions of ours at once.
			old.stop()
			c.prev = old
			p.forgetLocked(id)
			p.log.Info("discord bot settings changed; reconnecting", "bot", id)
		}
		p.bots[id] = c
		if p.run != nil {
			c.start(p.run)
		}
	}
}

// reportState passes a bot's connection state to Options.Report.
func (p *Platform) reportState(bot, state string, err error) {
	if p.report != nil {
		p.report(bot, state, err)
	}
}

// forgetLocked drops what was learned about bot's account. Callers hold mu.
func (p *Platform) forgetLocked(bot string) {
	for uid, b := range p.users {
		if b == bot {
			delete(p.users, uid)
		}
	}
	for k := range p.dms {
		if k.bot == bot {
			delete(p.dms, k)
		}
	}
}

// Run implements gateway.Platform: it connects every configured bot (and
// those Configure adds later) and hands their messages to host, until ctx
// ends. It returns after every connection is closed and every goroutine it
// started has exited.
func (p *Platform) Run(ctx context.Context, host gateway.Host) error {
	p.mu.Lock()
	if p.run != nil {
		p.mu.Unlock()
		return errors.New("discord: already running")
	}
	rs := &runState{ctx: ctx, host: host}
	p.run = rs
	for id, c := range p.bots {
		if c.finished() {
			// Left over from an earlier Run: start afresh.
			nc, err := newBotConn(p, c.cfg)
			if err != nil {
				continue
			}
			c = nc
			p.bots[id] = c
		}
		c.start(rs)
	}
	p.mu.Unlock()

	<-ctx.Done()
	p.mu.Lock()
	p.run = nil
	p.mu.Unlock()
	rs.wg.Wait()
	return nil
}

// conn returns bot's connection.
func (p *Platform) conn(bot string) (*botConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.bots[bot]
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a Discord bot here", outbox.ErrPermanent, bot)
	}
	return c, nil
}

// learnUser records that Discord user id is the account of c's bot, if c
// is still the bot's current connection.
func (p *Platform) learnUser(id string, c *botConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bots[c.cfg.BotID] == c {
		p.users[id] = c.cfg.BotID
	}
}

// botOfUser returns the Switchboard bot whose Discord account is id.
func (p *Platform) botOfUser(id string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.users[id]
	return b, ok
}

// rememberDM caches the DM channel between bot and a Discord user.
func (p *Platform) rememberDM(bot, user, channel string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dms[dmKey{bot, user}] = channel
}

// cachedDM returns the cached DM channel between bot and a Discord user.
func (p *Platform) cachedDM(bot, user string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.dms[dmKey{bot, user}]
	return ch, ok
}
