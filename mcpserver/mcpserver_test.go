package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/mcpserver"
)

// fakeActions is a turn's actions: request_help and a slow action that
// runs until its context ends.
type fakeActions struct {
	bot string

	mu    sync.Mutex
	calls []string
}

func (a *fakeActions) Specs() []brains.ActionSpec {
	return []brains.ActionSpec{
		{Name: "request_help", Description: "Ask another bot for help.", Schema: json.RawMessage(
			`{"type":"object","properties":{"bot":{"type":"string"},"question":{"type":"string"}},"required":["bot","question"]}`)},
		{Name: "slow", Description: "Waits for its context.", Schema: json.RawMessage(`{"type":"object"}`)},
		{Name: "broken", Description: "Its schema is no object.", Schema: json.RawMessage(`{"type":"string"}`)},
	}
}

func (a *fakeActions) Call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	a.mu.Lock()
	a.calls = append(a.calls, name+" "+string(args))
	a.mu.Unlock()
	switch name {
	case "request_help":
		var in struct{ Bot, Question string }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", fmt.Errorf("arguments: %v", err)
		}
		if in.Question == "" {
			return "", errors.New("question: missing")
		}
		if in.Bot == a.bot {
			return "", fmt.Errorf("bot: %w: you cannot ask yourself", brains.ErrActionRefused)
		}
		return a.bot + " asked " + in.Bot, nil
	case "slow":
		<-ctx.Done()
		return "", ctx.Err()
	}
	return "", fmt.Errorf("%w: no action %q", brains.ErrActionRefused, name)
}

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens an MCP client session on url with token.
func connect(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}},
	}, nil)
}

// serve starts a server at an httptest address; its URL is that of /mcp.
func serve(t *testing.T) *mcpserver.Server {
	t.Helper()
	var s *mcpserver.Server
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	s = mcpserver.New(mcpserver.Options{URL: hs.URL + "/mcp", Logger: slog.New(slog.DiscardHandler)})
	mux.Handle("/mcp", s)
	return s
}

func TestToolsOfATurn(t *testing.T) {
	s := serve(t)
	actions := &fakeActions{bot: "matty"}
	url, token, end := s.Open(actions)
	defer end()
	if !strings.HasPrefix(token, mcpserver.TokenPrefix) || len(token) < 40 {
		t.Fatalf("token %q", token)
	}
	cs, err := connect(t, url, token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	ctx := context.Background()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	// The action whose schema is no object is left out.
	if got := strings.Join(names, ","); got != "request_help,slow" {
		t.Fatalf("tools %s, want request_help,slow", got)
	}
	if list.Tools[0].Description != "Ask another bot for help." {
		t.Errorf("description %q", list.Tools[0].Description)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "request_help", Arguments: map[string]any{"bot": "finn", "question": "auth?"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || text(res) != "matty asked finn" {
		t.Errorf("call: error %v, %q", res.IsError, text(res))
	}

	// A refused or malformed call is a tool error naming the argument.
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"bot": "finn"}, "question: missing"},
		{map[string]any{"bot": "matty", "question": "q"}, "bot: action refused: you cannot ask yourself"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "request_help", Arguments: tc.args})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || text(res) != tc.want {
			t.Errorf("call %v: error %v, %q; want the tool error %q", tc.args, res.IsError, text(res), tc.want)
		}
	}
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "")
}

// TestUnauthorized: a request without a token, with one this server did
// not make, or with one whose turn ended is answered 401 before its
// body is read; another turn's token reaches only that turn's actions.
func TestUnauthorized(t *testing.T) {
	s := serve(t)
	url, token, end := s.Open(&fakeActions{bot: "matty"})
	_, other, endOther := s.Open(&fakeActions{bot: "finn"})
	defer endOther()
	end()
	end() // twice is fine

	for name, header := range map[string]string{
		"none":    "",
		"basic":   "Basic " + token,
		"unknown": "Bearer " + mcpserver.TokenPrefix + strings.Repeat("0", 64),
		"foreign": "Bearer not-a-switchboard-token",
		"ended":   "Bearer " + token,
	} {
		t.Run(name, func(t *testing.T) {
			body := &watchedBody{r: strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)}
			req := httptest.NewRequest(http.MethodPost, url, body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if header != "" {
				req.Header.Set("Authorization", header)
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", rec.Code)
			}
			if rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("no WWW-Authenticate header")
			}
			if body.read {
				t.Error("the body was read before the token was checked")
			}
		})
	}
	if _, err := connect(t, url, token); err == nil {
		t.Error("a client connected with an ended token")
	}
	cs, err := connect(t, url, other)
	if err != nil {
		t.Fatalf("the other turn's token: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "request_help", Arguments: map[string]any{"bot": "priest", "question": "q"}})
	if err != nil || text(res) != "finn asked priest" {
		t.Errorf("the other token acts as %q (%v), want finn", text(res), err)
	}
	if n := s.OpenTokens(); n != 1 {
		t.Errorf("%d tokens open, want 1", n)
	}
}

// watchedBody records whether anything read it.
type watchedBody struct {
	r    io.Reader
	read bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.read = true
	return b.r.Read(p)
}

// TestEndCancelsCalls: ending a token cancels its calls in progress and
// returns only once they have returned; nothing acts after the turn.
func TestEndCancelsCalls(t *testing.T) {
	s := serve(t)
	actions := &fakeActions{bot: "matty"}
	url, token, end := s.Open(actions)
	cs, err := connect(t, url, token)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		if err != nil {
			res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		done <- res
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		actions.mu.Lock()
		n := len(actions.calls)
		actions.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow call never arrived")
		}
		time.Sleep(10 * time.Millisecond)
	}
	end()
	select {
	case res := <-done:
		if !res.IsError || !strings.Contains(text(res), "context canceled") {
			t.Errorf("slow call after end: error %v, %q", res.IsError, text(res))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end with its token")
	}
}

// FuzzAuthorization: whatever the Authorization header, a request that
// does not carry an open token is answered 401, and nothing panics.
func FuzzAuthorization(f *testing.F) {
	s := mcpserver.New(mcpserver.Options{URL: "http://127.0.0.1:9/mcp", Logger: slog.New(slog.DiscardHandler)})
	_, token, end := s.Open(&fakeActions{bot: "matty"})
	defer end()
	for _, h := range []string{"", "Bearer", "Bearer ", "bearer " + mcpserver.TokenPrefix, "Bearer " + token + "x",
		"Basic abc", "Bearer  " + mcpserver.TokenPrefix + "00", "Bearer\t" + token[:10], "Bearer " + strings.ToUpper(token)} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{}`))
		req.Header.Set("Authorization", header)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		scheme, rest, _ := strings.Cut(header, " ")
		open := strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(rest) == token
		if !open && rec.Code != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d, want 401", header, rec.Code)
		}
	})
}
