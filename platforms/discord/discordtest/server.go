// Package discordtest is a fake Discord for tests: an httptest server on
// loopback that speaks enough of Discord's REST API (under /api/v9) and of
// its gateway WebSocket protocol for a real client library (discordgo) to
// run against it.
//
// REST: GET /gateway and /gateway/bot, GET /users/@me, POST
// /channels/{id}/messages (JSON or multipart with payload_json), POST
// /channels/{id}/typing, POST /users/@me/channels, authenticated by
// "Authorization: Bot <token>". Creating messages and typing carry the
// X-RateLimit-* headers of a per-bot, per-channel window (5 per 5 s by
// default, as Discord's) and answer 429 past it. Failures (429 with
// retry_after, 5xx, 4xx) and delays can be injected per route.
//
// Gateway: HELLO, IDENTIFY → READY (session_id, user,
// resume_gateway_url), heartbeats and their ACKs, MESSAGE_CREATE
// dispatches with sequence numbers, RESUME → the missed dispatches then
// RESUMED, INVALID_SESSION when a session cannot be resumed. The intents
// of IDENTIFY are honoured: guild messages, direct messages, and message
// content (without it, guild messages that do not mention the bot arrive
// with empty content).
//
// The world is simple: every bot is in every guild, a DM channel belongs
// to one bot and one user, and messages a bot posts are dispatched back
// to the bots that see the channel, as Discord does.
package discordtest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// User is a Discord user as the fake sends it.
type User struct {
	ID         string
	Username   string
	GlobalName string
	Bot        bool
}

// MessageCreate is one message dispatched to a bot as MESSAGE_CREATE.
type MessageCreate struct {
	// ID is the message's snowflake; Dispatch fills it when empty.
	ID        string
	ChannelID string
	// GuildID is empty for a DM.
	GuildID string
	Author  User
	Content string
	// Timestamp defaults to the time of Dispatch.
	Timestamp time.Time
	// ReferenceID is message_reference.message_id: the message this one
	// replies to.
	ReferenceID string
}

// Reply returns a copy of m that replies to message id.
func (m MessageCreate) Reply(id string) MessageCreate {
	m.ReferenceID = id
	return m
}

// SentMessage is a message a bot posted through the REST API.
type SentMessage struct {
	ID        string
	ChannelID string
	// Bot is the posting bot's Discord user ID.
	Bot     string
	Content string
	// ReplyTo is message_reference.message_id, if any.
	ReplyTo string
	// Multipart is true when the request was multipart/form-data.
	Multipart bool
	Time      time.Time
}

// Mention is the text of a mention of user id: "<@id>".
func Mention(id string) string { return "<@" + id + ">" }

// NickMention is the legacy nickname form of a mention: "<@!id>".
func NickMention(id string) string { return "<@!" + id + ">" }

// Routes, as given to Fail, Delay and Requests.
const (
	RouteGateway       = "GET /gateway"
	RouteGatewayBot    = "GET /gateway/bot"
	RouteMe            = "GET /users/@me"
	RouteCreateMessage = "POST /channels/{channel_id}/messages"
	RouteTyping        = "POST /channels/{channel_id}/typing"
	RouteCreateDM      = "POST /users/@me/channels"
)

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	t        testing.TB
	srv      *httptest.Server
	upgrader websocket.Upgrader
	sent     chan SentMessage

	mu        sync.Mutex
	closed    bool
	bots      map[string]*bot // by token, without "Bot "
	sessions  map[string]*session
	conns     map[*conn]struct{}
	dms       map[dmKey]string  // (bot user, recipient) → channel
	dmOwner   map[string]string // DM channel → bot user ID
	guildOf   map[string]string // guild channel → guild
	posted    []SentMessage
	known     map[string]struct{} // message IDs dispatched or posted
	nextID    int64
	heartbeat time.Duration
	replayMax int
	echo      bool
	limit     int
	window    time.Duration
	windows   map[string]*rateWindow
	injected  map[string][]injection
	requests  map[string]int
	typing    map[string]int
	wg        sync.WaitGroup
}

type dmKey struct{ bot, user string }

// New starts a fake on loopback and stops it when the test ends.
func New(t testing.TB) *Server {
	s := &Server{
		t:         t,
		sent:      make(chan SentMessage, 10000),
		bots:      make(map[string]*bot),
		sessions:  make(map[string]*session),
		conns:     make(map[*conn]struct{}),
		dms:       make(map[dmKey]string),
		dmOwner:   make(map[string]string),
		guildOf:   make(map[string]string),
		known:     make(map[string]struct{}),
		nextID:    1_200_000_000_000_000_000,
		heartbeat: 41250 * time.Millisecond,
		replayMax: 1000,
		echo:      true,
		limit:     5,
		window:    5 * time.Second,
		windows:   make(map[string]*rateWindow),
		injected:  make(map[string][]injection),
		requests:  make(map[string]int),
		typing:    make(map[string]int),
		upgrader:  websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }},
	}
	mux := http.NewServeMux()
	s.routes(mux)
	mux.HandleFunc("GET /ws", s.serveWS)
	mux.HandleFunc("GET /ws/", s.serveWS)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// URL is the server's base URL (http://127.0.0.1:port).
func (s *Server) URL() string { return s.srv.URL }

// APIURL is the REST base, for a client's api_url.
func (s *Server) APIURL() string { return s.srv.URL + "/api/v9" }

// GatewayURL is the gateway's WebSocket URL, also returned by discovery
// and as resume_gateway_url.
func (s *Server) GatewayURL() string { return "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/ws" }

// Close drops every gateway connection and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for c := range s.conns {
		c.kill()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.srv.Close()
}

// AddBot registers a bot account: its token (without "Bot "), Discord user
// ID and username.
func (s *Server) AddBot(token, userID, username string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bots[token] = &bot{token: token, user: User{ID: userID, Username: username, Bot: true}}
}

// SetHeartbeatInterval sets the interval sent in HELLO (default 41.25 s).
func (s *Server) SetHeartbeatInterval(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heartbeat = d
}

// SetRateLimit sets the create-message limit per bot and channel: limit
// requests per fixed window (default 5 per 5 s). Typing has the same.
func (s *Server) SetRateLimit(limit int, window time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit, s.window = limit, window
	s.windows = make(map[string]*rateWindow)
}

// SetEcho sets whether posted messages are dispatched back to the bots
// that see the channel (default true).
func (s *Server) SetEcho(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.echo = on
}

// DM builds a message from user from to the bot with token, in their DM
// channel (created if needed).
func (s *Server) DM(token string, from User, text string) MessageCreate {
	return MessageCreate{ChannelID: s.DMChannel(token, from.ID), Author: from, Content: text}
}

// GuildMessage builds a message in a guild channel.
func (s *Server) GuildMessage(guildID, channelID string, from User, text string) MessageCreate {
	return MessageCreate{ChannelID: channelID, GuildID: guildID, Author: from, Content: text}
}

// DMChannel returns the DM channel between the bot with token and a user,
// creating it as POST /users/@me/channels would.
func (s *Server) DMChannel(token, userID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bots[token]
	if b == nil {
		s.t.Errorf("discordtest: unknown bot token %q", token)
		return ""
	}
	return s.dmLocked(b.user.ID, userID)
}

func (s *Server) dmLocked(botUser, userID string) string {
	k := dmKey{botUser, userID}
	if ch, ok := s.dms[k]; ok {
		return ch
	}
	ch := s.newIDLocked()
	s.dms[k] = ch
	s.dmOwner[ch] = botUser
	return ch
}

func (s *Server) newIDLocked() string {
	s.nextID++
	return strconv.FormatInt(s.nextID, 10)
}

// Sent returns the messages bots have posted, in order.
func (s *Server) Sent() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.posted...)
}

// Messages receives each message a bot posts, as it is posted.
func (s *Server) Messages() <-chan SentMessage { return s.sent }

// Fail makes the next n requests on route fail with status. For 429 the
// body's retry_after, Retry-After (whole seconds, rounded up) and
// X-RateLimit-Reset-After carry retryAfter seconds.
func (s *Server) Fail(route string, n, status int, retryAfter float64) {
	s.inject(route, n, injection{status: status, retryAfter: retryAfter})
}

// Delay holds the next n requests on route for d before answering; a
// request whose client gave up meanwhile is dropped unprocessed.
func (s *Server) Delay(route string, n int, d time.Duration) {
	s.inject(route, n, injection{delay: d})
}

func (s *Server) inject(route string, n int, in injection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.injected[route] = append(s.injected[route], in)
	}
}

// Requests counts the requests received on route, failed ones included.
func (s *Server) Requests(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[route]
}

// Typing counts typing indicators triggered in a channel.
func (s *Server) Typing(channelID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.typing[channelID]
}

// Identifies counts the IDENTIFYs of the bot with token.
func (s *Server) Identifies(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bots[token]; b != nil {
		return b.identifies
	}
	return 0
}

// Resumes counts the successful RESUMEs of the bot with token.
func (s *Server) Resumes(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bots[token]; b != nil {
		return b.resumes
	}
	return 0
}

// Intents returns the intents of the latest IDENTIFY of the bot with
// token (0 before one).
func (s *Server) Intents(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bots[token]; b != nil && b.session != nil {
		return b.session.intents
	}
	return 0
}

// Connected reports whether the bot with token has a live, identified (or
// resumed) gateway connection.
func (s *Server) Connected(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bots[token]
	return b != nil && b.session != nil && b.session.conn != nil
}
