package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
)

// MaxMessageLength is Telegram's limit on a message's text, in UTF-16
// code units.
const MaxMessageLength = 4096

// MaxMessageLength implements outbox.MessageLimiter: the outbox splits
// longer replies before Send.
func (p *Platform) MaxMessageLength() int { return MaxMessageLength }

// Send implements gateway.Platform: it sends msg.Text to msg.ChatID as the
// bot msg.Bot, answering msg.ReplyTo when set (and still sending when that
// message is gone), after waiting for the pacer. It returns the new
// message's ID. Errors: *outbox.RetryAfterError when Telegram asks to
// wait; outbox.ErrPermanent for an unknown bot or chat, a bot blocked or
// kicked, a rejected request; anything else (5xx, timeouts, connection
// errors) is worth retrying.
func (p *Platform) Send(ctx context.Context, msg outbox.Entry) (string, error) {
	c, err := p.sender(msg.Bot)
	if err != nil {
		return "", err
	}
	if msg.ChatID == "" {
		return "", fmt.Errorf("telegram send: no chat: %w", outbox.ErrPermanent)
	}
	group := msg.ChatType == chat.Group || strings.HasPrefix(msg.ChatID, "-")
	if err := p.pacer.wait(ctx, msg.Bot, msg.ChatID, group); err != nil {
		return "", fmt.Errorf("telegram send: %w", err)
	}
	params := &bot.SendMessageParams{ChatID: msg.ChatID, Text: msg.Text}
	if id, err := strconv.Atoi(msg.ReplyTo); err == nil && id > 0 {
		params.ReplyParameters = &models.ReplyParameters{MessageID: id, AllowSendingWithoutReply: true}
	}
	ctx, cancel := context.WithTimeout(ctx, p.sendTimeout)
	defer cancel()
	sent, err := c.client.SendMessage(ctx, params)
	if err != nil {
		return "", classify("send", err)
	}
	return strconv.Itoa(sent.ID), nil
}

// Typing implements gateway.Typer with sendChatAction "typing", which
// Telegram shows for five seconds or until the bot's next message.
func (p *Platform) Typing(ctx context.Context, botID, chatID string) error {
	c, err := p.sender(botID)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.sendTimeout)
	defer cancel()
	if _, err := c.client.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chatID, Action: models.ChatActionTyping}); err != nil {
		return classify("typing", err)
	}
	return nil
}

// PrivateChat implements gateway.PrivateChatter: on Telegram a private
// chat's ID is the person's user ID, so "telegram-123" is chat "123". The
// bot can write there once the person has started it. It fails for other
// platforms' IDs and for bots this platform does not serve.
func (p *Platform) PrivateChat(_ context.Context, botID, platformID string) (string, error) {
	raw, ok := strings.CutPrefix(platformID, gateway.PlatformTelegram+"-")
	id, err := strconv.ParseInt(raw, 10, 64)
	if !ok || err != nil || id <= 0 {
		return "", fmt.Errorf("telegram: %q is not a Telegram user", platformID)
	}
	if _, ok := p.conn(botID); !ok {
		return "", fmt.Errorf("telegram: bot %q is not on Telegram", botID)
	}
	return strconv.FormatInt(id, 10), nil
}

// sender returns the connection that sends as bot.
func (p *Platform) sender(botID string) (*conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[botID]; ok {
		return c, nil
	}
	if !p.configured {
		// Replies resumed before the bots are known are retried later.
		return nil, errors.New("telegram: bots not configured yet")
	}
	return nil, fmt.Errorf("telegram: bot %q is not on Telegram: %w", botID, outbox.ErrPermanent)
}

// classify maps a client error onto the outbox's retry policy.
func classify(op string, err error) error {
	var tooMany *bot.TooManyRequestsError
	var migrated *bot.MigrateError
	switch {
	case errors.As(err, &tooMany):
		after := time.Duration(tooMany.RetryAfter) * time.Second
		if after <= 0 {
			after = time.Second
		}
		return &outbox.RetryAfterError{After: after, Err: fmt.Errorf("telegram %s: %w", op, err)}
	case errors.As(err, &migrated),
		errors.Is(err, bot.ErrorBadRequest),   // chat not found, text rejected
		errors.Is(err, bot.ErrorForbidden),    // blocked, kicked, never started
		errors.Is(err, bot.ErrorUnauthorized), // token revoked
		errors.Is(err, bot.ErrorNotFound):     // the API does not know the token
		return fmt.Errorf("telegram %s: %w: %w", op, outbox.ErrPermanent, err)
	}
	return fmt.Errorf("telegram %s: %w", op, err)
}
