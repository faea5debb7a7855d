// Command fakeagent is an agent CLI for the gateway's tests, run as an
// exec brain: it reads the prompt on stdin and, like claude -p
// --mcp-config switchboard-mcp.json, finds the gateway's MCP server in
// switchboard-mcp.json in its working directory and uses its tools with
// the official Go SDK's client.
//
// On a turn that answers a help request (the prompt holds HELP
// ANSWERED) it prints "<name> says: <ANSWER IN CAPITALS>". On any other
// turn it lists the tools, calls post_finding and then
// request_help(bot=$FAKE_AGENT_ASK, question=$FAKE_AGENT_QUESTION),
// each when it is offered, appends what it did to $FAKE_AGENT_LOG as a
// JSON line, and prints that it asked.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// record is one turn's line in $FAKE_AGENT_LOG.
type record struct {
	Dir      string            `json:"dir"`
	URL      string            `json:"url"`
	Token    string            `json:"token"`
	EnvURL   string            `json:"env_url"`
	EnvToken string            `json:"env_token"`
	Tools    []string          `json:"tools"`
	Results  map[string]string `json:"results"`
	Errors   map[string]bool   `json:"errors"`
}

func main() {
	prompt, _ := io.ReadAll(os.Stdin)
	if answer, from, ok := answered(string(prompt)); ok {
		fmt.Printf("%s says: %s\n", from, strings.ToUpper(answer))
		return
	}
	rec, err := act()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent:", err)
		os.Exit(1)
	}
	if path := os.Getenv("FAKE_AGENT_LOG"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			json.NewEncoder(f).Encode(rec)
			f.Close()
		}
	}
	fmt.Printf("I asked %s; I'll be back with the answer.\n", os.Getenv("FAKE_AGENT_ASK"))
}

// answered finds the answer in a HELP ANSWERED block:
// "<name> answered: <answer>".
func answered(prompt string) (answer, from string, ok bool) {
	i := strings.Index(prompt, "=== HELP ANSWERED ===")
	if i < 0 {
		return "", "", false
	}
	sc := bufio.NewScanner(strings.NewReader(prompt[i:]))
	for sc.Scan() {
		if name, a, found := strings.Cut(sc.Text(), " answered: "); found {
			return a, name, true
		}
	}
	return "", "", false
}

// act uses the turn's tools as switchboard-mcp.json describes them.
func act() (record, error) {
	var rec record
	rec.Dir, _ = os.Getwd()
	rec.EnvURL, rec.EnvToken = os.Getenv("SWITCHBOARD_MCP_URL"), os.Getenv("SWITCHBOARD_MCP_TOKEN")
	raw, err := os.ReadFile("switchboard-mcp.json")
	if err != nil {
		return rec, err
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return rec, err
	}
	sb, ok := cfg.MCPServers["switchboard"]
	if !ok || sb.Type != "http" {
		return rec, fmt.Errorf("no switchboard http server in %s", raw)
	}
	rec.URL = sb.URL
	rec.Token = strings.TrimPrefix(sb.Headers["Authorization"], "Bearer ")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "fakeagent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   sb.URL,
		HTTPClient: &http.Client{Transport: headers{sb.Headers, http.DefaultTransport}},
	}, nil)
	if err != nil {
		return rec, fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return rec, fmt.Errorf("list tools: %w", err)
	}
	rec.Results, rec.Errors = map[string]string{}, map[string]bool{}
	for _, t := range tools.Tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	calls := map[string]map[string]any{
		"request_help": {"bot": os.Getenv("FAKE_AGENT_ASK"), "question": os.Getenv("FAKE_AGENT_QUESTION")},
		"post_finding": {"text": "the auth module uses JWT", "severity": "high"},
		// On a delegated turn: how far it got, and what happened.
		"progress":  {"text": "Reading the files", "step": 1, "total": 2},
		"add_event": {"text": "the agent read the files"},
		// A call with an argument missing: a tool error naming it.
		"request_help_bad": {"bot": os.Getenv("FAKE_AGENT_ASK")},
	}
	// The finding first: the helper, asked next, sees it on the board.
	for _, name := range []string{"post_finding", "progress", "add_event", "request_help", "request_help_bad"} {
		tool := strings.TrimSuffix(name, "_bad")
		if !offered(rec.Tools, tool) || name == "add_event" && !offered(rec.Tools, "progress") {
			continue // add_event only on a delegated turn, beside progress
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: calls[name]})
		if err != nil {
			return rec, fmt.Errorf("call %s: %w", name, err)
		}
		var text []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				text = append(text, t.Text)
			}
		}
		rec.Results[name], rec.Errors[name] = strings.Join(text, ""), res.IsError
	}
	return rec, nil
}

func offered(tools []string, name string) bool {
	for _, t := range tools {
		if t == name {
			return true
		}
	}
	return false
}

// headers adds the configuration's headers to every request.
type headers struct {
	h    map[string]string
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}
