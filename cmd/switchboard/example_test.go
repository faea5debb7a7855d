package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// exampleDir copies the repository's example configuration to a temp
// dir, on the test store (onTestStore).
func exampleDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"bots.yaml", "users.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "bots.yaml" {
			b = []byte(onTestStore(t, string(b)))
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The example team hands work along: Matty → Finn → Priest.
func TestExampleTeamHandsOff(t *testing.T) {
	m := startMain(t, exampleDir(t))
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "Tell Finn to build the login page", "client_id": "1"})
	done := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for len(done) < 2 && time.Now().Before(deadline) {
		f := c.read()
		switch f["type"] {
		case "message":
			t.Logf("%s in %s: %s", f["from"].(map[string]any)["name"], f["chat"], f["text"])
		case "delegation":
			t.Logf("delegation %s → %s: %s", f["from_bot"], f["to_bot"], f["status"])
			if f["status"] == "done" {
				done[f["from_bot"].(string)+">"+f["to_bot"].(string)] = true
			}
		}
	}
	if !done["mattyatlas>finnshipley"] || !done["finnshipley>priest"] {
		t.Errorf("hand-offs done: %v; want Matty → Finn → Priest", done)
	}
}
