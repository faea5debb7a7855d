package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/switchboard-chat/switchboard/gateway"
)

// Gateway reconnect backoff.
const (
	minReconnect = 250 * time.Millisecond
	maxReconnect = 30 * time.Second
)

// intents are what the adapter asks the gateway for: messages in guild
// channels and DMs, with their content (a privileged intent that must be
// enabled for the bot in the developer portal).
const intents = discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent

// connState is a botConn's lifecycle: idle until Run starts it, running,
// then finished for good.
type connState int

const (
	connIdle connState = iota
	connRunning
	connFinished
)

// botConn is one bot's Discord connection: a discordgo session, used for
// the gateway and for REST, and the goroutine that keeps its gateway
// connected.
//
// discordgo's own reconnect loop is switched off (ShouldReconnectOnError):
// it cannot be cancelled and would reopen a session after Close. The
// connection's goroutine reconnects instead, by calling Open again, which
// RESUMEs with the session ID and sequence discordgo kept, so Discord
// replays what was dispatched during the outage.
type botConn struct {
	p   *Platform
	cfg BotConfig
	s   *discordgo.Session
	tr  *transport
	log *slog.Logger
	// prev is the connection this one replaces; it is closed first.
	prev *botConn

	mu     sync.Mutex
	state  connState
	cancel context.CancelFunc
	// done is closed when the connection has closed for good.
	done chan struct{}

	// ctx and host are set before the session opens; handlers read them.
	ctx  context.Context
	host gateway.Host
	// self is the bot's own Discord user ID, from READY.
	self atomic.Pointer[string]
	// disconnected is signalled by discordgo's Disconnect event.
	disconnected chan struct{}

	// handlers counts event handlers running in discordgo's goroutines,
	// so shutdown can wait for them.
	hmu      sync.Mutex
	hclosed  bool
	handlers sync.WaitGroup
}

func newBotConn(p *Platform, cfg BotConfig) (*botConn, error) {
	tr, err := newTransport(cfg.APIURL, cfg.GatewayURL)
	if err != nil {
		return nil, err
	}
	s, err := discordgo.New(botToken(cfg.Token))
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	// Handlers run one at a time in the gateway's read loop, in dispatch
	// order; Switchboard's session queues do the rest.
	s.SyncEvents = true
	s.ShouldReconnectOnError = false
	// The outbox owns retries: a 429 or a 502 is reported, not slept on
	// and repeated by discordgo.
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 0
	s.StateEnabled = false
	s.LogLevel = discordgo.LogError
	s.Identify.Intents = intents
	s.Client = &http.Client{Transport: tr, Timeout: p.timeout}

	c := &botConn{
		p:            p,
		cfg:          cfg,
		s:            s,
		tr:           tr,
		log:          p.log.With("bot", cfg.BotID),
		done:         make(chan struct{}),
		disconnected: make(chan struct{}, 1),
	}
	s.AddHandler(c.onReady)
	s.AddHandler(c.onResumed)
	s.AddHandler(c.onDisconnect)
	s.AddHandler(c.onMessage)
	return c, nil
}

// botToken adds the "Bot " prefix Discord expects.
func botToken(t string) string {
	if strings.HasPrefix(t, "Bot ") {
		return t
	}
	return "Bot " + t
}

// start connects the bot in a goroutine owned by rs. Callers hold p.mu.
func (c *botConn) start(rs *runState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != connIdle {
		return
	}
	c.state = connRunning
	ctx, cancel := context.WithCancel(rs.ctx)
	c.cancel = cancel
	c.ctx, c.host = ctx, rs.host
	rs.wg.Add(1)
	go func() {
		defer rs.wg.Done()
		c.run(ctx)
		c.mu.Lock()
		c.state = connFinished
		c.mu.Unlock()
		cancel()
		close(c.done)
	}()
}

// stop disconnects the bot for good; it does not wait.
func (c *botConn) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case connIdle:
		c.state = connFinished
		close(c.done)
	case connRunning:
		c.cancel()
	}
}

// finished reports whether the connection has closed for good.
func (c *botConn) finished() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == connFinished
}

// run keeps the gateway connected until ctx ends, then closes it. Of
// several processes sharing a database, only the one leading the bot
// (Options.Leader) connects it; the others send through REST only.
func (c *botConn) run(ctx context.Context) {
	defer c.shutdown()
	if prev := c.prev; prev != nil {
		c.prev = nil // let the old connection be collected
		select {
		case <-prev.done:
		case <-ctx.Done():
			return
		}
	}
	if c.p.leader == nil {
		c.connect(ctx)
		return
	}
	for ctx.Err() == nil {
		c.p.reportState(c.cfg.BotID, gateway.LinkConnecting, nil)
		// Each lead is asked for under a context of its own, ended when
		// the connection closes, which gives the lead up if still held.
		held, release := context.WithCancel(ctx)
		lead, err := c.p.leader.Lead(held, gateway.PlatformDiscord, c.cfg.BotID)
		if err != nil {
			release()
			return
		}
		c.log.Info("discord: this instance holds the bot's gateway connection")
		c.connect(lead)
		release()
		if ctx.Err() == nil {
			c.log.Warn("discord: lead lost; the bot's gateway connection is left to another instance")
		}
	}
}

// connect keeps the gateway connected until ctx ends, then closes it.
func (c *botConn) connect(ctx context.Context) {
	// kill closes every socket of this connection at once; graceful
	// closing goes through the session first.
	killCtx, kill := context.WithCancel(context.Background())
	defer kill()
	defer func() {
		if err := c.s.Close(); err != nil {
			c.log.Debug("discord close", "err", err)
		}
	}()
	c.s.Dialer = newDialer(killCtx)
	wait := minReconnect
	c.p.reportState(c.cfg.BotID, gateway.LinkConnecting, nil)
	for {
		// Open blocks on reads without deadlines; ending ctx unblocks it.
		unwatch := context.AfterFunc(ctx, kill)
		err := c.s.Open()
		unwatch()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil || errors.Is(err, discordgo.ErrWSAlreadyOpen):
			wait = minReconnect
			c.p.reportState(c.cfg.BotID, gateway.LinkConnected, nil)
			select {
			case <-ctx.Done():
				return
			case <-c.disconnected:
				c.log.Info("discord gateway connection lost; resuming")
				c.p.reportState(c.cfg.BotID, gateway.LinkConnecting, nil)
			}
		case refused(err):
			c.log.Error("discord gateway refused the bot; check its token and intents", "err", err)
			c.p.reportState(c.cfg.BotID, gateway.LinkFailing, fmt.Errorf("the gateway refused the bot; check its token and intents: %w", err))
			<-ctx.Done()
			return
		default:
			c.log.Warn("discord gateway connect failed; retrying", "err", err, "wait", wait)
			c.p.reportState(c.cfg.BotID, gateway.LinkFailing, err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, maxReconnect)
		}
	}
}

// shutdown closes the session (discordgo sends a close frame and waits a
// second for it) and waits for handlers still running.
func (c *botConn) shutdown() {
	if err := c.s.Close(); err != nil {
		c.log.Debug("discord close", "err", err)
	}
	c.hmu.Lock()
	c.hclosed = true
	c.hmu.Unlock()
	c.handlers.Wait()
	c.tr.close()
}

// refused reports a gateway close code that retrying cannot fix:
// authentication failed, invalid shard, sharding required, invalid API
// version, invalid or disallowed intents.
func refused(err error) bool {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return false
	}
	return ce.Code == 4004 || (ce.Code >= 4010 && ce.Code <= 4014)
}

// enter registers a running handler; false once shutting down.
func (c *botConn) enter() bool {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	if c.hclosed {
		return false
	}
	c.handlers.Add(1)
	return true
}

func (c *botConn) leave() { c.handlers.Done() }

func (c *botConn) onReady(_ *discordgo.Session, r *discordgo.Ready) {
	if r.User == nil {
		c.log.Warn("discord READY without a user")
		return
	}
	id := r.User.ID
	c.self.Store(&id)
	c.p.learnUser(id, c)
	c.log.Info("discord bot connected", "user", id, "username", r.User.Username)
}

func (c *botConn) onResumed(*discordgo.Session, *discordgo.Resumed) {
	c.log.Info("discord session resumed")
}

func (c *botConn) onDisconnect(*discordgo.Session, *discordgo.Disconnect) {
	select {
	case c.disconnected <- struct{}{}:
	default:
	}
}

// selfID is the bot's Discord user ID, empty before READY.
func (c *botConn) selfID() string {
	if p := c.self.Load(); p != nil {
		return *p
	}
	return ""
}

var routeLogsOnce sync.Once

// routeLibraryLogs sends discordgo's log lines (a package-level hook) to
// slog.Default instead of the standard logger. Sessions log at LogError
// only, where discordgo's lines carry no message content.
func routeLibraryLogs() {
	routeLogsOnce.Do(func() {
		discordgo.Logger = func(level, _ int, format string, a ...any) {
			l := slog.LevelDebug
			switch level {
			case discordgo.LogError:
				l = slog.LevelWarn
			case discordgo.LogWarning:
				l = slog.LevelInfo
			}
			slog.Default().Log(context.Background(), l, "discordgo: "+fmt.Sprintf(format, a...), "platform", gateway.PlatformDiscord)
		}
	})
}
