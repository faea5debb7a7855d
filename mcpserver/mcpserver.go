// Package mcpserver serves the actions of running turns to agent CLIs as
// MCP tools, over the Streamable HTTP transport of the Model Context
// Protocol (SPEC §10.1, the exec brain). It is one http.Handler, mounted
// at /mcp on the gateway's listener.
//
// Nothing is served without a turn: Open makes a bearer token for the
// bound brains.Actions of one running turn, and the function it returns
// ends it when the turn ends. A request without a token, with a token
// this server did not make or with one whose turn has ended is answered
// 401 before its body is read. A token therefore acts as one bot, for one
// person, in one space (what the Actions are bound to), and only while
// its turn runs.
//
// The tools a token lists are the Actions' Specs; calling one is
// Actions.Call, whose error comes back as a tool error (IsError), its
// text naming the argument at fault, so that the agent can correct
// itself. The server keeps no MCP session between requests (the SDK's
// stateless mode): every request stands on its token alone.
package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-chat/switchboard/brains"
)

// MaxBody bounds a request's body, as the admin API's are (SPEC §12).
const MaxBody = 1 << 20

// TokenPrefix starts every token, so that one found in a log or a file
// says what it is.
const TokenPrefix = "sbmcp_"

// Options configure a Server.
type Options struct {
	// URL is the endpoint as a program on this machine reaches it, e.g.
	// http://127.0.0.1:8080/mcp; Open hands it out with each token.
	URL string
	// Version is reported to clients as the server's version.
	Version string
	// Logger receives one line per tool call (tool and outcome, never
	// arguments); slog.Default() when nil.
	Logger *slog.Logger
}

// Server makes turn tokens and serves their tools. It is safe for
// concurrent use.
type Server struct {
	url     string
	version string
	log     *slog.Logger
	handler http.Handler

	mu sync.Mutex
	// grants are the open tokens, by the SHA-256 of the token: the map
	// never holds a token itself, and looking one up compares digests.
	grants map[[sha256.Size]byte]*grant
}

// New returns a server with no open token.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{url: opts.URL, version: opts.Version, log: opts.Logger, grants: make(map[[sha256.Size]byte]*grant)}
	s.handler = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if g, ok := r.Context().Value(grantKey{}).(*grant); ok {
			return g.server
		}
		return nil
	}, &mcp.StreamableHTTPOptions{
		// Every request stands alone: no session outlives its request,
		// and none is left behind when a turn ends.
		Stateless:           true,
		JSONResponse:        true,
		MaxRequestBodyBytes: MaxBody,
	})
	return s
}

// URL is the endpoint Open hands out.
func (s *Server) URL() string { return s.url }

// Open makes a token for one turn's actions and returns the endpoint,
// the token and the function that ends it. end cancels the token's calls
// in progress and waits for them (see closeWait); it may be called more
// than once; after it, the token gets 401.
func (s *Server) Open(actions brains.Actions) (url, token string, end func()) {
	var raw [32]byte
	rand.Read(raw[:])
	token = TokenPrefix + hex.EncodeToString(raw[:])
	key := sha256.Sum256([]byte(token))
	g := newGrant(actions, s.version, s.log)
	s.mu.Lock()
	s.grants[key] = g
	s.mu.Unlock()
	var once sync.Once
	end = func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.grants, key)
			s.mu.Unlock()
			g.close()
		})
	}
	return s.url, token, end
}

// OpenTokens counts the tokens open now: one per running turn that was
// given one.
func (s *Server) OpenTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.grants)
}

// ServeHTTP answers an MCP request for the turn its bearer token names,
// or 401.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g := s.grant(r)
	if g == nil {
		// Before the body is read (SPEC §12).
		w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard-mcp"`)
		http.Error(w, "unauthorized: the token is missing, unknown or its turn has ended", http.StatusUnauthorized)
		return
	}
	s.handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), grantKey{}, g)))
}

// grant finds the open grant of r's bearer token.
func (s *Server) grant(r *http.Request) *grant {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil
	}
	token = strings.TrimSpace(token)
	if !strings.HasPrefix(token, TokenPrefix) {
		return nil
	}
	key := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants[key]
}

// grantKey carries a request's grant to the SDK's getServer.
type grantKey struct{}

// grant is one open token: its turn's actions as an MCP server.
type grant struct {
	actions brains.Actions
	server  *mcp.Server
	log     *slog.Logger

	// ctx ends when the token does; calls in progress then stop.
	ctx    context.Context
	cancel context.CancelFunc
	// calls counts the calls in progress, which close waits for; mu
	// guards closed, after which no call starts.
	calls  sync.WaitGroup
	mu     sync.Mutex
	closed bool
}

// closeWait bounds how long ending a token waits for its calls in
// progress, cancelled, to return: an action that ignores its context
// cannot hold the turn's end for ever.
const closeWait = 5 * time.Second

func newGrant(actions brains.Actions, version string, log *slog.Logger) *grant {
	g := &grant{actions: actions, log: log}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.server = mcp.NewServer(&mcp.Implementation{Name: "switchboard", Title: "Switchboard", Version: version}, &mcp.ServerOptions{
		Instructions: "Switchboard's actions for this turn: act in the shared world of the bot you speak for, " +
			"for the person you are answering. The tools work only while this turn runs.",
	})
	for _, spec := range actions.Specs() {
		schema, err := objectSchema(spec.Schema)
		if err != nil {
			log.Error("mcp: action left out: its schema is unusable", "action", spec.Name, "err", err)
			continue
		}
		g.server.AddTool(&mcp.Tool{Name: spec.Name, Description: spec.Description, InputSchema: schema}, g.call(spec.Name))
	}
	return g
}

// call is the tool handler of the action name.
func (g *grant) call(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := &mcp.CallToolResult{}
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			res.SetError(errors.New("the turn has ended; its actions are closed"))
			return res, nil
		}
		g.calls.Add(1)
		g.mu.Unlock()
		defer g.calls.Done()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(g.ctx, cancel)
		defer stop()
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		text, err := g.actions.Call(ctx, name, args)
		if err != nil {
			g.log.Info("mcp tool call refused", "action", name, "refused", errors.Is(err, brains.ErrActionRefused))
			res.SetError(err)
			return res, nil
		}
		g.log.Info("mcp tool call", "action", name)
		res.Content = []mcp.Content{&mcp.TextContent{Text: text}}
		return res, nil
	}
}

// close ends the grant: no call starts after it, and calls in progress
// are cancelled and waited for (at most closeWait).
func (g *grant) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.cancel()
	done := make(chan struct{})
	go func() { g.calls.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeWait):
		g.log.Warn("mcp: a tool call ignored the end of its turn; the turn ends without it")
	}
}

// objectSchema checks that a spec's schema is a JSON object schema, as
// MCP requires of a tool's input; an empty one accepts any object.
func objectSchema(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if m["type"] != "object" {
		return nil, fmt.Errorf(`its type is %v, not "object"`, m["type"])
	}
	return raw, nil
}
