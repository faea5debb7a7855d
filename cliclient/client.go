// Package cliclient is the terminal's side of the /ws protocol (SPEC §7,
// §9): it dials a running gateway as a terminal person (cli-<name>, with
// the admin token) and exchanges the widget's frames. The commands
// switchboard send, chat and conv are built on it.
package cliclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// DefaultServer is the gateway the commands talk to unless told.
const DefaultServer = "http://127.0.0.1:8080"

// Options say whom to dial and as whom.
type Options struct {
	// Server is the gateway's base URL (http or https).
	Server string
	// Token is the gateway's admin token.
	Token string
	// As is the person's name, without "cli-".
	As string
}

// Party is a message's author.
type Party struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Delegation is a hand-off's status as frames carry it.
type Delegation struct {
	ID string `json:"id"`
	// Kind is "handoff" or "help" (a help request).
	Kind   string `json:"kind,omitempty"`
	From   string `json:"from_bot"`
	To     string `json:"to_bot"`
	Task   string `json:"task"`
	Status string `json:"status"`
	Depth  int    `json:"depth"`
	// Progress is a running hand-off's newest report (SPEC §10.7); the
	// frames keep the last one after it ends.
	Progress *Progress `json:"progress,omitempty"`
}

// Progress is how far a delegated bot says it got.
type Progress struct {
	Text  string `json:"text"`
	Step  int    `json:"step,omitempty"`
	Total int    `json:"total,omitempty"`
}

// Label is the progress as people read it, as the widget and the
// dashboard show it: "Step 1/3: Surveying CompetitorX", "Step 2: …"
// without a total, or the text alone.
func (p Progress) Label() string {
	switch {
	case p.Step > 0 && p.Total > 0:
		return fmt.Sprintf("Step %d/%d: %s", p.Step, p.Total, p.Text)
	case p.Step > 0:
		return fmt.Sprintf("Step %d: %s", p.Step, p.Text)
	}
	return p.Text
}

// Artifact is a file shown with a message.
type Artifact struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
}

// Bot is a bot as hello and joined list it.
type Bot struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Frame is any server → client frame; Raw is its JSON as received.
type Frame struct {
	Type       string      `json:"type"`
	ID         int64       `json:"id"`
	Chat       string      `json:"chat"`
	ChatType   string      `json:"chat_type"`
	Bot        string      `json:"bot"`
	From       Party       `json:"from"`
	Text       string      `json:"text"`
	Time       string      `json:"time"`
	ReplyTo    int64       `json:"reply_to"`
	Failed     bool        `json:"failed"`
	Delegation *Delegation `json:"delegation"`
	ClientID   string      `json:"client_id"`
	Code       string      `json:"code"`
	Message    string      `json:"message"`
	User       string      `json:"user"`
	PlatformID string      `json:"platform_id"`
	Bots       []Bot       `json:"bots"`
	Messages   []Frame     `json:"messages"`
	Artifacts  []Artifact  `json:"artifacts"`

	Raw json.RawMessage `json:"-"`
}

// Conn is a dialled connection. Frames arrive on Frames until the
// connection ends; Err then says why.
type Conn struct {
	// Hello is the server's first frame.
	Hello  Frame
	ws     *websocket.Conn
	frames chan Frame
	mu     sync.Mutex
	err    error
	wmu    sync.Mutex
	closed chan struct{}
	once   sync.Once
}

// Error is a failure to dial that a person can act on: Error() names the
// fix.
type Error struct {
	Msg string
}

func (e *Error) Error() string { return e.Msg }

// namePart keeps what a person's name may hold after "cli-".
var namePart = regexp.MustCompile(`[^A-Za-z0-9_.@-]+`)

// Sanitize turns a login name into a valid cli name: characters other
// than letters, digits and . _ @ - become "-", leading non-alphanumerics
// and trailing "-" are dropped, and it is cut at 64 characters; it may
// come out empty.
func Sanitize(name string) string {
	s := namePart.ReplaceAllString(name, "-")
	s = strings.TrimLeft(s, "_.@-")
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.TrimRight(s, "-")
}

// PlatformID is the person's platform ID, cli-<As>.
func (o Options) PlatformID() string { return "cli-" + o.As }

// base checks the options and returns the server's URL.
func (o Options) base() (*url.URL, error) {
	base, err := url.Parse(strings.TrimRight(o.Server, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, &Error{Msg: fmt.Sprintf("--server %q is not an http:// or https:// URL", o.Server)}
	}
	if o.Token == "" {
		return nil, &Error{Msg: "no admin token: pass --token or set SWITCHBOARD_ADMIN_TOKEN to the gateway's admin token"}
	}
	if o.As == "" {
		return nil, &Error{Msg: "no name to speak as: pass --as NAME"}
	}
	return base, nil
}

// Dial connects to the gateway as cli-<o.As>.
func Dial(ctx context.Context, o Options) (*Conn, error) {
	base, err := o.base()
	if err != nil {
		return nil, err
	}
	u := *base
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[base.Scheme]
	u.Path = strings.TrimRight(u.Path, "/") + "/ws"
	u.RawQuery = url.Values{"as": {o.PlatformID()}}.Encode()
	h := http.Header{"Authorization": {"Bearer " + o.Token}}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, Proxy: http.ProxyFromEnvironment}
	ws, resp, err := d.DialContext(ctx, u.String(), h)
	if err != nil {
		return nil, dialError(o.Server, resp, err)
	}
	c := &Conn{ws: ws, frames: make(chan Frame, 256), closed: make(chan struct{})}
	ws.SetReadLimit(8 << 20)
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	hello, err := c.readFrame()
	if err != nil || hello.Type != "hello" {
		ws.Close()
		return nil, &Error{Msg: fmt.Sprintf("%s answered /ws without a hello: is it a Switchboard gateway?", o.Server)}
	}
	ws.SetReadDeadline(time.Time{})
	c.Hello = hello
	go c.readLoop()
	return c, nil
}

// dialError explains a failed dial with its fix.
func dialError(server string, resp *http.Response, err error) error {
	if resp != nil {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		why := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
			why = e.Error.Message
		}
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			return &Error{Msg: fmt.Sprintf("%s refused the admin token (%s): pass the gateway's token with --token or SWITCHBOARD_ADMIN_TOKEN", server, why)}
		case http.StatusBadRequest:
			return &Error{Msg: fmt.Sprintf("%s refused the connection: %s", server, why)}
		case http.StatusTooManyRequests:
			return &Error{Msg: fmt.Sprintf("%s: %s", server, why)}
		case http.StatusNotFound:
			return &Error{Msg: fmt.Sprintf("%s has no /ws: is --server a Switchboard gateway?", server)}
		}
		return &Error{Msg: fmt.Sprintf("%s answered HTTP %d: %s", server, resp.StatusCode, why)}
	}
	var op *net.OpError
	if errors.As(err, &op) || errors.Is(err, context.DeadlineExceeded) {
		return &Error{Msg: fmt.Sprintf("no gateway at %s — is `switchboard serve` running?", server)}
	}
	return &Error{Msg: fmt.Sprintf("cannot reach %s: %v", server, err)}
}

func (c *Conn) readFrame() (Frame, error) {
	_, data, err := c.ws.ReadMessage()
	if err != nil {
		return Frame{}, err
	}
	return decodeFrame(data)
}

// decodeFrame parses one server frame. A delegation frame's fields
// (its id a string) are at its top level; they go to Delegation.
func decodeFrame(data []byte) (Frame, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Frame{}, fmt.Errorf("a frame that is not JSON: %w", err)
	}
	var f Frame
	if head.Type == "delegation" {
		var d Delegation
		if err := json.Unmarshal(data, &d); err != nil {
			return Frame{}, fmt.Errorf("a delegation frame: %w", err)
		}
		f = Frame{Type: head.Type, Delegation: &d}
	} else if err := json.Unmarshal(data, &f); err != nil {
		return Frame{}, fmt.Errorf("a %s frame: %w", head.Type, err)
	}
	f.Raw = append(json.RawMessage(nil), data...)
	return f, nil
}

func (c *Conn) readLoop() {
	defer close(c.frames)
	for {
		f, err := c.readFrame()
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		select {
		case c.frames <- f:
		case <-c.closed:
			return
		}
	}
}

// Frames delivers the server's frames after hello, in order; it is
// closed when the connection ends.
func (c *Conn) Frames() <-chan Frame { return c.frames }

// Err is why the connection ended, once Frames is closed.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Send writes one client frame.
func (c *Conn) Send(frame map[string]any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.ws.WriteJSON(frame)
}

// Close ends the connection with a normal close.
func (c *Conn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.wmu.Lock()
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		c.wmu.Unlock()
	})
	return c.ws.Close()
}

// BotName is the display name hello gave bot, or the ID.
func (c *Conn) BotName(bot string) string {
	for _, b := range c.Hello.Bots {
		if b.ID == bot {
			return b.Name
		}
	}
	return bot
}

// GroupID is the ID of the group conversation with bots: "cli:" and the
// sorted, de-duplicated IDs joined by "+" (SPEC §9).
func GroupID(bots []string) string {
	ids := append([]string(nil), bots...)
	sortStrings(ids)
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return "cli:" + strings.Join(out, "+")
}
