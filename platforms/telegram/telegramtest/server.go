// Package telegramtest is a fake Telegram Bot API server for tests. It
// speaks the Bot API's wire protocol on loopback — /bot<token>/<method>,
// parameters as query, multipart or urlencoded form, or JSON, answers in
// the {"ok", "result", "error_code", "description", "parameters"} envelope
// — for the methods Switchboard uses: getMe, getUpdates (long polling with
// confirm-by-offset), sendMessage, sendChatAction, setWebhook and
// deleteWebhook. Any other method gets Telegram's 404.
//
// Tests queue updates with Push, read what bots sent with Sent or
// WaitSent, inject failures (429 with retry_after, 5xx, gateway errors)
// with Fail and slow answers with Delay, and play Telegram calling a
// webhook with PostWebhook or DeliverWebhook.
package telegramtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a fake Bot API. Create it with New; it closes itself when the
// test ends.
type Server struct {
	// URL is the base URL to give the client (bot.WithServerURL).
	URL string

	t       testing.TB
	srv     *httptest.Server
	closing chan struct{}

	mu      sync.Mutex
	bots    map[string]*botState // by token
	chats   map[int64]*chatState
	faults  map[string][]fault // by lower-cased method
	changed chan struct{}      // closed and replaced on every change
}

// SentMessage is a message a bot sent with sendMessage.
type SentMessage struct {
	ChatID    int64
	MessageID int64
	Text      string
	// ReplyTo is the message answered, 0 when none (or when the original
	// was missing and allow_sending_without_reply was set).
	ReplyTo   int64
	ParseMode string
	From      User
	Date      time.Time
}

// ChatAction is one sendChatAction call.
type ChatAction struct {
	ChatID int64
	Action string
}

// WebhookInfo is a bot's webhook as set with setWebhook.
type WebhookInfo struct {
	URL            string
	Secret         string
	MaxConnections int
	AllowedUpdates []string
}

// botState is one bot's account on the fake.
type botState struct {
	user      User
	queue     []Update // not yet confirmed, ascending IDs
	nextID    int64
	pollGen   int // bumped per getUpdates; an older waiter ends with 409
	polling   int // getUpdates requests waiting
	conflicts int // getUpdates ended by a newer one (two pollers)
	webhook   WebhookInfo
	sent      []SentMessage
	actions   []ChatAction
	calls     map[string]int
	known     map[int64]bool // chats the bot may write to
	blockedBy map[int64]bool
}

// chatState is a chat as Telegram's servers know it.
type chatState struct {
	info   Chat
	nextID int64
	msgs   map[int64]bool
}

// fault is one injected failure or delay.
type fault struct {
	status, retryAfter int
	delay              time.Duration
}

// New starts a fake Bot API on loopback and closes it when t ends.
func New(t testing.TB) *Server {
	s := &Server{
		t:       t,
		closing: make(chan struct{}),
		bots:    make(map[string]*botState),
		chats:   make(map[int64]*chatState),
		faults:  make(map[string][]fault),
		changed: make(chan struct{}),
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(func() {
		// Long polls return first, so Close does not wait on them.
		close(s.closing)
		s.srv.Close()
	})
	return s
}

// AddBot registers a bot account: token is what the client sends, id and
// username what getMe answers.
func (s *Server) AddBot(token string, id int64, username string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bots[token] = newBotState(User{ID: id, IsBot: true, FirstName: username, Username: username})
}

func newBotState(u User) *botState {
	return &botState{
		user:      u,
		nextID:    1000,
		calls:     make(map[string]int),
		known:     make(map[int64]bool),
		blockedBy: make(map[int64]bool),
	}
}

// Bot returns the user a bot's token belongs to.
func (s *Server) Bot(token string) User {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bot(token).user
}

// bot returns token's state. An unknown token fails the test (without
// stopping it: callers hold mu) and yields an empty, unregistered state.
func (s *Server) bot(token string) *botState {
	b := s.bots[token]
	if b == nil {
		s.t.Errorf("telegramtest: unknown bot token %q; call AddBot first", token)
		b = newBotState(User{})
	}
	return b
}

// chat returns the chat with info's ID, creating it from info.
func (s *Server) chat(info Chat) *chatState {
	c := s.chats[info.ID]
	if c == nil {
		c = &chatState{info: info, nextID: 1, msgs: make(map[int64]bool)}
		s.chats[info.ID] = c
	}
	return c
}

// notifyLocked wakes everyone waiting for a change. Callers hold mu.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// serve routes /bot<token>/<method>, counting the call and applying an
// injected fault first.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || token == "" || method == "" {
		writeError(w, http.StatusNotFound, "Not Found", 0)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed", 0)
		return
	}
	method = strings.ToLower(method) // Telegram's method names are case-insensitive
	s.mu.Lock()
	b := s.bots[token]
	if b == nil {
		s.mu.Unlock()
		writeError(w, http.StatusUnauthorized, "Unauthorized", 0)
		return
	}
	b.calls[method]++
	var f *fault
	if q := s.faults[method]; len(q) > 0 {
		f = &q[0]
		s.faults[method] = q[1:]
	}
	s.notifyLocked()
	s.mu.Unlock()

	if f != nil && f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return // the client gave up: the call has no effect
		case <-s.closing:
			return
		}
	} else if f != nil {
		writeFault(w, *f)
		return
	}
	p, err := readParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad Request: "+err.Error(), 0)
		return
	}
	switch method {
	case "getme":
		s.getMe(w, token)
	case "getupdates":
		s.getUpdates(w, r, token, p)
	case "sendmessage":
		s.sendMessage(w, token, p)
	case "sendchataction":
		s.sendChatAction(w, token, p)
	case "setwebhook":
		s.setWebhook(w, token, p)
	case "deletewebhook":
		s.deleteWebhook(w, token, p)
	default:
		writeError(w, http.StatusNotFound, "Not Found: method not found", 0)
	}
}

// envelope is the Bot API's answer.
type envelope struct {
	OK          bool        `json:"ok"`
	Result      any         `json:"result,omitempty"`
	ErrorCode   int         `json:"error_code,omitempty"`
	Description string      `json:"description,omitempty"`
	Parameters  *parameters `json:"parameters,omitempty"`
}

type parameters struct {
	RetryAfter int `json:"retry_after,omitempty"`
}

// writeOK answers a successful call; desc is the optional description
// Telegram adds to some answers ("Webhook was set").
func writeOK(w http.ResponseWriter, result any, desc string) {
	writeJSON(w, http.StatusOK, envelope{OK: true, Result: result, Description: desc})
}

// writeError answers a failed call with the HTTP status Telegram uses,
// which is also the envelope's error_code.
func writeError(w http.ResponseWriter, code int, desc string, retryAfter int) {
	e := envelope{ErrorCode: code, Description: desc}
	if retryAfter > 0 {
		e.Parameters = &parameters{RetryAfter: retryAfter}
	}
	writeJSON(w, code, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeFault answers an injected failure the way Telegram (or the proxy
// in front of it) does.
func writeFault(w http.ResponseWriter, f fault) {
	switch f.status {
	case http.StatusTooManyRequests:
		writeError(w, f.status, "Too Many Requests: retry after "+itoa(int64(f.retryAfter)), f.retryAfter)
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(f.status)
		w.Write([]byte("<html><body><h1>" + http.StatusText(f.status) + "</h1></body></html>\n"))
	case http.StatusBadRequest:
		writeError(w, f.status, "Bad Request: chat not found", 0)
	case http.StatusForbidden:
		writeError(w, f.status, "Forbidden: bot was blocked by the user", 0)
	default:
		writeError(w, f.status, http.StatusText(f.status), 0)
	}
}
