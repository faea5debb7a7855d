package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// buildFakeAgent builds testdata/fakeagent, an agent CLI that uses the
// gateway's MCP server with the official Go SDK's client, into a temp
// dir of t.
func buildFakeAgent(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building the fake agent needs the go command: %v", err)
	}
	path := filepath.Join(t.TempDir(), "fakeagent")
	out, err := exec.Command(goTool, "build", "-o", path, "./testdata/fakeagent").CombinedOutput()
	if err != nil {
		t.Fatalf("go build fakeagent: %v\n%s", err, out)
	}
	return path
}

// helpBots: Matty runs the fake agent; Finn is a script bot whose
// answer to a help request must reach no person. Finn's answer quotes
// the findings board it sees.
func helpBots(agent string) string {
	return fmt.Sprintf(`
gateway:
  listen: 127.0.0.1:0
  database: test.db
bots:
  - id: mattyatlas
    name: Matty Atlas
    aliases: [matty]
    brain:
      kind: exec
      command: [%s]
      env: [FAKE_AGENT_LOG, FAKE_AGENT_ASK, FAKE_AGENT_QUESTION]
      timeout: 60s
    platforms:
      web: {}
    delegation:
      allow: [finnshipley]
  - id: finnshipley
    name: Finn Shipley
    aliases: [finn]
    brain:
      kind: script
      default: '{{if .Help}}%s to {{.Help.From}}: {{.Text}} (board: {{range .Findings}}{{.Bot}} {{.Severity}} {{.Text}}{{end}}){{else}}Finn here{{end}}'
    platforms:
      web: {}
`, agent, finnSecret)
}

// finnSecret starts Finn's answer to a help request.
const finnSecret = "Finn privately answers"

// agentRecord is a line of the fake agent's log.
type agentRecord struct {
	Dir      string            `json:"dir"`
	URL      string            `json:"url"`
	Token    string            `json:"token"`
	EnvURL   string            `json:"env_url"`
	EnvToken string            `json:"env_token"`
	Tools    []string          `json:"tools"`
	Results  map[string]string `json:"results"`
	Errors   map[string]bool   `json:"errors"`
}

func readAgentLog(t *testing.T, path string) []agentRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the agent's log: %v", err)
	}
	defer f.Close()
	var out []agentRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r agentRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("agent log line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// mcpStatus posts an MCP request to url with the Authorization header
// auth ("" for none) and returns the status.
func mcpStatus(t *testing.T, url, auth string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAgentAsksForHelpOverMCP: an agent CLI run as an exec brain finds
// the gateway's MCP server in switchboard-mcp.json, lists the registry's
// actions as its tools, posts a finding and asks Finn for help during
// its turn; its token is refused once the turn ended. The finding is
// Matty's, in the person's space, shown to the person and to Finn.
// Finn's answer comes back to Matty's session, and Matty's follow-up
// reaches the chat the question came from; the person never sees Finn's
// answer, in frames or history.
func TestAgentAsksForHelpOverMCP(t *testing.T) {
	agent := buildFakeAgent(t)
	log := filepath.Join(t.TempDir(), "agent.jsonl")
	t.Setenv("FAKE_AGENT_LOG", log)
	t.Setenv("FAKE_AGENT_ASK", "finnshipley")
	t.Setenv("FAKE_AGENT_QUESTION", "what's the auth pattern?")
	m := startMain(t, writeConfigDir(t, helpBots(agent)))
	endpoint := "http://" + m.Addr() + "/mcp"

	// No turn, no token: 401 before anything.
	for _, auth := range []string{"", "Bearer " + m.AdminToken, "Bearer sbmcp_" + strings.Repeat("ab", 32)} {
		if got := mcpStatus(t, endpoint, auth); got != http.StatusUnauthorized {
			t.Errorf("POST /mcp with %.20q: %d, want 401", auth, got)
		}
	}

	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "how do we log people in?", "client_id": "q1"})
	var frames []map[string]any
	var replies []string
	for len(replies) < 2 {
		f := c.read()
		frames = append(frames, f)
		if f["type"] == "message" && f["from"].(map[string]any)["kind"] == "bot" {
			replies = append(replies, f["from"].(map[string]any)["id"].(string)+": "+f["text"].(string))
			if len(replies) == 1 {
				checkTurnTools(t, log, endpoint)
			}
		}
	}
	want := []string{
		"mattyatlas: I asked finnshipley; I'll be back with the answer.",
		"mattyatlas: Finn Shipley says: " + strings.ToUpper(finnSecret) + " TO MATTY ATLAS: WHAT'S THE AUTH PATTERN? " +
			"(BOARD: MATTY ATLAS HIGH THE AUTH MODULE USES JWT)",
	}
	if strings.Join(replies, "\n") != strings.Join(want, "\n") {
		t.Errorf("replies:\n%s\nwant:\n%s", strings.Join(replies, "\n"), strings.Join(want, "\n"))
	}

	// Frames: the finding, the help request's status changes, nothing
	// of Finn's.
	if got := findingFrames(frames); !slices.Equal(got, []string{agentFinding}) {
		t.Errorf("finding frames %q, want the agent's", got)
	}
	var statuses []string
	for _, f := range frames {
		raw, _ := json.Marshal(f)
		if strings.Contains(string(raw), finnSecret) {
			t.Errorf("a frame shows Finn's answer: %s", raw)
		}
		if f["type"] == "delegation" {
			if f["kind"] != "help" || f["from_bot"] != "mattyatlas" || f["to_bot"] != "finnshipley" {
				t.Errorf("delegation frame %v", f)
			}
			statuses = append(statuses, f["status"].(string))
		}
	}
	if len(statuses) == 0 || statuses[len(statuses)-1] != "done" {
		// The status frame and the follow-up run at once.
		waitDone(c)
	}

	// History: Finn's session shows the person nothing; Matty's the chat.
	c.send(map[string]any{"type": "history", "bot": "finnshipley"})
	if h := c.expectAfter("history"); len(h["messages"].([]any)) != 0 {
		t.Errorf("Finn's history shows %v", h["messages"])
	}
	c.send(map[string]any{"type": "history", "bot": "mattyatlas"})
	h := c.expectAfter("history")
	raw, _ := json.Marshal(h)
	if n := len(h["messages"].([]any)); n != 3 || strings.Contains(string(raw), finnSecret) {
		t.Errorf("Matty's history (%d messages): %s", n, raw)
	}

	// Both turns over: no file is left.
	if _, err := os.Stat(filepath.Join(readAgentLog(t, log)[0].Dir, "switchboard-mcp.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("switchboard-mcp.json after the turns: %v", err)
	}

	// The board: the agent's finding, as Matty, in the person's space.
	space := "user:" + c.hello["user"].(string)
	board := items(adminGet(t, m, "/api/v1/findings?space="+url.QueryEscape(space)))
	if len(board) != 1 || board[0]["text"] != agentFinding || board[0]["bot"] != "mattyatlas" ||
		board[0]["severity"] != "high" || board[0]["visible"] != true {
		t.Errorf("board of %s: %v", space, board)
	}

	// The admin API: a help record, done, with Finn's answer.
	list := adminGet(t, m, "/api/v1/delegations")
	items := list["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("delegations %v", items)
	}
	d := items[0].(map[string]any)
	if d["kind"] != "help" || d["status"] != "done" || !strings.HasPrefix(d["result"].(string), finnSecret) || d["task"] != "what's the auth pattern?" {
		t.Errorf("delegation %v", d)
	}
}

// agentFinding is the finding the fake agent posts.
const agentFinding = "the auth module uses JWT"

// checkTurnTools checks, once the agent's turn has ended (its reply
// came), what the agent found and did during it, and that its token and
// file are dead.
func checkTurnTools(t *testing.T, log, endpoint string) {
	t.Helper()
	recs := readAgentLog(t, log)
	if len(recs) != 1 {
		t.Fatalf("agent log: %d records, want 1", len(recs))
	}
	r := recs[0]
	if r.URL != endpoint || r.EnvURL != endpoint || r.Token == "" || r.EnvToken != r.Token {
		t.Errorf("the agent found url %q (env %q), token %q (env %q); want %s", r.URL, r.EnvURL, r.Token, r.EnvToken, endpoint)
	}
	// The registry's actions (the SDK lists them by name): Matty has a
	// team, so delegate and request_help are among them.
	if !slices.Equal(r.Tools, []string{"add_entity", "add_event", "add_fact", "delegate", "post_finding", "remember", "request_help"}) {
		t.Errorf("tools %v", r.Tools)
	}
	if res := r.Results["post_finding"]; r.Errors["post_finding"] || !strings.HasPrefix(res, "Posted finding") {
		t.Errorf("post_finding: error %v, %q", r.Errors["post_finding"], res)
	}
	if res := r.Results["request_help"]; r.Errors["request_help"] || !strings.HasPrefix(res, "Asked Finn Shipley (@finnshipley) for help.") {
		t.Errorf("request_help: error %v, %q", r.Errors["request_help"], res)
	}
	if res := r.Results["request_help_bad"]; !r.Errors["request_help_bad"] || !strings.Contains(res, "question") {
		t.Errorf("request_help without a question: error %v, %q; want a tool error naming question", r.Errors["request_help_bad"], res)
	}
	if got := mcpStatus(t, endpoint, "Bearer "+r.Token); got != http.StatusUnauthorized {
		t.Errorf("the turn's token after the turn: %d, want 401", got)
	}
	// The follow-up turn may run already, with a file of its own.
	if b, err := os.ReadFile(filepath.Join(r.Dir, "switchboard-mcp.json")); err == nil && strings.Contains(string(b), r.Token) {
		t.Errorf("switchboard-mcp.json still holds the ended turn's token")
	}
}

// waitDone reads frames until a help request's done status (c.read
// fails the test after 10 s without a frame).
func waitDone(c *client) {
	for {
		f := c.read()
		if f["type"] == "delegation" && f["status"] == "done" {
			return
		}
	}
}

// expectAfter skips frames other than typ (typing, delegation) and
// returns the next of type typ.
func (c *client) expectAfter(typ string) map[string]any {
	c.t.Helper()
	for {
		if f := c.read(); f["type"] == typ {
			return f
		}
	}
}

// adminGet GETs an admin API path with m's token.
func adminGet(t *testing.T, m *Main, path string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+m.Addr()+path, nil)
	req.Header.Set("Authorization", "Bearer "+m.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", path, resp.StatusCode, err)
	}
	return out
}

// TestMCPURL: the endpoint handed to programs is the gateway's own
// listener, on loopback when it listens on every address.
func TestMCPURL(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1:8080", "http://127.0.0.1:8080/mcp"},
		{"0.0.0.0:8080", "http://127.0.0.1:8080/mcp"},
		{"[::]:9000", "http://127.0.0.1:9000/mcp"},
		{"[::1]:9000", "http://[::1]:9000/mcp"},
		{"192.0.2.7:80", "http://192.0.2.7:80/mcp"},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := mcpURL(addr); got != tc.want {
			t.Errorf("mcpURL(%s) = %s, want %s", tc.addr, got, tc.want)
		}
	}
}
