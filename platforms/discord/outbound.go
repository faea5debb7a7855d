package discord

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
)

// defaultRetryAfter is the wait for a 429 that names none.
const defaultRetryAfter = time.Second

// Send implements gateway.Platform: it posts msg.Text (at most
// MaxMessageLength characters; the outbox splits longer texts) to the
// channel msg.ChatID as msg.Bot, as a reply to msg.ReplyTo when set, and
// returns the new message's ID. Sends are paced per bot and channel.
//
// Errors: a 429 is a *outbox.RetryAfterError with Discord's retry_after
// (from the body, else X-RateLimit-Reset-After, else Retry-After); 400,
// 401, 403, 404 and other 4xx wrap outbox.ErrPermanent, as does an unknown
// bot; 5xx, timeouts and connection errors are plain errors for the
// outbox to retry with backoff.
func (p *Platform) Send(ctx context.Context, msg outbox.Entry) (string, error) {
	c, err := p.conn(msg.Bot)
	if err != nil {
		return "", fmt.Errorf("discord send: %w", err)
	}
	if err := p.pacer.wait(ctx, msg.Bot+"\x00"+msg.ChatID); err != nil {
		return "", fmt.Errorf("discord send: %w", err)
	}
	if err := c.waitBucket(ctx, discordgo.EndpointChannelMessages(msg.ChatID)); err != nil {
		return "", fmt.Errorf("discord send: %w", err)
	}
	data := &discordgo.MessageSend{
		Content: msg.Text,
		// Bots echo what people write: never let that ping @everyone or
		// a role.
		AllowedMentions: &discordgo.MessageAllowedMentions{
			Parse:       []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers},
			RepliedUser: true,
		},
	}
	if msg.ReplyTo != "" {
		// A reply to a message deleted since is sent as a plain message.
		no := false
		data.Reference = &discordgo.MessageReference{MessageID: msg.ReplyTo, ChannelID: msg.ChatID, FailIfNotExists: &no}
	}
	rctx, pr := withProbe(ctx)
	m, err := c.s.ChannelMessageSendComplex(msg.ChatID, data, discordgo.WithContext(rctx))
	if err != nil {
		return "", classify("discord send", err, pr)
	}
	if m == nil || m.ID == "" {
		return "", errors.New("discord send: response without a message ID")
	}
	return m.ID, nil
}

// Typing implements gateway.Typer: the bot shows as typing in chatID for
// about ten seconds, or until it posts. While the channel's typing bucket
// is spent the indicator is skipped rather than late.
func (p *Platform) Typing(ctx context.Context, bot, chatID string) error {
	c, err := p.conn(bot)
	if err != nil {
		return fmt.Errorf("discord typing: %w", err)
	}
	if c.bucketWait(discordgo.EndpointChannelTyping(chatID)) > 0 {
		return nil
	}
	rctx, pr := withProbe(ctx)
	if err := c.s.ChannelTyping(chatID, discordgo.WithContext(rctx)); err != nil {
		return classify("discord typing", err, pr)
	}
	return nil
}

// PrivateChat implements gateway.PrivateChatter: it returns the ID of the
// DM channel between bot and the Discord user platformID
// ("discord-<user id>"), opening it when needed. Channels are cached.
func (p *Platform) PrivateChat(ctx context.Context, bot, platformID string) (string, error) {
	uid, ok := strings.CutPrefix(platformID, gateway.PlatformDiscord+"-")
	if !ok || !isSnowflake(uid) {
		return "", fmt.Errorf("discord: %q is not a Discord identity", platformID)
	}
	c, err := p.conn(bot)
	if err != nil {
		return "", fmt.Errorf("discord open DM: %w", err)
	}
	if ch, ok := p.cachedDM(bot, uid); ok {
		return ch, nil
	}
	rctx, pr := withProbe(ctx)
	ch, err := c.s.UserChannelCreate(uid, discordgo.WithContext(rctx))
	if err != nil {
		return "", classify("discord open DM", err, pr)
	}
	if ch == nil || ch.ID == "" {
		return "", errors.New("discord open DM: response without a channel ID")
	}
	p.rememberDM(bot, uid, ch.ID)
	return ch.ID, nil
}

func isSnowflake(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// waitBucket waits, respecting ctx, until discordgo's rate limiter would
// let a request on bucketID through: its own wait sleeps and cannot be
// cancelled. Discord's X-RateLimit headers fill the bucket.
func (c *botConn) waitBucket(ctx context.Context, bucketID string) error {
	return sleep(ctx, c.bucketWait(bucketID))
}

// bucketWait is how long discordgo's rate limiter would hold a request on
// bucketID now.
func (c *botConn) bucketWait(bucketID string) time.Duration {
	rl := c.s.Ratelimiter
	b := rl.GetBucket(bucketID)
	b.Lock()
	defer b.Unlock()
	return rl.GetWaitTime(b, 1)
}

// classify maps a failed request to the errors the outbox acts on.
func classify(op string, err error, pr *probe) error {
	status, header := pr.result()
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) || status == http.StatusTooManyRequests {
		var body time.Duration
		if rl != nil && rl.RateLimit != nil && rl.TooManyRequests != nil {
			body = rl.RetryAfter
		}
		return &outbox.RetryAfterError{After: retryAfter(body, header), Err: fmt.Errorf("%s: %w", op, err)}
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		status = re.Response.StatusCode
	}
	if status >= 400 && status < 500 && status != http.StatusRequestTimeout {
		return fmt.Errorf("%s: %w: %w", op, outbox.ErrPermanent, err)
	}
	// 5xx (discordgo reports a 502 as "Exceeded Max retries"), timeouts,
	// connection errors: retried by the outbox.
	return fmt.Errorf("%s: %w", op, err)
}

// retryAfter picks a 429's wait: the body's retry_after, else the
// X-RateLimit-Reset-After or Retry-After header (seconds), else a second.
func retryAfter(body time.Duration, h http.Header) time.Duration {
	if body > 0 {
		return body
	}
	for _, name := range []string{"X-RateLimit-Reset-After", "Retry-After"} {
		if s, err := strconv.ParseFloat(h.Get(name), 64); err == nil && s > 0 && !math.IsInf(s, 0) {
			return time.Duration(s * float64(time.Second))
		}
	}
	return defaultRetryAfter
}
