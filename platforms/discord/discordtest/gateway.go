package discordtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Gateway opcodes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opPresence       = 3
	opVoiceState     = 4
	opResume         = 6
	opRequestMembers = 8
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// Intents the fake honours.
const (
	intentGuildMessages  = 1 << 9
	intentDirectMessages = 1 << 12
	intentMessageContent = 1 << 15
)

// bot is a registered bot account.
type bot struct {
	token      string
	user       User
	identifies int
	resumes    int
	// session is the bot's latest session; nil before the first IDENTIFY.
	session *session
	// pending holds messages dispatched before the first IDENTIFY.
	pending []MessageCreate
}

// session is a gateway session: it outlives its connection and can be
// resumed while its frames still hold what the client missed.
type session struct {
	id      string
	bot     *bot
	intents int
	seq     int64
	frames  []frame // retained MESSAGE_CREATE dispatches
	trimmed int64   // highest sequence dropped from frames
	conn    *conn   // nil while disconnected
}

type frame struct {
	seq  int64
	data []byte
}

// conn is one gateway WebSocket. Frames are queued under Server.mu and
// written by the connection's writer goroutine, so they go out in order.
type conn struct {
	ws      *websocket.Conn
	out     chan []byte
	done    chan struct{}
	once    sync.Once
	session *session // guarded by Server.mu
}

// payload is a gateway frame.
type payload struct {
	Op int     `json:"op"`
	D  any     `json:"d"`
	S  *int64  `json:"s"`
	T  *string `json:"t"`
}

func encode(op int, d any, seq int64, typ string) []byte {
	p := payload{Op: op, D: d}
	if op == opDispatch {
		p.S, p.T = &seq, &typ
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // only the fake's own types are encoded
	}
	return b
}

// send queues a frame; a client too slow to take 4096 frames is dropped.
// Callers hold Server.mu.
func (c *conn) send(b []byte) {
	select {
	case c.out <- b:
	case <-c.done:
	default:
		c.kill()
	}
}

// kill ends the connection abruptly, without a close frame.
func (c *conn) kill() {
	c.once.Do(func() {
		close(c.done)
		c.ws.NetConn().Close()
	})
}

// closeWith sends a close frame with code, then ends the connection.
func (c *conn) closeWith(code int, text string) {
	c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
	c.kill()
}

func (c *conn) writeLoop() {
	for {
		select {
		case b := <-c.out:
			c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
				c.kill()
				return
			}
		case <-c.done:
			return
		}
	}
}

// serveWS runs one gateway connection.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws, out: make(chan []byte, 4096), done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(2)
	c.send(encode(opHello, map[string]any{"heartbeat_interval": s.heartbeat.Milliseconds()}, 0, ""))
	s.mu.Unlock()
	go func() { defer s.wg.Done(); c.writeLoop() }()
	defer s.wg.Done()
	defer s.detach(c)
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var p struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if err := json.Unmarshal(data, &p); err != nil {
			c.closeWith(4002, "Error while decoding payload.")
			return
		}
		switch p.Op {
		case opHeartbeat:
			s.mu.Lock()
			c.send(encode(opHeartbeatACK, nil, 0, ""))
			s.mu.Unlock()
		case opIdentify:
			s.identify(c, p.D)
		case opResume:
			s.resume(c, p.D)
		case opPresence, opVoiceState, opRequestMembers:
		default:
			c.closeWith(4001, "Unknown opcode.")
			return
		}
	}
}

// detach forgets a closed connection; its session stays resumable.
func (s *Server) detach(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	if c.session != nil && c.session.conn == c {
		c.session.conn = nil
	}
	c.kill()
}

func (s *Server) identify(c *conn, d json.RawMessage) {
	var id struct {
		Token   string `json:"token"`
		Intents int    `json:"intents"`
	}
	json.Unmarshal(d, &id)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bots[strings.TrimPrefix(id.Token, "Bot ")]
	if b == nil {
		c.closeWith(4004, "Authentication failed.")
		return
	}
	if c.session != nil && c.session.conn == c {
		c.closeWith(4005, "Already authenticated.")
		return
	}
	b.identifies++
	if old := b.session; old != nil {
		delete(s.sessions, old.id)
		if old.conn != nil && old.conn != c {
			old.conn.kill()
			old.conn.session = nil
		}
		old.conn = nil
	}
	sess := &session{id: randomID(), bot: b, intents: id.Intents, conn: c}
	s.sessions[sess.id] = sess
	b.session, c.session = sess, sess
	s.dispatchLocked(sess, "READY", map[string]any{
		"v":                  9,
		"user":               userJSON(b.user),
		"session_id":         sess.id,
		"resume_gateway_url": s.GatewayURL(),
		"guilds":             []any{},
		"private_channels":   []any{},
		"application":        map[string]any{"id": b.user.ID, "flags": 0},
	}, false)
	for _, m := range b.pending {
		s.deliverLocked(b, m)
	}
	b.pending = nil
}

func (s *Server) resume(c *conn, d json.RawMessage) {
	var r struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	json.Unmarshal(d, &r)
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[r.SessionID]
	if sess == nil || sess.bot.token != strings.TrimPrefix(r.Token, "Bot ") || r.Seq < sess.trimmed || r.Seq > sess.seq {
		// Discord answers with op 9 and d=false: identify anew.
		c.send(encode(opInvalidSession, false, 0, ""))
		return
	}
	if sess.conn != nil && sess.conn != c {
		sess.conn.kill()
		sess.conn.session = nil
	}
	sess.conn, c.session = c, sess
	sess.bot.resumes++
	for _, f := range sess.frames {
		if f.seq > r.Seq {
			c.send(f.data)
		}
	}
	s.dispatchLocked(sess, "RESUMED", map[string]any{}, false)
}

// dispatchLocked sends a dispatch on sess, keeping it for replay when
// retain is set. Callers hold mu.
func (s *Server) dispatchLocked(sess *session, typ string, d any, retain bool) {
	sess.seq++
	data := encode(opDispatch, d, sess.seq, typ)
	if retain {
		sess.frames = append(sess.frames, frame{sess.seq, data})
		if over := len(sess.frames) - s.replayMax; over > 0 {
			sess.trimmed = sess.frames[over-1].seq
			sess.frames = slices.Delete(sess.frames, 0, over)
		}
	}
	if sess.conn != nil {
		sess.conn.send(data)
	}
}

// Dispatch sends m to the bot with token as MESSAGE_CREATE and returns
// its ID. While the bot is disconnected the dispatch waits in its session
// and is replayed on RESUME; before its first IDENTIFY it is delivered
// after READY.
func (s *Server) Dispatch(token string, m MessageCreate) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bots[token]
	if b == nil {
		s.t.Errorf("discordtest: Dispatch to unknown bot token %q", token)
		return ""
	}
	m = s.prepareLocked(m)
	s.deliverLocked(b, m)
	return m.ID
}

// DispatchAll sends m to every bot that sees its channel: all bots for a
// guild channel, the DM's bot for a DM channel. It returns m's ID.
func (s *Server) DispatchAll(m MessageCreate) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m = s.prepareLocked(m)
	for _, b := range s.viewersLocked(m.ChannelID, "") {
		s.deliverLocked(b, m)
	}
	return m.ID
}

// prepareLocked fills m's ID and time and records its guild channel.
func (s *Server) prepareLocked(m MessageCreate) MessageCreate {
	if m.ID == "" {
		m.ID = s.newIDLocked()
	}
	if m.Timestamp.IsZero() {
		m.Timestamp = time.Now().UTC()
	}
	if m.GuildID != "" {
		s.guildOf[m.ChannelID] = m.GuildID
	}
	s.known[m.ID] = struct{}{}
	return m
}

// viewersLocked lists the bots that see channel, in token order; poster
// (a bot user ID) sees an unknown channel it posted to.
func (s *Server) viewersLocked(channel, poster string) []*bot {
	tokens := make([]string, 0, len(s.bots))
	for t := range s.bots {
		tokens = append(tokens, t)
	}
	slices.Sort(tokens)
	var out []*bot
	for _, t := range tokens {
		b := s.bots[t]
		_, guild := s.guildOf[channel]
		owner, dm := s.dmOwner[channel]
		if guild || (dm && owner == b.user.ID) || (!guild && !dm && b.user.ID == poster) {
			out = append(out, b)
		}
	}
	return out
}

// deliverLocked dispatches m to b as its intents allow.
func (s *Server) deliverLocked(b *bot, m MessageCreate) {
	sess := b.session
	if sess == nil {
		b.pending = append(b.pending, m)
		return
	}
	guild := m.GuildID != ""
	if (guild && sess.intents&intentGuildMessages == 0) || (!guild && sess.intents&intentDirectMessages == 0) {
		return
	}
	content := m.Content
	mentioned := strings.Contains(content, Mention(b.user.ID)) || strings.Contains(content, NickMention(b.user.ID))
	if guild && sess.intents&intentMessageContent == 0 && !mentioned && m.Author.ID != b.user.ID {
		// Without the privileged intent, Discord blanks guild content.
		content = ""
	}
	s.dispatchLocked(sess, "MESSAGE_CREATE", s.messageJSON(m, content), true)
}

// DropConnection kills every gateway connection abruptly, as a network
// failure would; the sessions stay resumable.
func (s *Server) DropConnection() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.session != nil && c.session.conn == c {
			c.session.conn = nil
		}
		c.kill()
	}
}

// InvalidateSessions makes every existing session unresumable: the next
// RESUME gets INVALID_SESSION, and what it missed is lost, as on Discord.
func (s *Server) InvalidateSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.sessions)
}

func randomID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
