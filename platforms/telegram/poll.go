package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/switchboard-chat/switchboard/gateway"
)

// publicAPI is the Bot API's address when a bot sets no api_url.
const publicAPI = "https://api.telegram.org"

// poll long-polls getUpdates and hands each update to the gateway, one at
// a time, in order. It confirms an update (by asking for the next offset)
// only after the gateway has stored it, so a crash loses none: Telegram
// sends the unconfirmed ones again and the gateway drops what it already
// has. go-telegram/bot's own poller confirms a batch before its last update
// is handled, which is why this loop is ours; sending, getMe and webhooks
// still go through the library.
func (c *conn) poll(ctx context.Context) {
	next := c.p.offset(c.cfg.Token) + 1
	wait := c.p.retryWait
polling:
	for ctx.Err() == nil {
		upds, err := c.getUpdates(ctx, next)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d := wait
			var tm *bot.TooManyRequestsError
			if errors.As(err, &tm) && tm.RetryAfter > 0 {
				d = time.Duration(tm.RetryAfter) * time.Second
			}
			c.log.Warn("telegram getUpdates failed; retrying", "wait", d, "err", err)
			c.setState(gateway.LinkFailing, err)
			if sleepCtx(ctx, d) != nil {
				return
			}
			wait = min(2*wait, maxRetryWait)
			continue
		}
		c.setState(gateway.LinkConnected, nil)
		for i := range upds {
			err := c.p.deliver(ctx, c, c.host, &upds[i])
			switch {
			case err == nil:
			case errors.Is(err, gateway.ErrStopped) || ctx.Err() != nil:
				return // not confirmed: Telegram sends it again
			case errors.Is(err, gateway.ErrInvalidEvent) || errors.Is(err, gateway.ErrUnknownBot):
				// One bad update must not stop the bot: skip it.
				c.log.Error("telegram update refused", "update", upds[i].ID, "err", err)
			default:
				// Not stored (the store is busy or failing): do not confirm
				// it; poll again from it after a pause.
				c.log.Error("telegram update not stored; retrying", "update", upds[i].ID, "wait", wait, "err", err)
				if sleepCtx(ctx, wait) != nil {
					return
				}
				wait = min(2*wait, maxRetryWait)
				continue polling
			}
			c.p.setOffset(c.cfg.Token, upds[i].ID)
			next = upds[i].ID + 1
		}
		wait = c.p.retryWait
	}
}

// getUpdates asks for the updates from offset on, waiting up to the poll
// timeout for new ones.
func (c *conn) getUpdates(ctx context.Context, offset int64) ([]models.Update, error) {
	body, _ := json.Marshal(map[string]any{
		"offset":          offset,
		"timeout":         int(c.p.pollTimeout / time.Second),
		"allowed_updates": allowedUpdates,
	})
	base := publicAPI
	if c.cfg.APIURL != "" {
		base = strings.TrimRight(c.cfg.APIURL, "/")
	}
	ctx, cancel := context.WithTimeout(ctx, c.p.pollTimeout+15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/bot"+c.cfg.Token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.p.httpc.Do(req)
	if err != nil {
		return nil, redactToken(err, c.cfg.Token)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	var r struct {
		OK          bool            `json:"ok"`
		Result      []models.Update `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("getUpdates: HTTP %d: malformed answer: %w", resp.StatusCode, err)
	}
	if !r.OK {
		if r.ErrorCode == http.StatusTooManyRequests {
			return nil, &bot.TooManyRequestsError{Message: r.Description, RetryAfter: r.Parameters.RetryAfter}
		}
		return nil, fmt.Errorf("getUpdates: %d %s", r.ErrorCode, r.Description)
	}
	return r.Result, nil
}

// redactToken keeps the bot token (part of every Bot API URL) out of
// errors that end up in logs.
func redactToken(err error, token string) error {
	if token == "" {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "<token>"))
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
