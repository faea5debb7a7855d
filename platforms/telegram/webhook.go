package telegram

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"time"

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
// is not the bot's secret (or for a bot without a secret) 401, both
// without reading the body and on a connection then closed. The update
// is handled as a polled one, one at a time per bot, and answered 200 once
// the gateway has stored it, so Telegram retries anything not stored: 503
// before the bot is ready or while the gateway stops, 500 when storing
// failed, 400 for a body that is not an update.
func (p *Platform) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /telegram/{bot}", p.serveWebhook)
	// Anything else under /telegram/ is refused the same way, unread.
	mux.HandleFunc("/telegram/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			refuse(w, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		refuse(w, http.StatusNotFound, "404 page not found")
	})
	return mux
}

func (p *Platform) serveWebhook(w http.ResponseWriter, r *http.Request) {
	// Both checks come before anything reads the body (SPEC §12).
	c, ok := p.conn(r.PathValue("bot"))
	if !ok || c.cfg.Mode != ModeWebhook {
		refuse(w, http.StatusNotFound, "404 page not found")
		return
	}
	if !secretMatches(c.cfg.WebhookSecret, r.Header.Get(SecretHeader)) {
		c.log.Warn("telegram webhook call with a wrong secret", "remote", r.RemoteAddr)
		refuse(w, http.StatusUnauthorized, "wrong secret token")
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

// refuse answers without reading the request's body and closes the
// connection after the answer. Left open, the server would read up to
// 256 KiB of the unread body to reuse the connection, which a body
// trickled a byte at a time holds for as long as the caller likes.
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, status)
	// Reading the rest of the body now fails at once; the answer is
	// already written. A ResponseWriter without deadlines has no
	// connection to hold.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
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
