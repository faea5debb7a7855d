// Package telegram is Switchboard's Telegram platform: one Platform serves
// every bot that has a Telegram section, each over its own token with the
// go-telegram/bot client, by long polling (getUpdates) or by webhook
// (Handler, mounted at /telegram/<bot id>). It turns messages into
// gateway events, sends replies paced to Telegram's limits, shows typing,
// and names the private chat with a person so a bot can write first.
package telegram

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
)

// Modes of BotConfig.Mode.
const (
	ModePolling = "polling"
	ModeWebhook = "webhook"
)

// Defaults of the Options durations.
const (
	DefaultPollTimeout = 60 * time.Second
	DefaultSendTimeout = 30 * time.Second
	DefaultRetryWait   = time.Second
)

// Options configure a Platform. Zero fields take the defaults.
type Options struct {
	Logger *slog.Logger
	// HTTPClient carries every Bot API call. Its timeout must exceed
	// PollTimeout. Nil: a client with PollTimeout plus 15 s.
	HTTPClient *http.Client
	// Now is the pacer's clock; time.Now when nil.
	Now func() time.Time
	// Limits pace outbound messages; zero fields take Telegram's limits.
	Limits Limits
	// PollTimeout is how long one getUpdates long poll may wait.
	PollTimeout time.Duration
	// SendTimeout bounds one sendMessage or sendChatAction call; a call
	// that takes longer fails and the outbox retries it.
	SendTimeout time.Duration
	// RetryWait is the first wait after a failed getMe, setWebhook or
	// deleteWebhook at a bot's start; it doubles up to 30 s.
	RetryWait time.Duration
	// Report, if set, hears each bot's connection state as it changes:
	// connecting at start, connected once Telegram accepted the bot
	// (getMe, then setWebhook or the first poll), failing with the
	// error of a failed call while the bot retries.
	Report gateway.LinkReport
	// Leader, when set, decides which of several processes sharing a
	// database holds each bot's polling (the others send, and take webhook calls); nil: this one holds every bot's.
	Leader gateway.Leader
}

// BotConfig is one bot's Telegram connection.
type BotConfig struct {
	// BotID is the Switchboard bot ID.
	BotID string
	// Token is the bot's Bot API token. It is never logged.
	Token string
	// APIURL is a self-hosted Bot API server; empty for Telegram's.
	APIURL string
	// Mode is ModePolling (the default when empty) or ModeWebhook.
	Mode string
	// WebhookURL is the public URL registered with setWebhook.
	WebhookURL string
	// WebhookSecret is checked against X-Telegram-Bot-Api-Secret-Token;
	// a webhook bot without one accepts no update. It is never logged.
	WebhookSecret string
}

// LogValue implements slog.LogValuer without the token and the secret.
func (c BotConfig) LogValue() slog.Value {
	return slog.GroupValue(slog.String("bot", c.BotID), slog.String("mode", c.Mode),
		slog.String("api_url", c.APIURL), slog.String("webhook_url", c.WebhookURL))
}

// Platform is the Telegram adapter: a multiplexer of per-bot connections
// that Configure sets and Run runs.
type Platform struct {
	log         *slog.Logger
	httpc       *http.Client
	pollTimeout time.Duration
	sendTimeout time.Duration
	retryWait   time.Duration
	pacer       *pacer
	report      gateway.LinkReport
	leader      gateway.Leader

	mu         sync.Mutex
	conns      map[string]*conn // by bot ID
	offsets    map[string]int64 // last handled update ID, by token
	configured bool
	host       gateway.Host
	runCtx     context.Context
	running    bool
	stopped    bool
	wg         sync.WaitGroup
}

var (
	_ gateway.Platform       = (*Platform)(nil)
	_ gateway.Typer          = (*Platform)(nil)
	_ gateway.PrivateChatter = (*Platform)(nil)
	_ outbox.MessageLimiter  = (*Platform)(nil)
)

// New returns a Platform with no bots; call Configure and Run.
func New(opts Options) *Platform {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollTimeout <= 0 {
		opts.PollTimeout = DefaultPollTimeout
	}
	if opts.SendTimeout <= 0 {
		opts.SendTimeout = DefaultSendTimeout
	}
	if opts.RetryWait <= 0 {
		opts.RetryWait = DefaultRetryWait
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: opts.PollTimeout + 15*time.Second}
	}
	return &Platform{
		log:         opts.Logger.With("platform", gateway.PlatformTelegram),
		httpc:       opts.HTTPClient,
		pollTimeout: opts.PollTimeout,
		sendTimeout: opts.SendTimeout,
		retryWait:   opts.RetryWait,
		report:      opts.Report,
		leader:      opts.Leader,
		pacer:       newPacer(opts.Limits.withDefaults(), opts.Now),
		conns:       make(map[string]*conn),
		offsets:     make(map[string]int64),
	}
}

// Name implements gateway.Platform.
func (p *Platform) Name() string { return gateway.PlatformTelegram }

// Configure sets the bots to serve, replacing the previous set. It may be
// called at any time: while Run runs, new bots start, removed ones stop,
// and a bot whose settings changed restarts (after its old connection has
// stopped); bots whose settings did not change are left alone. A bot with
// an invalid configuration is logged and skipped.
func (p *Platform) Configure(bots []BotConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.configured = true
	next := make(map[string]*conn, len(bots))
	tokens := make(map[string]string, len(bots)) // token → bot ID
	for _, cfg := range bots {
		if cfg.Mode == "" {
			cfg.Mode = ModePolling
		}
		if err := validate(cfg); err != nil {
			p.log.Error("telegram bot skipped", "bot", cfg.BotID, "err", err)
			p.reportState(cfg.BotID, gateway.LinkFailing, err)
			continue
		}
		if _, dup := next[cfg.BotID]; dup {
			p.log.Error("telegram bot configured twice; the first wins", "bot", cfg.BotID)
			continue
		}
		if other, dup := tokens[cfg.Token]; dup {
			// Two pollers of one token would take turns failing.
			p.log.Error("telegram bot skipped: it has the same token as another bot", "bot", cfg.BotID, "other", other)
			p.reportState(cfg.BotID, gateway.LinkFailing, errors.New("it has the same token as bot "+other))
			continue
		}
		tokens[cfg.Token] = cfg.BotID
		old := p.conns[cfg.BotID]
		if old != nil && old.cfg == cfg {
			next[cfg.BotID] = old
			continue
		}
		if cfg.Mode == ModeWebhook && cfg.WebhookSecret == "" {
			p.log.Warn("telegram webhook without a secret: every call will be refused", "bot", cfg.BotID)
		}
		prev := old
		if prev == nil {
			// A bot renamed keeps its token: the old connection must stop
			// before the new one polls.
			for _, c := range p.conns {
				if c.cfg.Token == cfg.Token {
					prev = c
				}
			}
		}
		c, err := p.newConn(cfg, prev)
		if err != nil {
			p.log.Error("telegram bot skipped", "bot", cfg.BotID, "err", err)
			p.reportState(cfg.BotID, gateway.LinkFailing, redactToken(err, cfg.Token))
			continue
		}
		next[cfg.BotID] = c
	}
	for id, old := range p.conns {
		if next[id] != old {
			old.stopLocked()
		}
	}
	p.conns = next
	if p.running && !p.stopped {
		for _, c := range next {
			p.startLocked(c)
		}
	}
}

// reportState passes a bot's connection state to Options.Report.
func (p *Platform) reportState(bot, state string, err error) {
	if p.report != nil {
		p.report(bot, state, err)
	}
}

// validate reports what makes cfg unusable.
func validate(cfg BotConfig) error {
	switch {
	case cfg.BotID == "":
		return errors.New("no bot ID")
	case cfg.Token == "":
		return errors.New("no token")
	case cfg.Mode != ModePolling && cfg.Mode != ModeWebhook:
		return errors.New("mode must be polling or webhook, not " + cfg.Mode)
	case cfg.Mode == ModeWebhook && cfg.WebhookURL == "":
		return errors.New("webhook mode without a webhook URL")
	case cfg.WebhookSecret != "" && !validSecret(cfg.WebhookSecret):
		return errors.New("the webhook secret must be 1 to 256 of A-Z, a-z, 0-9, _ and - (Telegram's rule)")
	}
	return nil
}

// validSecret reports whether Telegram accepts s as a secret_token.
func validSecret(s string) bool {
	if len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isUsernameByte(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// Run implements gateway.Platform: it connects every configured bot (and
// those Configure adds later) and hands their messages to host. It returns
// when ctx ends, after every connection has stopped.
func (p *Platform) Run(ctx context.Context, host gateway.Host) error {
	p.mu.Lock()
	if p.running {
		p.mu.Unlock()
		return errors.New("telegram: Run called twice")
	}
	p.running, p.host, p.runCtx = true, host, ctx
	for _, c := range p.conns {
		p.startLocked(c)
	}
	p.mu.Unlock()

	<-ctx.Done()
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// startLocked starts c's goroutine unless it runs or was stopped.
// Callers hold mu, with Run running.
func (p *Platform) startLocked(c *conn) {
	if c.started || c.stopped {
		return
	}
	c.started = true
	ctx, cancel := context.WithCancel(p.runCtx)
	c.cancel = cancel
	host := p.host
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(c.done)
		defer cancel()
		c.run(ctx, host)
	}()
}

// conn returns the running configuration's connection of bot.
func (p *Platform) conn(bot string) (*conn, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.conns[bot]
	return c, ok
}

// hostIfRunning returns the host while Run runs.
func (p *Platform) hostIfRunning() (gateway.Host, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.host, p.running && !p.stopped
}

// offset returns the last update ID handled with token.
func (p *Platform) offset(token string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.offsets[token]
}

// setOffset records that the update with id was handled with token, so a
// restarted poller confirms it at once instead of receiving it again.
func (p *Platform) setOffset(token string, id int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id > p.offsets[token] {
		p.offsets[token] = id
	}
}
