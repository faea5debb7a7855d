package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/internal/pgtest"
)

// worldBots are script bots of the shared world: scout posts what it is
// told it found, with the severity it is told; alpha and beta post ideas
// and answer with the findings they see; reader answers with the
// findings it sees.
const worldBots = `
gateway:
  listen: 127.0.0.1:0
  database: test.db
  crossbot: {enabled: false}   # these tests read each bot's answer in turn
  web:
    max_messages_per_second_per_person: 0
    max_messages_per_second_per_ip: 0
bots:
  - id: scout
    name: Scout
    brain:
      kind: script
      rules:
        - match: '(?i)^found (low|medium|high|critical): (.*)'
          reply: 'Posted.'
          actions:
            - post_finding: {text: '{{index .Match 2}}', severity: '{{index .Match 1}}'}
      default: 'Tell me what you found.'
    platforms:
      web: {}
  - id: reader
    name: Reader
    brain:
      kind: script
      default: '{{range .Findings}}[{{.Bot}} {{.Severity}}{{with .Stage}} {{.}}{{end}}] {{.Text}}; {{else}}no findings{{end}}'
    platforms:
      web: {}
  - id: alpha
    name: Alpha
    brain:
      kind: script
      rules:
        - match: '^idea: (.*)'
          actions: [{post_finding: {text: 'alpha thinks {{index .Match 1}}'}}]
      default: 'alpha sees: {{range .Findings}}{{.Text}}|{{end}}'
    platforms:
      web: {}
  - id: beta
    name: Beta
    brain:
      kind: script
      rules:
        - match: '^idea: (.*)'
          actions: [{post_finding: {text: 'beta thinks {{index .Match 1}}'}}]
      default: 'beta sees: {{range .Findings}}{{.Text}}|{{end}}'
    platforms:
      web: {}
`

// say sends text and returns the text of the next message from bot (or
// from the system, for bot "system"), skipping other frames.
func (c *client) say(to map[string]any, text, from string) string {
	c.t.Helper()
	f := map[string]any{"type": "send", "text": text, "client_id": fmt.Sprint(time.Now().UnixNano())}
	for k, v := range to {
		f[k] = v
	}
	c.send(f)
	return c.next(from)
}

// next returns the text of the next message from id ("system" for the
// gateway's own), skipping other frames.
func (c *client) next(from string) string {
	c.t.Helper()
	for {
		f := c.read()
		if f["type"] != "message" {
			continue
		}
		p := f["from"].(map[string]any)
		if p["id"] == from || from == "system" && p["kind"] == "system" {
			return f["text"].(string)
		}
	}
}

// await skips frames until one of type typ, which it returns.
func (c *client) await(typ string) map[string]any {
	c.t.Helper()
	for {
		if f := c.read(); f["type"] == typ {
			return f
		}
	}
}

// findingFrames lists the texts of the finding frames among frames.
func findingFrames(frames []map[string]any) []string {
	var out []string
	for _, f := range frames {
		if f["type"] == "finding" {
			out = append(out, f["text"].(string))
		}
	}
	return out
}

// apiPostJSON posts body, marshalled, to an admin endpoint.
func apiPostJSON(t *testing.T, m *Main, path string, body any) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return apiPost(t, m, path, string(b))
}

// itemTexts lists the "text" of API items.
func itemTexts(body map[string]any) []string {
	var out []string
	for _, it := range items(body) {
		out = append(out, fmt.Sprint(it["text"]))
	}
	return out
}

// A bot posts a finding through its script's actions; another bot's next
// turn in the same space sees it, another person's space does not, and
// the person gets a finding frame.
func TestScriptFindingsShareASpace(t *testing.T) {
	m := startMain(t, writeConfigDir(t, worldBots))
	ann, bob := dial(t, m.Addr(), nil), dial(t, m.Addr(), nil)

	// The finding is posted while the turn runs: its frame comes before
	// the reply.
	ann.send(map[string]any{"type": "send", "bot": "scout", "text": "found high: The auth module uses JWT with 24h expiry", "client_id": "s1"})
	f := ann.expect("ack")
	for f["type"] != "finding" {
		f = ann.read()
	}
	if got := ann.next("scout"); got != "Posted." {
		t.Fatalf("scout said %q", got)
	}
	if f["text"] != "The auth module uses JWT with 24h expiry" || f["bot"] != "scout" || f["severity"] != "high" ||
		f["space"] != "user:"+ann.hello["user"].(string) || f["stage"] != "" || f["time"] == "" {
		t.Errorf("finding frame = %v", f)
	}
	if got := ann.say(map[string]any{"bot": "reader"}, "what do we know?", "reader"); got != "[Scout high] The auth module uses JWT with 24h expiry;" {
		t.Errorf("reader, in ann's space, said %q", got)
	}
	if got := bob.say(map[string]any{"bot": "reader"}, "what do we know?", "reader"); got != "no findings" {
		t.Errorf("reader, in bob's space, said %q", got)
	}

	// A room has a space of its own, shared by its members.
	ann.send(map[string]any{"type": "join", "chat": "war-room", "bots": []string{"scout", "reader"}})
	ann.expect("joined")
	ann.send(map[string]any{"type": "invite", "chat": "war-room", "user": bob.hello["platform_id"]})
	ann.expect("invited")
	bob.send(map[string]any{"type": "join", "chat": "war-room"})
	bob.expect("joined")
	if got := ann.say(map[string]any{"chat": "war-room"}, "@scout found critical: prod is down", "scout"); got != "Posted." {
		t.Fatalf("scout in the room said %q", got)
	}
	if got := bob.say(map[string]any{"chat": "war-room"}, "@reader status?", "reader"); got != "[Scout critical] prod is down;" {
		t.Errorf("reader in the room said %q", got)
	}
	bob.send(map[string]any{"type": "findings", "chat": "war-room", "limit": 10})
	for {
		fr := bob.read()
		if fr["type"] != "findings" {
			continue
		}
		its := fr["items"].([]any)
		if fr["space"] != "chat:web:war-room" || len(its) != 1 || its[0].(map[string]any)["text"] != "prod is down" {
			t.Errorf("findings frame = %v", fr)
		}
		break
	}
	// Bob may not read ann's private board (he only names his own).
	bob.send(map[string]any{"type": "findings", "bot": "reader"})
	for {
		fr := bob.read()
		if fr["type"] == "findings" {
			if its := fr["items"].([]any); len(its) != 0 {
				t.Errorf("bob's own board = %v", fr)
			}
			break
		}
	}
	// A room he is not in answers not_allowed.
	ann.send(map[string]any{"type": "join", "chat": "den", "bots": []string{"reader"}})
	ann.await("joined")
	bob.send(map[string]any{"type": "findings", "chat": "den", "client_id": "x"})
	bob.refusedWith("not_allowed", "x")
}

// Two bots post during an isolated stage: neither sees the other's until
// the release, after which both do, and the room's people get the
// finding frames at the release.
func TestIsolatedStage(t *testing.T) {
	m := startMain(t, writeConfigDir(t, worldBots))
	ann, bob := dial(t, m.Addr(), nil), dial(t, m.Addr(), nil)
	ann.send(map[string]any{"type": "join", "chat": "brainstorm", "bots": []string{"alpha", "beta"}})
	ann.expect("joined")
	ann.send(map[string]any{"type": "invite", "chat": "brainstorm", "user": bob.hello["platform_id"]})
	ann.expect("invited")
	bob.send(map[string]any{"type": "join", "chat": "brainstorm"})
	bob.expect("joined")
	room := map[string]any{"chat": "brainstorm"}

	if got := ann.say(room, "/stage diverge isolated", "system"); !strings.Contains(got, "Stage diverge started, isolated") {
		t.Fatalf("stage answer = %q", got)
	}
	if got := bob.next("system"); !strings.Contains(got, "Stage diverge started") {
		t.Errorf("bob saw %q", got)
	}
	// Alpha posts first: a bot's turns run in order, so its answer comes
	// after its idea is stored, and the findings' order is fixed.
	ann.send(map[string]any{"type": "send", "chat": "brainstorm", "text": "@alpha idea: a cache", "client_id": "a1"})
	if got := ann.say(room, "@alpha what do you see?", "alpha"); got != "alpha sees: alpha thinks a cache|" {
		t.Errorf("during the stage alpha said %q", got)
	}
	ann.send(map[string]any{"type": "send", "chat": "brainstorm", "text": "@beta idea: a queue", "client_id": "b1"})
	// Each sees only its own.
	if got := ann.say(room, "@beta what do you see?", "beta"); got != "beta sees: beta thinks a queue|" {
		t.Errorf("during the stage beta said %q", got)
	}
	if got := ann.say(room, "@alpha and now?", "alpha"); got != "alpha sees: alpha thinks a cache|" {
		t.Errorf("during the stage alpha said %q", got)
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"viewer=alpha", []string{"alpha thinks a cache"}},
		{"viewer=beta", []string{"beta thinks a queue"}},
		{"", []string{"alpha thinks a cache", "beta thinks a queue"}},
	} {
		_, body := apiGet(t, m, "/api/v1/findings?space=chat:web:brainstorm&"+tc.query, m.AdminToken)
		if got := itemTexts(body); !slices.Equal(got, tc.want) {
			t.Errorf("findings %s = %q, want %q", tc.query, got, tc.want)
		}
		if tc.query == "" {
			for _, it := range items(body) {
				if it["visible"] != false || it["stage"] != "diverge" {
					t.Errorf("hidden finding listed as %v", it)
				}
			}
		}
	}
	if got := findingFrames(bob.drainUntil("x", 300*time.Millisecond)); len(got) != 0 {
		t.Errorf("finding frames during the stage: %q", got)
	}

	// The release shows both findings at once: each member gets their
	// frames, with the answer to the command.
	ann.send(map[string]any{"type": "send", "chat": "brainstorm", "text": "/release", "client_id": "r1"})
	for name, c := range map[string]*client{"ann": ann, "bob": bob} {
		var got []string
		answer := ""
		for len(got) < 2 || answer == "" {
			f := c.read()
			switch {
			case f["type"] == "finding":
				got = append(got, f["text"].(string))
				if f["space"] != "chat:web:brainstorm" || f["stage"] != "diverge" {
					t.Errorf("%s: finding frame %v", name, f)
				}
			case f["type"] == "message" && f["from"].(map[string]any)["kind"] == "system":
				answer = f["text"].(string)
			}
		}
		if !slices.Equal(got, []string{"alpha thinks a cache", "beta thinks a queue"}) {
			t.Errorf("%s got finding frames %q at release", name, got)
		}
		if answer != "Stage diverge ended: its 2 hidden findings are now shared with every bot." {
			t.Errorf("%s saw the release answered %q", name, answer)
		}
	}
	if got := ann.say(room, "@alpha and now?", "alpha"); got != "alpha sees: alpha thinks a cache|beta thinks a queue|" {
		t.Errorf("after release alpha said %q", got)
	}
	if got := ann.say(room, "@beta and now?", "beta"); got != "beta sees: alpha thinks a cache|beta thinks a queue|" {
		t.Errorf("after release beta said %q", got)
	}
	if got := ann.say(room, "/release", "system"); !strings.Contains(got, "No stage is running") {
		t.Errorf("second release answer = %q", got)
	}
	if got := ann.say(room, "/stage two words here", "system"); !strings.HasPrefix(got, "Usage: /stage NAME") {
		t.Errorf("a bad command's answer = %q", got)
	}
}

// drainUntil returns the frames read until one with client_id id (an
// error or ack) or d without a frame; unlike drain it keeps the
// connection usable, by sending a frame that is answered.
func (c *client) drainUntil(id string, d time.Duration) []map[string]any {
	c.t.Helper()
	time.Sleep(d)
	c.send(map[string]any{"type": "findings", "chat": "no such room", "client_id": id})
	var out []map[string]any
	for {
		f := c.read()
		if f["client_id"] == id {
			return out
		}
		out = append(out, f)
	}
}

// The admin API reads and writes the board and runs stages; bad requests
// are refused naming the field.
func TestFindingsAPI(t *testing.T) {
	bots := worldBots + `  - id: kiosk
    name: Kiosk
    public: true
    brain: {kind: script, default: hi}
    platforms:
      web: {}
`
	m := startMain(t, writeConfigDir(t, bots))
	ann := dial(t, m.Addr(), nil)
	ann.send(map[string]any{"type": "join", "chat": "ops", "bots": []string{"reader"}})
	ann.expect("joined")

	status, f := apiPostJSON(t, m, "/api/v1/findings", map[string]any{"space": "chat:web:ops", "bot": "scout", "text": "disk at 91%", "severity": "high"})
	if status != http.StatusCreated || f["id"] == nil || f["bot"] != "scout" || f["visible"] != true || f["severity"] != "high" || f["created_at"] == "" {
		t.Fatalf("post = %d %v", status, f)
	}
	if fr := ann.expect("finding"); fr["text"] != "disk at 91%" {
		t.Errorf("room member got %v", fr)
	}
	status, f = apiPostJSON(t, m, "/api/v1/findings", map[string]any{"space": "chat:web:ops", "bot": "scout", "text": "defaults to medium"})
	if status != http.StatusCreated || f["severity"] != "medium" {
		t.Errorf("post without severity = %d %v", status, f)
	}
	ann.expect("finding")
	for _, tc := range []struct {
		body       map[string]any
		code, want string
	}{
		{map[string]any{"space": "chat:web:ops", "bot": "scout", "text": strings.Repeat("x", 4001)}, "bad_request", "text: 4001 characters, over the limit of 4000"},
		{map[string]any{"space": "chat:web:ops", "bot": "scout", "text": "x", "severity": "urgent"}, "bad_request", "severity: must be one of"},
		{map[string]any{"space": "room:ops", "bot": "scout", "text": "x"}, "bad_request", "space:"},
		{map[string]any{"space": "chat:web:ops", "bot": "nobody", "text": "x"}, "unknown_bot", "nobody"},
		{map[string]any{"space": "chat:web:ops", "bot": "kiosk", "text": "x"}, "bad_request", "public bot"},
		{map[string]any{"space": "chat:web:ops", "bot": "scout"}, "bad_request", "missing field text"},
		{map[string]any{"space": "chat:web:ops", "bot": "scout", "text": "x", "colour": "red"}, "bad_request", "colour"},
	} {
		status, body := apiPostJSON(t, m, "/api/v1/findings", tc.body)
		e, _ := body["error"].(map[string]any)
		if status != http.StatusBadRequest || e["code"] != tc.code || !strings.Contains(fmt.Sprint(e["message"]), tc.want) {
			t.Errorf("post %v = %d %v; want 400 %s with %q", tc.body["text"], status, body, tc.code, tc.want)
		}
	}

	// Stages through the API: frames at release go to the room.
	status, c := apiPostJSON(t, m, "/api/v1/stages", map[string]any{"space": "chat:web:ops", "name": "triage", "isolated": true})
	if started, _ := c["started"].(map[string]any); status != http.StatusCreated || started["name"] != "triage" || started["isolated"] != true || c["ended"] != nil {
		t.Fatalf("start = %d %v", status, c)
	}
	apiPostJSON(t, m, "/api/v1/findings", map[string]any{"space": "chat:web:ops", "bot": "scout", "text": "kept quiet"})
	_, body := apiGet(t, m, "/api/v1/stages", m.AdminToken)
	if its := items(body); len(its) != 1 || its[0]["space"] != "chat:web:ops" || its[0]["ended_at"] != nil {
		t.Errorf("running stages = %v", body)
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"space=chat:web:ops&viewer=reader", []string{"disk at 91%", "defaults to medium"}},
		{"space=chat:web:ops&viewer=scout", []string{"disk at 91%", "defaults to medium", "kept quiet"}},
		{"space=chat:web:ops&bot=scout&limit=1", []string{"kept quiet"}},
		{"bot=reader", nil},
	} {
		if _, body := apiGet(t, m, "/api/v1/findings?"+tc.query, m.AdminToken); !slices.Equal(itemTexts(body), tc.want) {
			t.Errorf("findings?%s = %q, want %q", tc.query, itemTexts(body), tc.want)
		}
	}
	status, c = apiPostJSON(t, m, "/api/v1/stages/release", map[string]any{"space": "chat:web:ops"})
	if ended, _ := c["ended"].(map[string]any); status != http.StatusOK || ended["name"] != "triage" || ended["ended_at"] == nil || len(c["released"].([]any)) != 1 {
		t.Errorf("release = %d %v", status, c)
	}
	for {
		if fr := ann.read(); fr["type"] == "finding" {
			if fr["text"] != "kept quiet" {
				t.Errorf("frame at release = %v", fr)
			}
			break
		}
	}
	for _, tc := range []struct {
		path string
		body map[string]any
		code int
	}{
		{"/api/v1/stages/release", map[string]any{"space": "chat:web:ops"}, http.StatusNotFound},
		{"/api/v1/stages", map[string]any{"space": "chat:web:ops", "name": "two words"}, http.StatusBadRequest},
		{"/api/v1/stages", map[string]any{"space": "chat:web:ops"}, http.StatusBadRequest},
		{"/api/v1/stages", map[string]any{"space": "nowhere", "name": "x"}, http.StatusBadRequest},
	} {
		if status, body := apiPostJSON(t, m, tc.path, tc.body); status != tc.code {
			t.Errorf("%s %v = %d %v, want %d", tc.path, tc.body, status, body, tc.code)
		}
	}
	for _, path := range []string{"/api/v1/findings?space=nowhere", "/api/v1/findings?limit=0"} {
		if status, _ := apiGet(t, m, path, m.AdminToken); status != http.StatusBadRequest {
			t.Errorf("%s = %d, want 400", path, status)
		}
	}
	if status, _ := apiGet(t, m, "/api/v1/findings", ""); status != http.StatusUnauthorized {
		t.Errorf("findings without the token = %d", status)
	}
}

// toolModel is an OpenAI-compatible server for one model bot: its first
// answer calls post_finding with a severity that does not exist and
// delegate; its second, given the error, calls post_finding again and
// request_help; then it answers. Asked with a help request's answer in
// its prompt (the follow-up turn), it says what Finn answered. It
// records every request.
type toolModel struct {
	mu       sync.Mutex
	requests []map[string]any
	// turns counts the requests that are not follow-ups.
	turns int
}

func (f *toolModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	json.NewDecoder(r.Body).Decode(&req)
	system := ""
	if msgs, ok := req["messages"].([]any); ok && len(msgs) > 0 {
		system, _ = msgs[0].(map[string]any)["content"].(string)
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	followUp := strings.Contains(system, "=== HELP ANSWERED ===")
	if !followUp {
		f.turns++
	}
	n := f.turns
	f.mu.Unlock()
	call := func(id, name, args string) map[string]any {
		return map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}
	}
	msg := map[string]any{"role": "assistant", "content": "Done."}
	switch {
	case followUp:
		_, answer, _ := strings.Cut(system, "Finn Shipley answered: ")
		answer, _, _ = strings.Cut(answer, "\n")
		msg = map[string]any{"role": "assistant", "content": "Finn says: " + answer}
	case n == 1:
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
			call("c1", "post_finding", `{"text": "Login tokens never expire", "severity": "urgent"}`),
			call("c2", "delegate", `{"bot": "finnshipley", "task": "add token expiry"}`),
		}}
	case n == 2:
		msg = map[string]any{"role": "assistant", "content": "", "tool_calls": []any{
			call("c3", "post_finding", `{"text": "Login tokens never expire", "severity": "critical"}`),
			call("c4", "request_help", `{"bot": "finnshipley", "question": "how long should a token live?"}`),
		}}
	case n == 3:
		msg = map[string]any{"role": "assistant", "content": "I posted it and asked Finn to fix it."}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}}})
}

// An openai bot calls post_finding, delegate and request_help as
// function tools; the results, an error naming the argument first, come
// back as tool messages; the finding is on the board, the hand-off runs
// and Finn's answer comes back as a follow-up turn whose reply reaches
// the person; the bot's next turn has the SHARED FINDINGS block.
func TestModelActions(t *testing.T) {
	model := &toolModel{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	bots := strings.Replace(testBots, `    brain:
      kind: script
      rules:
        - match: '(?i)^hello'
          reply: 'Hi {{.User.Name}}, {{.Bot.Name}} here.'
      default: '{{.Bot.Name}} heard: {{.Text}}'`, fmt.Sprintf(`    brain:
      kind: openai
      base_url: %s/v1
      model: test-model`, srv.URL), 1)
	// The turn hands Finn a task and asks Finn for help: without the
	// cooldown, which would refuse the second (SPEC §5, §10.3).
	bots = strings.Replace(bots, "  database: test.db\n", "  database: test.db\n  delegation:\n    cooldown: 0s\n", 1)
	dir := writeConfigDir(t, bots)
	m := startMain(t, dir)
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "the login never times out", "client_id": "1"})
	c.expect("ack")
	wants := []string{
		"mattyatlas: I posted it and asked Finn to fix it.",
		"finnshipley: Finn built: add token expiry",
		"mattyatlas: Finn says: Finn got how long should a token live? (0 before)",
	}
	var said []string
	done := 0
	for done < 2 || !containsAll(said, wants) {
		f := c.read()
		switch f["type"] {
		case "message":
			said = append(said, f["from"].(map[string]any)["id"].(string)+": "+f["text"].(string))
		case "delegation":
			if f["status"] == "done" {
				done++
			}
		}
	}
	if all := strings.Join(said, "\n"); strings.Contains(all, "finnshipley: Finn got") {
		t.Errorf("the person saw Finn's answer:\n%s", all)
	}

	model.mu.Lock()
	reqs := slices.Clone(model.requests)
	model.mu.Unlock()
	if len(reqs) < 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	var tools []string
	for _, tl := range reqs[0]["tools"].([]any) {
		tools = append(tools, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	if !slices.Equal(tools, []string{"delegate", "request_help", "post_finding", "remember", "add_event", "add_entity", "add_fact"}) {
		t.Errorf("tools = %v", tools)
	}
	results := toolResults(reqs[1])
	if !strings.Contains(results["c1"], "Error: post_finding: severity: must be one of low, medium, high, critical") ||
		!strings.Contains(results["c2"], "hand-off to Finn Shipley is recorded") {
		t.Errorf("tool results of the first round = %q", results)
	}
	results = toolResults(reqs[2])
	if !strings.Contains(results["c3"], "Posted finding") || !strings.Contains(results["c4"], "Asked Finn Shipley (@finnshipley) for help.") {
		t.Errorf("tool results of the second round = %q", results)
	}
	space := "user:" + c.hello["user"].(string)
	_, body := apiGet(t, m, "/api/v1/findings?space="+space, m.AdminToken)
	if got := items(body); len(got) != 1 || got[0]["text"] != "Login tokens never expire" || got[0]["severity"] != "critical" || got[0]["bot"] != "mattyatlas" {
		t.Errorf("board = %v", body)
	}

	// The next turn sees the board in its prompt.
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "anything else?", "client_id": "2"})
	c.expect("ack")
	c.next("mattyatlas")
	model.mu.Lock()
	last := model.requests[len(model.requests)-1]
	model.mu.Unlock()
	system := last["messages"].([]any)[0].(map[string]any)["content"].(string)
	if !strings.Contains(system, "SHARED FINDINGS (newest last)\n1. [Matty Atlas] critical: Login tokens never expire") {
		t.Errorf("system prompt lacks the findings block:\n%s", system)
	}
}

// containsAll reports whether have holds every one of want.
func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// toolResults maps the tool messages of a request by their call's ID.
func toolResults(req map[string]any) map[string]string {
	out := map[string]string{}
	for _, m := range req["messages"].([]any) {
		msg := m.(map[string]any)
		if msg["role"] == "tool" {
			out[fmt.Sprint(msg["tool_call_id"])] = fmt.Sprint(msg["content"])
		}
	}
	return out
}

// check refuses a rule's action that does not exist or whose template
// or written-out argument is wrong, with the file, line and key.
func TestCheckScriptActions(t *testing.T) {
	dir := t.TempDir()
	bots := `bots:
  - id: a
    brain:
      kind: script
      rules:
        - match: '(.*)'
          reply: ok
          actions:
            - post_findings: {text: '{{.Text}}'}
            - post_finding: {text: '{{.Txt}}', severity: hgh}
            - post_finding: {text: '{{index .Match 1'}
            - post_finding: {severity: low}
`
	for name, body := range map[string]string{"bots.yaml": bots, "users.yaml": "users: []\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ := runCLI("check", "--config", dir)
	if code != 1 {
		t.Fatalf("check exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{
		`bots.yaml:9: bots[0].brain.rules[0].actions[0]: unknown action "post_findings" (did you mean post_finding?)`,
		`bots.yaml:10: bots[0].brain.rules[0].actions[1].post_finding.text: unknown field .Txt (did you mean .Text?)`,
		`bots.yaml:10: bots[0].brain.rules[0].actions[1].post_finding.severity: must be one of low, medium, high, critical`,
		`bots.yaml:11: bots[0].brain.rules[0].actions[2].post_finding.text: invalid template`,
		`bots.yaml:12: bots[0].brain.rules[0].actions[3].post_finding.text: missing; it is required`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}

// The example configuration's team uses the board: Matty pins a note,
// Priest's review posts its verdict.
func TestExampleFindings(t *testing.T) {
	m := startMain(t, exampleDir(t))
	c := dial(t, m.Addr(), nil)
	if got := c.say(map[string]any{"bot": "mattyatlas"}, "note: the public API must stay backwards compatible", "mattyatlas"); !strings.HasPrefix(got, "Pinned to the findings board") {
		t.Fatalf("matty said %q", got)
	}
	if got := c.say(map[string]any{"bot": "priest"}, "please review the login page", "priest"); !strings.Contains(got, "Verdict") {
		t.Fatalf("priest said %q", got)
	}
	_, body := apiGet(t, m, "/api/v1/findings?space=user:"+c.hello["user"].(string), m.AdminToken)
	got := itemTexts(body)
	if len(got) != 2 || got[0] != "the public API must stay backwards compatible" || !strings.HasPrefix(got[1], `Review of "please review the login page"`) {
		t.Errorf("board = %q", got)
	}
}

// TestFindingsAcrossInstances: a person connected to two gateways that
// share a PostgreSQL database (SPEC §11) gets a finding's frame on both,
// whichever made it visible: posted by a bot's turn, or released by a
// stage command given through the other.
func TestFindingsAcrossInstances(t *testing.T) {
	t.Setenv("SB_FINDINGS_DB", pgtest.NewDatabase(t))
	dir := t.TempDir()
	bots := strings.Replace(worldBots, "  database: test.db\n", "  database_env: SB_FINDINGS_DB\n", 1)
	os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(bots), 0o644)
	os.WriteFile(filepath.Join(dir, "users.yaml"), []byte(testUsers), 0o644)
	m1, m2 := startMain(t, dir), startMain(t, dir)
	c1 := dial(t, m1.Addr(), nil)
	c2 := dial(t, m2.Addr(), url.Values{"token": {c1.hello["token"].(string)}})
	for _, c := range []*client{c1, c2} {
		c.send(map[string]any{"type": "join", "chat": "war", "bots": []string{"scout", "alpha"}})
		c.await("joined")
	}
	frames := func(c *client, n int) []string {
		t.Helper()
		var got []string
		for len(got) < n {
			if f := c.read(); f["type"] == "finding" {
				got = append(got, fmt.Sprint(f["space"], " ", f["text"]))
			}
		}
		return got
	}
	c1.send(map[string]any{"type": "send", "bot": "scout", "text": "found high: private to me", "client_id": "p"})
	c1.send(map[string]any{"type": "send", "chat": "war", "text": "@scout found critical: shared in the room", "client_id": "r"})
	space := "user:" + c1.hello["user"].(string)
	for i, c := range []*client{c1, c2} {
		got := frames(c, 2)
		slices.Sort(got)
		if want := []string{"chat:web:war shared in the room", space + " private to me"}; !slices.Equal(got, want) {
			t.Errorf("connection %d got %q, want %q", i+1, got, want)
		}
	}

	// An isolated stage started through the second gateway; a bot posts
	// through the first; the release through the second shows it on both.
	c2.send(map[string]any{"type": "send", "chat": "war", "text": "/stage quiet isolated", "client_id": "s"})
	if got := c1.next("system"); !strings.Contains(got, "Stage quiet started") {
		t.Fatalf("first connection saw %q", got)
	}
	c1.send(map[string]any{"type": "send", "chat": "war", "text": "@alpha idea: fewer meetings", "client_id": "a"})
	waitUntil(10*time.Second, func() bool {
		_, body := apiGetAt(t, m1.Addr(), "/api/v1/findings?space=chat:web:war&viewer=alpha", m1.AdminToken)
		return len(items(body)) == 2
	})
	c2.send(map[string]any{"type": "send", "chat": "war", "text": "/release", "client_id": "x"})
	for i, c := range []*client{c1, c2} {
		if got := frames(c, 1); got[0] != "chat:web:war alpha thinks fewer meetings" {
			t.Errorf("connection %d got %q at the release", i+1, got)
		}
	}
}
