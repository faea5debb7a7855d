package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/platforms/web"
)

// syncBuffer is a log sink safe for the gateway's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// writeInPlace truncates and rewrites the file, as most editors do.
func writeInPlace(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeByRename writes a temp file and renames it over path, as vim and
// atomic-save editors do.
func writeByRename(t *testing.T, path, body string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".users.yaml.tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// waitUsers polls the admin API until a user with id is listed (want) or
// not, within 2 s as the spec promises.
func waitUsers(t *testing.T, m *Main, id string, want bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		_, body := apiGet(t, m, "/api/v1/users", m.AdminToken)
		found := false
		for _, u := range items(body) {
			found = found || u["id"] == id
		}
		if found == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("user %s listed=%v after 2s, want %v", id, found, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const carolUsers = testUsers + `
  - id: user-carol
    name: Carol
    identities: [web-carol]
`

func TestHotReloadUsers(t *testing.T) {
	for _, style := range []struct {
		name  string
		write func(*testing.T, string, string)
	}{{"in place", writeInPlace}, {"rename", writeByRename}} {
		t.Run(style.name, func(t *testing.T) {
			t.Setenv("SB_TEST_WEB_SECRET", "k")
			dir := configDir(t)
			logs := &syncBuffer{}
			m := &Main{ConfigDir: dir, Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(logs, nil))}
			if err := m.Run(t.Context()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })

			c := dial(t, m.Addr(), url.Values{"user": {"carol"}, "sig": {web.Sign([]byte("k"), "carol")}})
			say := func(text string) string {
				c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": text, "client_id": text})
				c.expect("ack")
				return c.expect("message")["text"].(string)
			}
			if got := say("hello 1"); got != "Hi carol, Matty Atlas here." {
				t.Fatalf("before the edit: %q", got)
			}

			usersPath := filepath.Join(dir, "users.yaml")
			style.write(t, usersPath, carolUsers)
			waitUsers(t, m, "user-carol", true)
			if got := say("hello 2"); got != "Hi Carol, Matty Atlas here." {
				t.Errorf("after adding Carol: %q", got)
			}

			// An invalid edit is rejected whole; Carol stays mapped.
			style.write(t, usersPath, carolUsers+"    surprise: key\n")
			time.Sleep(1500 * time.Millisecond)
			if got := say("hello 3"); got != "Hi Carol, Matty Atlas here." {
				t.Errorf("after an invalid edit: %q", got)
			}
			if !strings.Contains(logs.String(), "surprise") {
				t.Errorf("the rejected edit was not logged with its reason:\n%s", logs.String())
			}
			// So is a moment of an empty file.
			style.write(t, usersPath, "")
			time.Sleep(1500 * time.Millisecond)
			waitUsers(t, m, "user-carol", true)

			// The same connection carried all of it.
			if got := say("hello 4"); got != "Hi Carol, Matty Atlas here." {
				t.Errorf("at the end: %q", got)
			}
		})
	}
}

func TestHotReloadBots(t *testing.T) {
	dir := configDir(t)
	m := startMain(t, dir)
	c := dial(t, m.Addr(), nil)
	body := strings.Replace(testBots, "'{{.Bot.Name}} heard: {{.Text}}'", "'{{.Bot.Name}} now says: {{.Text}}'", 1)
	writeInPlace(t, filepath.Join(dir, "bots.yaml"), body)
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; ; i++ {
		c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "ping", "client_id": string(rune('a' + i))})
		c.expect("ack")
		got := c.expect("message")["text"]
		if got == "Matty Atlas now says: ping" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("brain not reloaded within 2s: %q", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestHotReloadWebLimits changes gateway.web's limits while a connection
// is open: a lower connection cap refuses the next connection without
// closing the open one, rates turned off let a burst through, and the
// defaults come back with the keys removed.
func TestHotReloadWebLimits(t *testing.T) {
	dir := configDir(t)
	m := startMain(t, dir)
	c := dial(t, m.Addr(), nil)
	const web = "    secret_env: SB_TEST_WEB_SECRET\n"
	limited := strings.Replace(testBots, web, web+`    max_connections_per_ip: 1
    max_messages_per_second_per_person: 0
    max_messages_per_second_per_ip: 0
`, 1)
	writeInPlace(t, filepath.Join(dir, "bots.yaml"), limited)
	waitDial(t, m.Addr(), http.StatusTooManyRequests)

	// The open connection stays, and with the rates off ten messages at
	// once all pass (the default rate of an anonymous visitor's address
	// passes 4).
	for i := range 10 {
		c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": fmt.Sprint("quick ", i), "client_id": fmt.Sprint("q", i)})
	}
	for acks := 0; acks < 10; {
		switch f := c.read(); f["type"] {
		case "ack":
			acks++
		case "error":
			t.Fatalf("with the rates off: %v", f)
		}
	}

	writeInPlace(t, filepath.Join(dir, "bots.yaml"), testBots)
	waitDial(t, m.Addr(), http.StatusSwitchingProtocols)
}

// waitDial dials /ws until the answer is status, within 2 s (the spec's
// bound on a live change).
func waitDial(t *testing.T, addr string, status int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		ws, resp, _ := dialRaw(addr, nil)
		if ws != nil {
			ws.Close()
		}
		got := 0
		if resp != nil {
			got = resp.StatusCode
		}
		if got == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/ws answered %d 2 s after the edit, want %d", got, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
