package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeModel is an OpenAI-compatible server whose first answer calls the
// delegate tool and whose later answers are plain text.
type fakeModel struct {
	mu       sync.Mutex
	requests []map[string]any
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	json.Unmarshal(body, &req)
	f.mu.Lock()
	f.requests = append(f.requests, req)
	n := len(f.requests)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	msg := map[string]any{"role": "assistant", "content": "Noted."}
	if n == 1 {
		msg = map[string]any{"role": "assistant", "content": "I'll ask Finn.", "tool_calls": []any{map[string]any{
			"id": "call_1", "type": "function",
			"function": map[string]any{"name": "delegate", "arguments": `{"bot":"finnshipley","task":"write the tests"}`},
		}}}
	}
	json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}}})
}

func TestModelBrainsWired(t *testing.T) {
	model := &fakeModel{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	dir := configDir(t)
	bots := strings.Replace(testBots, `    brain:
      kind: script
      rules:
        - match: '(?i)^hello'
          reply: 'Hi {{.User.Name}}, {{.Bot.Name}} here.'
      default: '{{.Bot.Name}} heard: {{.Text}}'`, fmt.Sprintf(`    brain:
      kind: openai
      base_url: %s/v1
      model: test-model`, srv.URL), 1)
	bots += `  - id: echoer
    name: Echoer
    brain:
      kind: exec
      command: [/bin/echo, exec says hi]
    platforms:
      web: {}
`
	if err := os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(bots), 0o644); err != nil {
		t.Fatal(err)
	}
	m := startMain(t, dir)
	c := dial(t, m.Addr(), nil)

	c.send(map[string]any{"type": "send", "bot": "echoer", "text": "anyone there?", "client_id": "e"})
	c.expect("ack")
	if r := c.expect("message"); r["text"] != "exec says hi" {
		t.Errorf("exec bot said %v", r["text"])
	}

	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "we have no tests", "client_id": "m"})
	c.expect("ack")
	var said []string
	var done bool
	for !done || len(said) < 3 {
		f := c.read()
		switch f["type"] {
		case "message":
			said = append(said, f["from"].(map[string]any)["id"].(string)+": "+f["text"].(string))
		case "delegation":
			done = done || f["status"] == "done"
		}
	}
	all := strings.Join(said, "\n")
	for _, want := range []string{"mattyatlas: I'll ask Finn.", "finnshipley: Finn built: write the tests"} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in:\n%s", want, all)
		}
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	first := model.requests[0]
	if first["model"] != "test-model" || first["tools"] == nil {
		t.Errorf("first request = %v", first)
	}
}
