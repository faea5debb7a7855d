package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
)

// fakeTools hands out numbered tokens and records which are open.
type fakeTools struct {
	mu     sync.Mutex
	n      int
	open   map[string]brains.Actions
	opened []string
}

func (f *fakeTools) Open(actions brains.Actions) (string, string, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	token := fmt.Sprint("tok-", f.n)
	if f.open == nil {
		f.open = map[string]brains.Actions{}
	}
	f.open[token] = actions
	f.opened = append(f.opened, token)
	return "http://127.0.0.1:9/mcp", token, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.open, token)
	}
}

func (f *fakeTools) isOpen(token string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.open[token]
	return ok
}

// noActions is a turn's actions; the brain only hands them on.
type noActions struct{}

func (noActions) Specs() []brains.ActionSpec { return nil }
func (noActions) Call(context.Context, string, json.RawMessage) (string, error) {
	return "", errors.New("none")
}

// TestTurnTools: a turn with actions finds its endpoint in its
// environment and in switchboard-mcp.json (0600); when the turn ends
// the file is gone and the token ended. A turn without actions gets
// neither.
func TestTurnTools(t *testing.T) {
	tools := &fakeTools{}
	b := newBrain(t, Config{Command: fake("mcp"), Tools: tools})
	tn := turn("hi", "")
	tn.Actions = noActions{}
	r := reply(t, b, tn)
	lines := strings.SplitN(r.Text, "\n", 4)
	if len(lines) < 4 {
		t.Fatalf("the program saw:\n%s", r.Text)
	}
	if lines[0] != "http://127.0.0.1:9/mcp" || lines[1] != "tok-1" {
		t.Errorf("environment: url %q, token %q", lines[0], lines[1])
	}
	if lines[2] != "600" {
		t.Errorf("switchboard-mcp.json has mode %s, want 600", lines[2])
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(lines[3]), &cfg); err != nil {
		t.Fatalf("switchboard-mcp.json: %v\n%s", err, lines[3])
	}
	sb := cfg.MCPServers["switchboard"]
	if sb.Type != "http" || sb.URL != "http://127.0.0.1:9/mcp" || sb.Headers["Authorization"] != "Bearer tok-1" {
		t.Errorf("switchboard-mcp.json: %+v", cfg)
	}
	if tools.isOpen("tok-1") {
		t.Error("the token is still open after the turn")
	}
	dir := sessionDir(t, b, "s1")
	if _, err := os.Stat(filepath.Join(dir, MCPConfigFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("switchboard-mcp.json after the turn: %v", err)
	}

	// A file a crashed turn left is removed before a turn without actions.
	os.WriteFile(filepath.Join(dir, MCPConfigFile), []byte("{}"), 0o600)
	r = reply(t, b, turn("again", ""))
	if !strings.HasSuffix(r.Text, "no file") || strings.Contains(r.Text, "tok-") {
		t.Errorf("a turn without actions saw:\n%s", r.Text)
	}
	if len(tools.opened) != 1 {
		t.Errorf("tokens opened: %v, want one", tools.opened)
	}
}

// TestTurnToolsEndOnFailure: a run that fails still ends its token.
func TestTurnToolsEndOnFailure(t *testing.T) {
	tools := &fakeTools{}
	b := newBrain(t, Config{Command: fake("exit=3"), Tools: tools})
	tn := turn("hi", "")
	tn.Actions = noActions{}
	if _, err := b.Reply(context.Background(), tn); err == nil {
		t.Fatal("want the failure")
	}
	if len(tools.opened) != 1 || tools.isOpen(tools.opened[0]) {
		t.Errorf("opened %v; still open: %v", tools.opened, tools.open)
	}
}
