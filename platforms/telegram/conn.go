package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/switchboard-chat/switchboard/gateway"
)

// maxRetryWait caps the wait between tries of a start-up call.
const maxRetryWait = 30 * time.Second

// allowedUpdates are the update kinds a bot asks Telegram for: edits,
// channel posts, reactions and the rest are never sent to us.
var allowedUpdates = []string{"message"}

// conn is one bot's connection to the Bot API. A conn is immutable once
// configured: Configure replaces it when the bot's settings change.
type conn struct {
	p   *Platform
	cfg BotConfig
	log *slog.Logger
	// client makes the bot's calls (sends, typing, start-up). The poller
	// is a second client, made at start with the offset reached so far.
	client *bot.Bot
	// me is the bot's own user from getMe; nil until the bot is ready.
	me atomic.Pointer[models.User]
	// host is set by run before me is published.
	host gateway.Host
	// prev is the connection this one replaces; run waits for it to stop
	// first, so two pollers never share a token.
	prev *conn
	done chan struct{}
	// hookMu handles a webhook bot's updates one at a time, in order.
	hookMu sync.Mutex
	// state and stateErr are the last connection state reported
	// (setState); only run's goroutine touches them.
	state, stateErr string

	// Guarded by p.mu.
	started, stopped bool
	cancel           context.CancelFunc
}

// newConn prepares a connection; nothing touches the network until run.
func (p *Platform) newConn(cfg BotConfig, prev *conn) (*conn, error) {
	c := &conn{p: p, cfg: cfg, prev: prev, done: make(chan struct{}), log: p.log.With("bot", cfg.BotID)}
	client, err := bot.New(cfg.Token, c.options(context.Background())...)
	if err != nil {
		return nil, err
	}
	c.client = client
	return c, nil
}

// options configure the bot's client, used for sending, getMe and
// webhooks; updates are polled by poll.go's own loop, never by the
// client's poller.
func (c *conn) options(ctx context.Context) []bot.Option {
	opts := []bot.Option{
		bot.WithSkipGetMe(),
		bot.WithHTTPClient(c.p.pollTimeout, c.p.httpc),
		bot.WithErrorsHandler(func(err error) {
			// Interrupted polls at shutdown are expected.
			if ctx.Err() != nil {
				c.log.Debug("telegram client", "err", err)
				return
			}
			c.log.Warn("telegram client", "err", err)
		}),
	}
	if c.cfg.APIURL != "" {
		opts = append(opts, bot.WithServerURL(strings.TrimRight(c.cfg.APIURL, "/")))
	}
	return opts
}

// stopLocked stops the connection. Callers hold p.mu.
func (c *conn) stopLocked() {
	if c.stopped {
		return
	}
	c.stopped = true
	if c.started {
		c.cancel()
	} else {
		close(c.done)
	}
}

// run connects the bot and serves it until ctx ends: getMe, then either
// setWebhook and wait for Handler's calls, or deleteWebhook and long
// polling.
func (c *conn) run(ctx context.Context, host gateway.Host) {
	if c.prev != nil {
		<-c.prev.done // the predecessor was cancelled when this one replaced it
		c.prev = nil
	}
	c.host = host
	c.setState(gateway.LinkConnecting, nil)
	var me *models.User
	err := c.retry(ctx, "getMe", func(ctx context.Context) (err error) {
		me, err = c.client.GetMe(ctx)
		return err
	})
	if err != nil {
		return
	}
	c.me.Store(me)
	c.log.Info("telegram bot connected", "username", me.Username, "mode", c.cfg.Mode)

	if c.cfg.Mode == ModeWebhook {
		err := c.retry(ctx, "setWebhook", func(ctx context.Context) error {
			_, err := c.client.SetWebhook(ctx, &bot.SetWebhookParams{
				URL:         c.cfg.WebhookURL,
				SecretToken: c.cfg.WebhookSecret,
				// One request at a time keeps Telegram's order.
				MaxConnections: 1,
				AllowedUpdates: allowedUpdates,
			})
			return err
		})
		if err == nil {
			c.setState(gateway.LinkConnected, nil)
			<-ctx.Done()
		}
		return
	}
	err = c.retry(ctx, "deleteWebhook", func(ctx context.Context) error {
		_, err := c.client.DeleteWebhook(ctx, &bot.DeleteWebhookParams{})
		return err
	})
	if err != nil {
		return
	}
	c.setState(gateway.LinkConnected, nil)
	c.pollLed(ctx)
}

// pollLed polls while this process leads the bot (Options.Leader), until
// ctx ends: of several processes sharing a database, one polls a bot.
// One that takes over starts from the updates Telegram has not had
// confirmed, which may repeat a few the other stored; the store keeps
// each message once.
func (c *conn) pollLed(ctx context.Context) {
	if c.p.leader == nil {
		c.poll(ctx) // returns when ctx ends
		return
	}
	for ctx.Err() == nil {
		// Each lead is asked for under a context of its own, ended when
		// polling stops, which gives the lead up if it is still held.
		held, release := context.WithCancel(ctx)
		lead, err := c.p.leader.Lead(held, gateway.PlatformTelegram, c.cfg.BotID)
		if err != nil {
			release()
			return
		}
		c.log.Info("telegram: this instance polls the bot")
		c.poll(lead)
		release()
		if ctx.Err() == nil {
			c.log.Warn("telegram: lead lost; another instance polls the bot")
		}
	}
}

// retry calls fn until it succeeds or ctx ends, waiting between tries
// (Telegram's retry_after when it gives one).
func (c *conn) retry(ctx context.Context, what string, fn func(context.Context) error) error {
	wait := c.p.retryWait
	for {
		callCtx, cancel := context.WithTimeout(ctx, c.p.sendTimeout)
		err := fn(callCtx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d := wait
		var tm *bot.TooManyRequestsError
		if errors.As(err, &tm) && tm.RetryAfter > 0 {
			d = time.Duration(tm.RetryAfter) * time.Second
		}
		c.log.Warn("telegram "+what+" failed; retrying", "wait", d, "err", err)
		c.setState(gateway.LinkFailing, fmt.Errorf("%s: %w", what, err))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, maxRetryWait)
	}
}

// setState reports the connection's state when it changed (a new error
// while failing counts as a change), with the token kept out of the
// error.
func (c *conn) setState(state string, err error) {
	msg := ""
	if err != nil {
		err = redactToken(err, c.cfg.Token)
		msg = err.Error()
	}
	if state == c.state && msg == c.stateErr {
		return
	}
	c.state, c.stateErr = state, msg
	c.p.reportState(c.cfg.BotID, state, err)
}

// tokenID is the bot's user ID, the part of its token before ':'.
func tokenID(token string) int64 {
	head, _, _ := strings.Cut(token, ":")
	id, _ := strconv.ParseInt(head, 10, 64)
	return id
}

// directory returns who is who among the bots this platform serves:
// Telegram usernames (lower case) and user IDs to Switchboard bot IDs.
func (p *Platform) directory() directory {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := directory{byName: make(map[string]string, len(p.conns)), byID: make(map[int64]string, len(p.conns))}
	for id, c := range p.conns {
		if me := c.me.Load(); me != nil {
			d.byName[strings.ToLower(me.Username)] = id
			d.byID[me.ID] = id
		} else if tid := tokenID(c.cfg.Token); tid != 0 {
			d.byID[tid] = id
		}
	}
	return d
}
