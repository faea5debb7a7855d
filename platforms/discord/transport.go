package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// discordgo builds every REST URL from package-level variables rooted at
// https://discord.com/api/v9/, so the adapter points it elsewhere at the
// HTTP layer: the transport below rewrites those URLs to the configured
// api_url and, when gateway_url is set, answers gateway discovery itself.
const (
	discordHost    = "discord.com"
	discordAPIPath = "/api/v9"
)

// transport is the http.RoundTripper of one bot's discordgo session.
type transport struct {
	// base replaces https://discord.com/api/v9; nil keeps Discord's.
	base *url.URL
	// gateway, when set, is returned by GET /gateway and /gateway/bot
	// without asking the API.
	gateway string
	next    *http.Transport
}

// newTransport checks apiURL and gatewayURL and returns the transport for
// them. An apiURL without a path (http://host:port) gets /api/v9.
func newTransport(apiURL, gatewayURL string) (*transport, error) {
	// A transport of its own, so closing the bot closes its connections.
	next := http.DefaultTransport.(*http.Transport).Clone()
	t := &transport{gateway: gatewayURL, next: next}
	if apiURL != "" {
		u, err := url.Parse(apiURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("discord: api_url %q is not an http(s) URL", apiURL)
		}
		u.Path = strings.TrimRight(u.Path, "/")
		if u.Path == "" {
			u.Path = discordAPIPath
		}
		u.RawPath, u.RawQuery, u.Fragment = "", "", ""
		t.base = u
	}
	if gatewayURL != "" {
		u, err := url.Parse(gatewayURL)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return nil, fmt.Errorf("discord: gateway_url %q is not a ws(s) URL", gatewayURL)
		}
	}
	return t, nil
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	rest, isAPI := strings.CutPrefix(req.URL.Path, discordAPIPath)
	isAPI = isAPI && req.URL.Host == discordHost
	if isAPI && t.gateway != "" && req.Method == http.MethodGet && (rest == "/gateway" || rest == "/gateway/bot") {
		return t.discovery(req), nil
	}
	out := req
	if isAPI && t.base != nil {
		// A RoundTripper must not modify the request it was given.
		out = req.Clone(req.Context())
		out.URL.Scheme = t.base.Scheme
		out.URL.Host = t.base.Host
		out.URL.Path = t.base.Path + rest
		out.URL.RawPath = ""
		out.Host = ""
	}
	resp, err := t.next.RoundTrip(out)
	if p, ok := req.Context().Value(probeKey{}).(*probe); ok && resp != nil {
		p.record(resp)
	}
	return resp, err
}

// close drops the transport's idle connections.
func (t *transport) close() { t.next.CloseIdleConnections() }

// discovery answers GET /gateway(/bot) with the configured gateway URL.
func (t *transport) discovery(req *http.Request) *http.Response {
	body, _ := json.Marshal(map[string]any{
		"url":    t.gateway,
		"shards": 1,
		"session_start_limit": map[string]int{
			"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1,
		},
	})
	if req.Body != nil {
		req.Body.Close()
	}
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// probe records the status and headers of the response to one request,
// which discordgo's errors do not always carry (a 429 without a JSON body,
// the Retry-After header).
type probe struct {
	mu     sync.Mutex
	status int
	header http.Header
}

type probeKey struct{}

// withProbe returns ctx carrying a fresh probe for the transport to fill.
func withProbe(ctx context.Context) (context.Context, *probe) {
	p := &probe{}
	return context.WithValue(ctx, probeKey{}, p), p
}

func (p *probe) record(resp *http.Response) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status = resp.StatusCode
	p.header = resp.Header.Clone()
}

// result returns the last recorded status (0 when no response arrived)
// and headers.
func (p *probe) result() (int, http.Header) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, p.header
}

// newDialer returns the websocket dialer of one bot's session. Every
// connection it makes is closed when ctx ends: discordgo's Open blocks on
// reads without deadlines, and this is what unblocks it on shutdown.
func newDialer(ctx context.Context) *websocket.Dialer {
	return &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: 15 * time.Second,
		NetDialContext: func(dctx context.Context, network, addr string) (net.Conn, error) {
			dctx, cancel := context.WithCancel(dctx)
			defer cancel()
			stop := context.AfterFunc(ctx, cancel)
			defer stop()
			c, err := (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext(dctx, network, addr)
			if err != nil {
				return nil, err
			}
			return watchConn(ctx, c), nil
		},
	}
}

// ownedConn is a net.Conn closed when its context ends.
type ownedConn struct {
	net.Conn
	stop func() bool
}

func watchConn(ctx context.Context, c net.Conn) net.Conn {
	oc := &ownedConn{Conn: c}
	oc.stop = context.AfterFunc(ctx, func() { c.Close() })
	return oc
}

// Close implements net.Conn.
func (c *ownedConn) Close() error {
	c.stop()
	return c.Conn.Close()
}
