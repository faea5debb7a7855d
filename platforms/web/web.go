// Package web is Switchboard's web widget platform: the chat page at /,
// the embeddable /widget.js, and the JSON-over-WebSocket protocol at /ws
// (SPEC §7). It implements gateway.Platform and its optional abilities.
package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
)

//go:embed assets
var assets embed.FS

// Options configure the adapter.
type Options struct {
	// Settings are the first live settings; Configure changes them.
	Settings
	// TokenKey signs anonymous visitors' resume tokens; it must survive
	// restarts for tokens to stay valid.
	TokenKey []byte
	Logger   *slog.Logger
}

// Settings are the adapter's options that may change while running
// (gateway.web, SPEC §12). A zero limit means no limit.
type Settings struct {
	// Secret is the HMAC key for signed-in users; empty allows anonymous
	// visitors only.
	Secret []byte
	// AllowedOrigins are the extra origins allowed to open /ws.
	AllowedOrigins []string
	// MaxConnectionsPerIP bounds the open /ws connections from one remote
	// address; beyond it /ws answers 429 before the upgrade.
	MaxConnectionsPerIP int
	// MessagesPerSecondPerPerson is the sustained rate of send frames of
	// one person across their connections (bursts of burstSeconds' worth).
	MessagesPerSecondPerPerson float64
	// MessagesPerSecondPerIP is the sustained rate of send frames of the
	// anonymous visitors of one remote address, together.
	MessagesPerSecondPerIP float64
}

// Adapter is the web widget platform.
type Adapter struct {
	log      *slog.Logger
	tokenKey []byte
	settings atomic.Pointer[Settings]
	// adminToken lets a dial speak as a terminal person (cli.go).
	adminToken atomic.Pointer[string]
	host       atomic.Pointer[hostRef]
	ready      chan struct{}
	upgrader   websocket.Upgrader
	// slots counts open connections by address; messages limits send
	// frames across connections.
	slots    addrSlots
	messages messageLimits
	// roster is the web's bots as the connections know them.
	roster roster

	mu     sync.RWMutex
	byUser map[string]map[*conn]struct{}  // platform ID → connections
	rooms  map[roomKey]map[*conn]struct{} // room → connections that joined it
	closed bool
	wg     sync.WaitGroup
}

type hostRef struct{ gateway.Host }

var (
	_ gateway.Platform          = (*Adapter)(nil)
	_ gateway.Typer             = (*Adapter)(nil)
	_ gateway.PrivateChatter    = (*Adapter)(nil)
	_ gateway.DelegationWatcher = (*Adapter)(nil)
	_ outbox.ParkLimiter        = (*Adapter)(nil)
)

// New returns an adapter; mount Handler on the HTTP server and Run it.
func New(opts Options) *Adapter {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	a := &Adapter{
		log:      opts.Logger.With("platform", gateway.PlatformWeb),
		tokenKey: opts.TokenKey,
		byUser:   make(map[string]map[*conn]struct{}),
		rooms:    make(map[roomKey]map[*conn]struct{}),
		ready:    make(chan struct{}),
	}
	a.Configure(opts.Settings)
	a.upgrader = websocket.Upgrader{
		ReadBufferSize:  4096,
		WriteBufferSize: 4096,
		// The origin check runs before the upgrade in serveWS, with the
		// settings in force at that moment.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	return a
}

// Configure swaps the live settings. Open connections stay open (a lower
// connection cap refuses new ones until the count is under it); new
// message rates apply to the next message.
func (a *Adapter) Configure(s Settings) {
	a.settings.Store(&s)
	a.messages.configure(&s)
}

// Name implements gateway.Platform.
func (a *Adapter) Name() string { return gateway.PlatformWeb }

// undeliveredKeep is how long a reply waits for a visitor who has left.
const undeliveredKeep = time.Hour

// MaxParked implements outbox.ParkLimiter: a reply to a visitor who left
// waits an hour for them to reconnect, then is marked failed (the widget
// shows it from the chat's history when they come back), so visitors who
// never return do not hold the gateway's memory.
func (a *Adapter) MaxParked() time.Duration { return undeliveredKeep }

// Run implements gateway.Platform: it serves connections until ctx ends,
// then closes every connection itself (http.Server.Shutdown does not close
// hijacked connections) and waits for their goroutines.
func (a *Adapter) Run(ctx context.Context, host gateway.Host) error {
	a.RosterChanged(host.Bots(gateway.PlatformWeb)) // before any connection
	a.host.Store(&hostRef{host})
	close(a.ready)
	<-ctx.Done()
	a.mu.Lock()
	a.closed = true
	var all []*conn
	for _, set := range a.byUser {
		for c := range set {
			all = append(all, c)
		}
	}
	a.mu.Unlock()
	// In parallel: each close writes a close frame with its own deadline.
	var closing sync.WaitGroup
	for _, c := range all {
		closing.Go(func() { c.close(websocket.CloseGoingAway, "server shutting down") })
	}
	closing.Wait()
	a.wg.Wait()
	return nil
}

// Ready is closed once Run has started and /ws accepts connections.
func (a *Adapter) Ready() <-chan struct{} { return a.ready }

// Handler serves the page, the embed script, the assets, /ws and the
// artifacts shown in chats.
func (a *Adapter) Handler() http.Handler {
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws", a.serveWS)
	mux.HandleFunc("GET /artifacts/{id}", a.serveArtifact)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.HandleFunc("GET /widget.js", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "widget.js")
	})
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", files))
	return mux
}

// serveWS authenticates, checks the origin and upgrades.
func (a *Adapter) serveWS(w http.ResponseWriter, r *http.Request) {
	ref := a.host.Load()
	if ref == nil {
		http.Error(w, "web platform not running", http.StatusServiceUnavailable)
		return
	}
	set := a.settings.Load()
	if !originAllowed(r, set.AllowedOrigins) {
		a.log.Warn("websocket refused: origin not allowed", "origin", r.Header.Get("Origin"))
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	ip := remoteIP(r)
	if !a.slots.acquire(ip, set.MaxConnectionsPerIP) {
		// Debug: a flood would otherwise write a line per attempt.
		a.log.Debug("websocket refused: too many connections from one address", "addr", ip, "max", set.MaxConnectionsPerIP)
		writeError(w, http.StatusTooManyRequests, "too_many_connections",
			fmt.Sprintf("more than %d widget connections from %s; close one and try again", set.MaxConnectionsPerIP, ip))
		return
	}
	held := false // whether a connection holds the slot
	defer func() {
		if !held {
			a.slots.release(ip)
		}
	}()
	var v visitor
	var err error
	status := http.StatusUnauthorized
	if cliRequest(r) {
		v, status, err = a.identifyCLI(r)
	} else {
		v, err = identify(r.URL.Query(), set.Secret, a.tokenKey)
	}
	if err != nil {
		a.log.Warn("websocket refused", "reason", err.Error())
		code := "unauthorized"
		if status == http.StatusBadRequest {
			code = "bad_request"
		}
		writeError(w, status, code, err.Error())
		return
	}
	hj := &hijacker{ResponseWriter: w}
	ws, err := a.upgrader.Upgrade(hj, r, nil)
	if err != nil {
		return // the upgrader has answered the request
	}
	c := newConn(a, ref.Host, ws, hj.conn, v, ip)
	bots, ok := a.admit(c)
	if !ok {
		c.close(websocket.CloseGoingAway, "server shutting down")
		return
	}
	held = true
	go func() { defer a.wg.Done(); c.writeLoop() }()
	go func() { defer a.wg.Done(); c.readLoop(bots); a.unregister(c); a.slots.release(ip) }()
}

// writeError answers a request with SPEC §8's JSON error shape.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": message}})
}

func (a *Adapter) register(c *conn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	// Added under the lock that Run takes before it waits.
	a.wg.Add(2)
	set := a.byUser[c.v.platformID]
	if set == nil {
		set = make(map[*conn]struct{})
		a.byUser[c.v.platformID] = set
	}
	set[c] = struct{}{}
	return true
}

func (a *Adapter) unregister(c *conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if set := a.byUser[c.v.platformID]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(a.byUser, c.v.platformID)
		}
	}
	for room := range c.joined() {
		k := roomKey{c.v.platform, room}
		if set := a.rooms[k]; set != nil {
			delete(set, c)
			if len(set) == 0 {
				delete(a.rooms, k)
			}
		}
	}
}

// roomKey names a room of one platform: the web and the terminal each
// have their own rooms.
type roomKey struct{ platform, room string }

// joinRoom records that c receives room's messages.
func (a *Adapter) joinRoom(c *conn, room string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := roomKey{c.v.platform, room}
	set := a.rooms[k]
	if set == nil {
		set = make(map[*conn]struct{})
		a.rooms[k] = set
	}
	set[c] = struct{}{}
}

// recipients lists the connections of platform that see chatID: the
// platform ID's connections for a private chat, the room's for a group.
func (a *Adapter) recipients(platform, chatID string, group bool) []*conn {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var set map[*conn]struct{}
	if group {
		set = a.rooms[roomKey{platform, chatID}]
	} else if pid, _, ok := gateway.SplitPrivateChatID(chatID); ok {
		set = a.byUser[pid]
	}
	out := make([]*conn, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	return out
}

// Send implements gateway.Platform. It returns once every recipient's
// write loop has written the message to its socket (so a message the
// outbox records as delivered has left the process; the kernel still
// delivers it if the gateway dies right after) or given up. A private
// message with no connection to receive it is outbox.ErrUnreachable, so
// the outbox keeps it until the person reconnects; a room message is
// delivered to whoever is in the room (the others read it in the room's
// history). The widget knows messages by their Switchboard IDs: there is
// no other ID to record.
func (a *Adapter) Send(ctx context.Context, m outbox.Entry) (string, error) {
	group := m.ChatType == chat.Group
	platform := m.Platform
	if platform == "" {
		platform = gateway.PlatformWeb
	}
	conns := a.recipients(platform, m.ChatID, group)
	if len(conns) == 0 {
		return "", sendOutcome(0, group)
	}
	f := messageFrame{
		Type: "message", ID: m.MessageID, Chat: m.ChatID, ChatType: chatTypeField(m.ChatType), Bot: m.Bot,
		From: m.From, Text: m.Text, Time: m.Time.UTC().Format(time.RFC3339Nano), Delegation: m.Delegation,
		ReplyTo: m.ReplyToID, Failed: m.Failed, Artifacts: artifactFrames(m.Artifacts),
	}
	written := make(chan error, len(conns))
	for _, c := range conns {
		c.sendThen(f, func(err error) { written <- err })
	}
	sent := 0
	for range conns {
		select {
		case err := <-written:
			if err == nil {
				sent++
			}
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return "", sendOutcome(sent, group)
}

// sendOutcome is Send's error after a message reached sent connections:
// a private message that reached none is ErrUnreachable.
func sendOutcome(sent int, group bool) error {
	if sent == 0 && !group {
		return outbox.ErrUnreachable
	}
	return nil
}

// PrivateChat implements gateway.PrivateChatter: a web visitor's chat with
// a bot is named after both and needs no opening.
func (a *Adapter) PrivateChat(_ context.Context, bot, platformID string) (string, error) {
	if !strings.HasPrefix(platformID, "web-") {
		return "", fmt.Errorf("web: %q is not a web identity", platformID)
	}
	return gateway.PrivateChatID(platformID, bot), nil
}

// DelegationChanged implements gateway.DelegationWatcher: the user's open
// widget connections get a delegation frame.
func (a *Adapter) DelegationChanged(ref delegation.Ref, platformIDs []string) {
	a.delegationChanged(ref, platformIDs, gateway.PlatformWeb)
}

// delegationChanged sends a delegation frame to the connections of the
// platform's IDs among platformIDs (the web's "web-…" or the terminal's
// "cli-…").
func (a *Adapter) delegationChanged(ref delegation.Ref, platformIDs []string, platform string) {
	prefix := platform + "-"
	f := delegationFrame{Type: "delegation", Ref: ref}
	if ref.Origin.Platform == platform {
		f.Chat = ref.Origin.ID
	}
	a.mu.RLock()
	var conns []*conn
	for _, pid := range platformIDs {
		if !strings.HasPrefix(pid, prefix) {
			continue
		}
		for c := range a.byUser[pid] {
			conns = append(conns, c)
		}
	}
	a.mu.RUnlock()
	for _, c := range conns {
		c.send(f)
	}
}

// Typing implements gateway.Typer.
func (a *Adapter) Typing(ctx context.Context, bot, chatID string) error {
	return a.typing(gateway.PlatformWeb, bot, chatID)
}

// typing sends a typing frame to platform's connections in the chat.
func (a *Adapter) typing(platform, bot, chatID string) error {
	// (A room's name may hold a ':', but never has a private chat's form.)
	_, private := gateway.PrivateChatOwner(chatID)
	for _, c := range a.recipients(platform, chatID, !private) {
		c.send(typingFrame{Type: "typing", Chat: chatID, Bot: bot})
	}
	return nil
}

// broadcast sends the frame made by frame to the chat's connections
// except skip; frame is called only if there is one.
func (a *Adapter) broadcast(platform, chatID string, group bool, skip *conn, frame func() any) {
	var f any
	for _, c := range a.recipients(platform, chatID, group) {
		if c == skip {
			continue
		}
		if f == nil {
			f = frame()
		}
		c.send(f)
	}
}

// errUnavailable wraps gateway failures the client may retry.
var errUnavailable = errors.New("the gateway cannot take messages right now; try again")
