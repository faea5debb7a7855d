package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// contextBots share a room's context: scribe adds events and facts,
// mapper entities and facts, reader and model (an openai bot) see them.
const contextBots = `
gateway:
  listen: 127.0.0.1:0
  database: test.db
  crossbot: {enabled: false}
  web:
    max_messages_per_second_per_person: 0
    max_messages_per_second_per_ip: 0
shared:
  context: {events: 10, facts: 20, min_confidence: 0.5, chain: 5}
bots:
  - id: scribe
    name: Scribe
    brain:
      kind: script
      rules:
        - match: '^event: (.*)'
          reply: noted
          actions: [{add_event: {text: '{{index .Match 1}}'}}]
        - match: '^fact: (\S+) (\S+) (\S+) (\S+)'
          reply: stated
          actions: [{add_fact: {subject: '{{index .Match 1}}', predicate: '{{index .Match 2}}', object: '{{index .Match 3}}', confidence: '{{index .Match 4}}'}}]
        - match: '^bad fact (\S+)'
          reply: tried
          actions: [{add_fact: {subject: s, predicate: p, object: o, confidence: '{{index .Match 1}}'}}]
      default: '?'
    platforms: {web: {}}
  - id: mapper
    name: Mapper
    brain:
      kind: script
      rules:
        - match: '^entity: (\S+) (.*)'
          reply: mapped
          actions: [{add_entity: {name: '{{index .Match 1}}', attributes: '{{index .Match 2}}'}}]
        - match: '^fact: (\S+) (\S+) (\S+) (\S+)'
          reply: stated
          actions: [{add_fact: {subject: '{{index .Match 1}}', predicate: '{{index .Match 2}}', object: '{{index .Match 3}}', confidence: '{{index .Match 4}}'}}]
        - match: '^progress'
          reply: tried
          actions: [{progress: {text: 'not delegated', step: 1, total: 3}}]
      default: '?'
    platforms: {web: {}}
  - id: reader
    name: Reader
    brain:
      kind: script
      default: >-
        events:{{range .Context.Events}} [{{.Bot}}] {{.Text}};{{end}}
        entities:{{range .Context.Entities}} {{.Name}} {{.Attributes}};{{end}}
        facts:{{range .Context.Facts}} {{.Subject}} {{.Predicate}} {{.Object}} ({{.Confidence}}, {{.Bot}});{{end}}
    platforms: {web: {}}
  - id: model
    name: Model
    brain:
      kind: openai
      base_url: MODEL_URL
      model: test
    platforms: {web: {}}
`

// modelServer is a chat completions server that answers "ok" and keeps
// the system message of each request.
type modelServer struct {
	mu      sync.Mutex
	systems []string
}

func (s *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &req)
	s.mu.Lock()
	if len(req.Messages) > 0 && req.Messages[0].Role == "system" {
		s.systems = append(s.systems, req.Messages[0].Content)
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
}

func (s *modelServer) lastSystem() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.systems) == 0 {
		return ""
	}
	return s.systems[len(s.systems)-1]
}

// Actions of two bots in a room appear in a third bot's next turn (its
// .Context) and in a model's prompt, never in another room's; a newer
// fact replaces the older of its subject and predicate; facts below
// min_confidence stay out; bad additions are refused and store nothing.
func TestSharedContextInRoom(t *testing.T) {
	model := &modelServer{}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	m := startMain(t, writeConfigDir(t, strings.Replace(contextBots, "MODEL_URL", srv.URL+"/v1", 1)))
	ann := dial(t, m.Addr(), nil)
	for _, room := range []string{"plan", "elsewhere"} {
		ann.send(map[string]any{"type": "join", "chat": room, "bots": []string{"scribe", "mapper", "reader", "model"}})
		ann.await("joined")
	}
	plan := map[string]any{"chat": "plan"}
	for _, step := range []struct{ bot, text, want string }{
		{"scribe", "event: kickoff held", "noted"},
		{"mapper", `entity: competitor-x {"pricing": "$99/month"}`, "mapped"},
		{"mapper", `entity: competitor-x {"api": "REST", "pricing": "$89/month"}`, "mapped"},
		{"scribe", "fact: CompetitorX status draft 0.9", "stated"},
		{"mapper", "fact: CompetitorX status final 0.8", "stated"},
		{"scribe", "fact: CompetitorX rumour big 0.3", "stated"},
		{"scribe", "bad fact 1.5", "tried"},
		{"mapper", "progress", "tried"},
	} {
		if got := ann.say(plan, "@"+step.bot+" "+step.text, step.bot); got != step.want {
			t.Fatalf("%s said %q to %q", step.bot, got, step.text)
		}
	}
	want := `events: [Scribe] kickoff held; entities: competitor-x {"api":"REST","pricing":"$89/month"}; ` +
		`facts: CompetitorX status final (0.8, Mapper);`
	if got := ann.say(plan, "@reader what do we know?", "reader"); got != want {
		t.Errorf("reader in the room said\n%q\nwant\n%q", got, want)
	}
	if got := ann.say(map[string]any{"chat": "elsewhere"}, "@reader and here?", "reader"); got != "events: entities: facts:" {
		t.Errorf("reader in another room said %q", got)
	}
	if got := ann.say(plan, "@model summarise", "model"); got != "ok" {
		t.Fatalf("model said %q", got)
	}
	system := model.lastSystem()
	block := "SHARED CONTEXT\nEvents: Scribe: kickoff held\n" +
		`Entities: competitor-x {"api":"REST","pricing":"$89/month"}` + "\n" +
		"Facts: CompetitorX status final (0.8, Mapper)\n\n"
	if !strings.Contains(system, block) {
		t.Errorf("the model's system message lacks the block\n%s\nin\n%s", block, system)
	}

	// The operator sees every fact, whatever its confidence; the bad
	// one was never stored.
	_, body := apiGet(t, m, "/api/v1/context?space=chat:web:plan", m.AdminToken)
	facts := body["facts"].([]any)
	if len(facts) != 2 {
		t.Errorf("facts = %v, want the replaced status and the rumour", facts)
	}
	if code, _ := apiGet(t, m, "/api/v1/context?space=nowhere", m.AdminToken); code != http.StatusBadRequest {
		t.Errorf("a bad space answered %d", code)
	}
	if code, _ := apiGet(t, m, "/api/v1/context", m.AdminToken); code != http.StatusBadRequest {
		t.Errorf("no space answered %d", code)
	}
	_, body = apiGet(t, m, "/api/v1/delegations", m.AdminToken)
	if n := len(items(body)); n != 0 {
		t.Errorf("progress outside a hand-off left %d delegations", n)
	}

	// The widget reads a room's context, and another's room is refused.
	ann.send(map[string]any{"type": "context", "chat": "plan"})
	f := ann.await("context")
	if f["space"] != "chat:web:plan" || len(f["events"].([]any)) != 1 || len(f["entities"].([]any)) != 1 {
		t.Errorf("context frame = %v", f)
	}
	bob := dial(t, m.Addr(), nil)
	bob.send(map[string]any{"type": "context", "chat": "plan", "client_id": "c"})
	bob.refusedWith("not_allowed", "c")
}

// The worked example of bots.yaml: one message to Matty starts three
// hand-offs — Researcher writes competitors.json, Coder reads it and
// writes api-comparison.json, Auditor validates both — each output
// checked, each step's files and hashes in the chain and the callbacks,
// progress shown as it comes, and the room's context panel current.
func TestWorkedExample(t *testing.T) {
	runWorkedExample(t, exampleDir(t), false)
}

// The same with Auditor an exec bot: it finds the upstream files under
// artifacts/ in its working directory.
func TestWorkedExampleExecAuditor(t *testing.T) {
	dir := exampleDir(t)
	path := filepath.Join(dir, "bots.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(string(b), "  - id: auditor")
	if at < 0 {
		t.Fatal("bots.yaml has no auditor")
	}
	exec := `  - id: auditor
    name: Auditor
    brain:
      kind: exec
      command:
        - /bin/sh
        - -c
        - |
          set -e
          a=$(wc -c < artifacts/competitors.json | tr -d ' ')
          b=$(wc -c < artifacts/api-comparison.json | tr -d ' ')
          grep -q CompetitorX artifacts/competitors.json
          grep -q '"theirs"' artifacts/api-comparison.json
          printf '{"valid": true, "checked": ["competitors.json", "api-comparison.json"], "sizes": [%s, %s]}' "$a" "$b" > validation.json
          echo "both files agree" > audit-notes.txt
          echo "Validated from artifacts/: $(ls artifacts | tr '\n' ' ')sizes $a $b"
    platforms:
      web: {}
`
	if err := os.WriteFile(path, append(b[:at:at], exec...), 0o644); err != nil {
		t.Fatal(err)
	}
	runWorkedExample(t, dir, true)
}

func runWorkedExample(t *testing.T, dir string, execAuditor bool) {
	m := startMain(t, dir)
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "join", "chat": "launch", "bots": []string{"mattyatlas", "researcher", "coder", "auditor"}})
	c.await("joined")
	c.send(map[string]any{"type": "send", "chat": "launch", "text": "@matty compare our API with CompetitorX", "client_id": "go"})

	// Every delegation frame, in order, until the three are done.
	type frame struct{ to, status, progress string }
	var frames []frame
	replies := map[string]string{}
	contexts := 0
	done := 0
	deadline := time.Now().Add(30 * time.Second)
	for done < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: delegation frames %v, replies %v", frames, replies)
		}
		f := c.read()
		switch f["type"] {
		case "delegation":
			fr := frame{to: f["to_bot"].(string), status: f["status"].(string)}
			if f["chat"] != "launch" {
				t.Errorf("a delegation frame names chat %v, want the room it was asked in", f["chat"])
			}
			if p, ok := f["progress"].(map[string]any); ok {
				fr.progress = fmt.Sprintf("%v/%v %v", p["step"], p["total"], p["text"])
			}
			frames = append(frames, fr)
			if fr.status == "done" {
				done++
			}
			if fr.status == "failed" || fr.status == "refused" {
				t.Fatalf("hand-off to %s %s; frames %v, replies %v", fr.to, fr.status, frames, replies)
			}
		case "message":
			replies[f["from"].(map[string]any)["id"].(string)] = f["text"].(string)
		case "context":
			contexts++
		}
	}
	// Each hand-off's progress comes while it runs, before it is done,
	// in the pipeline's order.
	var progress []string
	for _, f := range frames {
		if f.status == "running" && f.progress != "" {
			progress = append(progress, f.to+" "+f.progress)
		}
	}
	wantProgress := []string{"researcher 1/3 Surveying CompetitorX", "coder 2/3 Comparing the APIs"}
	if !execAuditor {
		wantProgress = append(wantProgress, "auditor 3/3 Validating both files")
	}
	if !slices.Equal(progress, wantProgress) {
		t.Errorf("progress frames = %q, want %q (all frames %v)", progress, wantProgress, frames)
	}
	if execAuditor {
		if replies["auditor"] == "" {
			// The reply may come after its hand-off's status.
			f := c.messageWhere(func(f map[string]any) bool { return f["from"].(map[string]any)["id"] == "auditor" })
			replies["auditor"] = f["text"].(string)
		}
		if r := replies["auditor"]; !strings.Contains(r, "Validated from artifacts/: api-comparison.json competitors.json") {
			t.Errorf("the exec auditor said %q", r)
		}
	}

	// The chain: three steps, each one's outputs the next one's inputs.
	_, body := apiGet(t, m, "/api/v1/context?space=chat:web:launch", m.AdminToken)
	raw, _ := json.Marshal(body)
	var got struct {
		Events   []struct{ Bot, Text string }
		Entities []struct {
			Name       string
			Attributes map[string]string
		}
		Facts []struct {
			Subject, Predicate, Object, Bot string
			Confidence                      float64
		}
		Chain []struct {
			Step            int
			Producer, Task  string
			Status          string
			DelegationID    string `json:"delegation_id"`
			Inputs, Outputs []struct{ ID, Name string }
		}
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Chain) != 3 {
		t.Fatalf("chain = %+v", got.Chain)
	}
	// An exec auditor's other file is recorded too, after the expected
	// one.
	auditorOutputs := "validation.json"
	if execAuditor {
		auditorOutputs += ",audit-notes.txt"
	}
	names := func(fs []struct{ ID, Name string }) string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Name)
		}
		return strings.Join(out, ",")
	}
	for i, want := range []struct{ producer, inputs, outputs string }{
		{"researcher", "", "competitors.json"},
		{"coder", "competitors.json", "api-comparison.json"},
		{"auditor", "competitors.json,api-comparison.json", auditorOutputs},
	} {
		st := got.Chain[i]
		if st.Step != i+1 || st.Producer != want.producer || st.Status != "done" ||
			names(st.Inputs) != want.inputs || names(st.Outputs) != want.outputs {
			t.Errorf("step %d = %+v, want %s producing %s from %q", i+1, st, want.producer, want.outputs, want.inputs)
		}
	}
	c1, c2, c3 := got.Chain[0], got.Chain[1], got.Chain[2]
	if len(c2.Inputs) == 1 && c2.Inputs[0].ID != c1.Outputs[0].ID {
		t.Errorf("coder's input %s is not researcher's output %s", c2.Inputs[0].ID, c1.Outputs[0].ID)
	}
	if len(c3.Inputs) == 2 && (c3.Inputs[0].ID != c1.Outputs[0].ID || c3.Inputs[1].ID != c2.Outputs[0].ID) {
		t.Errorf("auditor's inputs %+v are not the upstream outputs", c3.Inputs)
	}
	if !execAuditor {
		if len(got.Facts) != 1 || got.Facts[0].Subject != "CompetitorX" || got.Facts[0].Object != "true" || got.Facts[0].Bot != "auditor" {
			t.Errorf("facts = %+v", got.Facts)
		}
	}
	if len(got.Entities) != 1 || got.Entities[0].Attributes["pricing"] != "$99/month" {
		t.Errorf("entities = %+v", got.Entities)
	}
	if len(got.Events) < 2 {
		t.Errorf("events = %+v", got.Events)
	}
	if contexts < 3 {
		t.Errorf("the room got %d context frames; want one at least per step", contexts)
	}

	// Each record holds its newest progress, and its outputs with their
	// hashes; the asking bot's callback lists them.
	for _, st := range got.Chain {
		_, d := apiGet(t, m, "/api/v1/delegations/"+st.DelegationID, m.AdminToken)
		arts, _ := d["artifacts"].([]any)
		if d["status"] != "done" || len(arts) != len(st.Outputs) {
			t.Fatalf("delegation %s = %v", st.DelegationID, d)
		}
		if p, _ := d["progress"].(map[string]any); !execAuditor || st.Producer != "auditor" {
			if p == nil || p["total"] != float64(3) {
				t.Errorf("%s's record holds progress %v", st.Producer, d["progress"])
			}
		}
		a := arts[0].(map[string]any)
		callback := fmt.Sprintf("Outputs: %s (%v bytes, sha256:%s)", a["name"], a["size"], a["sha256"])
		if !callbackSaid(t, m, d["from_bot"].(string), callback) {
			t.Errorf("no callback to %s says %q", d["from_bot"], callback)
		}
	}
}

// callbackSaid reports whether a system message in one of bot's sessions
// holds text.
func callbackSaid(t *testing.T, m *Main, bot, text string) bool {
	t.Helper()
	_, sessions := apiGet(t, m, "/api/v1/sessions?bot="+bot, m.AdminToken)
	for _, s := range items(sessions) {
		_, msgs := apiGet(t, m, fmt.Sprintf("/api/v1/sessions/%s/messages?kind=system", s["id"]), m.AdminToken)
		for _, msg := range items(msgs) {
			if strings.Contains(msg["text"].(string), text) {
				return true
			}
		}
	}
	return false
}

// progressBots: boss hands stepper a task, which reports three steps.
const progressBots = `
gateway:
  listen: 127.0.0.1:0
  database: test.db
  web:
    max_messages_per_second_per_person: 0
    max_messages_per_second_per_ip: 0
bots:
  - id: boss
    name: Boss
    brain:
      kind: script
      rules:
        - match: '^go'
          reply: 'Stepper, over to you.'
          actions: [{delegate: {bot: stepper, task: 'three steps'}}]
        - match: '^hand (\S+)'
          reply: 'Handing it over.'
          actions: [{delegate: {bot: stepper, task: 'read it', inputs: ['{{index .Match 1}}']}}]
      default: '?'
    platforms: {web: {}}
    delegation: {allow: [stepper]}
  - id: stepper
    name: Stepper
    brain:
      kind: script
      rules:
        - match: 'three steps'
          reply: 'All three done.'
          actions:
            - progress: {text: 'Reading', step: 1, total: 3}
            - progress: {text: 'Writing', step: 2, total: 3}
            - progress: {text: 'Checking', step: 3, total: 3}
            - progress: {text: 'Too far', step: 4, total: 3}
      default: '?'
    platforms: {web: {}}
`

// progressUntilDone reads c's delegation frames until a hand-off ends,
// and returns the progress its running frames carried ("1/3 Reading")
// and its ID. A hand-off that does not end done fails the test.
func progressUntilDone(t *testing.T, c *client) ([]string, string) {
	t.Helper()
	var labels []string
	for {
		f := c.await("delegation")
		if p, ok := f["progress"].(map[string]any); ok && f["status"] == "running" {
			labels = append(labels, fmt.Sprintf("%v/%v %v", p["step"], p["total"], p["text"]))
		}
		switch f["status"] {
		case "done":
			id, _ := f["id"].(string)
			return labels, id
		case "failed", "refused":
			t.Fatalf("the hand-off %s", f["status"])
		}
	}
}

// Progress frames arrive in the order reported, and the record holds the
// latest; a report that breaks a rule changes nothing.
func TestProgressFrames(t *testing.T) {
	m := startMain(t, writeConfigDir(t, progressBots))
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "send", "bot": "boss", "text": "go", "client_id": "g"})
	labels, id := progressUntilDone(t, c)
	if want := []string{"1/3 Reading", "2/3 Writing", "3/3 Checking"}; !slices.Equal(labels, want) {
		t.Errorf("progress frames = %q, want %q", labels, want)
	}
	_, d := apiGet(t, m, "/api/v1/delegations/"+id, m.AdminToken)
	if p, _ := d["progress"].(map[string]any); p == nil || p["text"] != "Checking" || p["step"] != float64(3) {
		t.Errorf("the record holds progress %v", d["progress"])
	}

	// An input that is not there refuses the hand-off, saying why; a
	// path is refused by the action and hands nothing.
	c.send(map[string]any{"type": "send", "bot": "boss", "text": "hand missing.json", "client_id": "h1"})
	refusal := c.messageWhere(func(f map[string]any) bool { return strings.HasPrefix(f["text"].(string), "I can't hand") })
	if want := `I can't hand that to Stepper: there is no file "missing.json" in this conversation's artifact chain.`; refusal["text"] != want {
		t.Errorf("refusal = %q, want %q", refusal["text"], want)
	}
	c.send(map[string]any{"type": "send", "bot": "boss", "text": "hand ../etc/passwd", "client_id": "h2"})
	c.messageWhere(func(f map[string]any) bool { return f["text"] == "Handing it over." && f["id"] != refusal["id"] })
	_, body := apiGet(t, m, "/api/v1/delegations", m.AdminToken)
	statuses := map[string]int{}
	for _, it := range items(body) {
		statuses[it["status"].(string)]++
	}
	if statuses["refused"] != 1 || statuses["done"] != 1 || len(items(body)) != 2 {
		t.Errorf("delegations by status = %v, want the done one and one refused", statuses)
	}
}

// An agent CLI handed a task reports progress and adds to the shared
// context over MCP, as the seed's delegated bots do.
func TestAgentProgressOverMCP(t *testing.T) {
	agent := buildFakeAgent(t)
	log := filepath.Join(t.TempDir(), "agent.log")
	t.Setenv("FAKE_AGENT_LOG", log)
	bots := fmt.Sprintf(`
gateway:
  listen: 127.0.0.1:0
  database: test.db
bots:
  - id: boss
    name: Boss
    brain:
      kind: script
      rules:
        - match: '^go'
          reply: 'Agent, over to you.'
          actions: [{delegate: {bot: agent, task: 'read the files'}}]
      default: '?'
    platforms: {web: {}}
    delegation: {allow: [agent]}
  - id: agent
    name: Agent
    brain:
      kind: exec
      command: [%s]
      env: [FAKE_AGENT_LOG]
      timeout: 60s
    platforms: {web: {}}
`, agent)
	m := startMain(t, writeConfigDir(t, bots))
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "send", "bot": "boss", "text": "go", "client_id": "g"})
	progress, id := progressUntilDone(t, c)
	if !slices.Equal(progress, []string{"1/2 Reading the files"}) {
		t.Errorf("progress frames = %q", progress)
	}
	_, d := apiGet(t, m, "/api/v1/delegations/"+id, m.AdminToken)
	if p, _ := d["progress"].(map[string]any); p == nil || p["text"] != "Reading the files" {
		t.Errorf("the record holds progress %v", d["progress"])
	}
	space := d["space"].(string)
	_, body := apiGet(t, m, "/api/v1/context?space="+space, m.AdminToken)
	events, _ := body["events"].([]any)
	if len(events) != 1 || events[0].(map[string]any)["text"] != "the agent read the files" || events[0].(map[string]any)["bot"] != "agent" {
		t.Errorf("events of %s = %v", space, events)
	}
	raw, _ := os.ReadFile(log)
	if !strings.Contains(string(raw), `"progress"`) {
		t.Errorf("the agent's log: %s", raw)
	}
}
