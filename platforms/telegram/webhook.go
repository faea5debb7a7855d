package telegram

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/go-telegram/bot/models"

	"github.com/switchboard-chat/switchboard/gateway"
)

// SecretHeader carries a webhook's secret token in Telegram's calls.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// maxUpdateBytes bounds a webhook call's body; an update is a few KiB.
const maxUpdateBytes = 1 << 20

// Handler serves Telegram's webhook calls at POST /telegram/{bot id}, for
// the core to mount on gateway.listen. A call for a bot that is not in
// webhook mode is answered 404; one whose X-Telegram-Bot-Api-Secret-Token
// is not the bot's secret (or for a bot without a secret) 401. The update
// is handled as a polled one, one at a time per bot, and answered 200 once
// the gateway has stored it, so Telegram retries anything not stored: 503
// before the bot is ready or while the gateway stops, 500 when storing
// failed, 400 for a body that is not an update.
func (p *Platform) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /telegram/{bot}", p.serveWebhook)
	return mux
}

func (p *Platform) serveWebhook(w http.ResponseWriter, r *http.Request) {
	c, ok := p.conn(r.PathValue("bot"))
	if !ok || c.cfg.Mode != ModeWebhook {
		http.NotFound(w, r)
		return
	}
	if !secretMatches(c.cfg.WebhookSecret, r.Header.Get(SecretHeader)) {
		c.log.Warn("telegram webhook call with a wrong secret", "remote", r.RemoteAddr)
		http.Error(w, "wrong secret token", http.StatusUnauthorized)
		return
	}
	_, running := p.hostIfRunning()
	if !running || c.me.Load() == nil {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	var upd models.Update
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxUpdateBytes)).Decode(&upd); err != nil {
		http.Error(w, "bad update", http.StatusBadRequest)
		return
	}

	c.hookMu.Lock()
	err := p.deliver(r.Context(), c, c.host, &upd)
	c.hookMu.Unlock()
	switch {
	case err == nil:
		w.WriteHeader(http.StatusOK)
	case errors.Is(err, gateway.ErrUnknownBot):
		// The bot left the roster: Telegram retrying would not help.
		c.log.Warn("telegram update dropped", "update", upd.ID, "err", err)
		w.WriteHeader(http.StatusOK)
	case errors.Is(err, gateway.ErrStopped):
		w.Header().Set("Retry-After", "1")
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
	default:
		c.log.Error("telegram update not delivered; Telegram will retry", "update", upd.ID, "err", err)
		http.Error(w, "not stored", http.StatusInternalServerError)
	}
}

// secretMatches compares the secrets in constant time (hashing first, so
// not even the length leaks). An empty configured secret matches nothing.
func secretMatches(want, got string) bool {
	if want == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(want)), sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
