package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/switchboard-chat/switchboard/platforms/web"
)

// termBots adds to testBots a bot that takes long to answer, for send's
// timeout.
const termBots = testBots + `
  - id: slowpoke
    name: Slow Poke
    brain:
      kind: exec
      command: [sleep, "5"]
      timeout: 10s
    platforms:
      web: {}
  - id: thinker
    name: Deep Thought
    brain:
      kind: exec
      command: [sh, -c, "sleep 1.5; echo pondered"]
      timeout: 10s
`

// termUsers lists Bryan's terminal identity with his web one.
const termUsers = `
users:
  - id: user-bryan
    name: Bryan
    identities: [web-bryan, cli-bryan]
`

// startTerm runs a gateway with termBots and termUsers and returns it
// with the flags that reach it as cli-bryan.
func startTerm(t *testing.T) (*Main, []string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"bots.yaml": termBots, "users.yaml": termUsers} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SWITCHBOARD_ADMIN_TOKEN", "")
	m := &Main{ConfigDir: dir, Listen: "127.0.0.1:0", Logger: testLogger(t), AdminToken: "admin-secret"}
	if err := m.Run(t.Context()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m, []string{"--server", "http://" + m.Addr(), "--token", "admin-secret", "--as", "bryan"}
}

// withStdin makes the commands read text as their standard input.
func withStdin(t *testing.T, text string) {
	old := stdin
	stdin = strings.NewReader(text)
	t.Cleanup(func() { stdin = old })
}

func TestSendCommand(t *testing.T) {
	m, flags := startTerm(t)
	send := func(args ...string) (int, string, string) {
		return runCLI(append([]string{"send"}, append(args, flags...)...)...)
	}

	t.Run("reply printed, exit 0", func(t *testing.T) {
		code, out, errOut := send("mattyatlas", "hello")
		if code != 0 || out != "Hi Bryan, Matty Atlas here.\n" || errOut != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("flags before the arguments", func(t *testing.T) {
		code, out, errOut := runCLI(append(append([]string{"send", "--timeout", "20s"}, flags...), "finnshipley", "ping")...)
		if code != 0 || !strings.HasPrefix(out, "Finn got ping") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		withStdin(t, "from a pipe\n")
		code, out, errOut := send("mattyatlas", "-")
		if code != 0 || out != "Matty Atlas heard: from a pipe\n" {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("json", func(t *testing.T) {
		code, out, _ := send("--json", "mattyatlas", "hi json")
		var f map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &f) != nil || f["type"] != "message" ||
			f["text"] != "Matty Atlas heard: hi json" || f["chat"] != "cli-bryan:mattyatlas" || f["reply_to"] == nil {
			t.Fatalf("exit %d, stdout %q", code, out)
		}
	})
	t.Run("hand-off: the acknowledgement, the target's reply, the notice", func(t *testing.T) {
		// Bryan spoke to Finn from the terminal above, so Finn's reply
		// comes to the terminal too, and Matty's notice follows it.
		// (The last two are in different chats: either may come first.)
		code, out, errOut := send("mattyatlas", "tell Finn to build the login page")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "Handing this to Finn Shipley") ||
			!slices.Contains(lines, "Finn built: build the login page") || !slices.Contains(lines, "Finn Shipley finished: Finn built: build the login page") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("hand-off from a terminal-only person", func(t *testing.T) {
		// cli-cat is in no users.yaml and never spoke to Finn: the
		// terminal she spoke from is where Finn's reply finds her.
		args := append([]string{"send", "mattyatlas", "tell Finn to paint the fence"}, flags...)
		code, out, errOut := runCLI(append(args, "--as", "cat")...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 3 || !slices.Contains(lines, "Finn built: paint the fence") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("no reply in time, exit 1", func(t *testing.T) {
		code, out, errOut := send("slowpoke", "are you there?", "--timeout", "300ms")
		if code != 1 || out != "" || !strings.Contains(errOut, "no reply from slowpoke within 300ms") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("unknown bot, exit 2", func(t *testing.T) {
		code, out, errOut := send("nobody", "hi")
		if code != 2 || out != "" || !strings.Contains(errOut, `unknown_bot: no bot "nobody"; the bots are mattyatlas, finnshipley, slowpoke, thinker`) {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("wrong token, exit 2", func(t *testing.T) {
		code, _, errOut := runCLI("send", "mattyatlas", "hi", "--server", "http://"+m.Addr(), "--token", "wrong", "--as", "bryan")
		if code != 2 || !strings.Contains(errOut, "refused the admin token") || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("no gateway, exit 2", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := ln.Addr().String()
		ln.Close()
		code, _, errOut := runCLI("send", "mattyatlas", "hi", "--server", "http://"+addr, "--token", "x", "--as", "bryan")
		want := "no gateway at http://" + addr + " — is `switchboard serve` running?"
		if code != 2 || !strings.Contains(errOut, want) {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("usage, exit 2", func(t *testing.T) {
		for _, args := range [][]string{{"send", "mattyatlas"}, {"send", "a", "b", "c"}, {"send", "--bogus", "a", "b"}} {
			if code, out, _ := runCLI(args...); code != 2 || out != "" {
				t.Errorf("%v: exit %d, stdout %q", args, code, out)
			}
		}
	})
}

// TestCLIDialNeedsAdminToken: ?as= without the admin token, or with a
// wrong one, is refused with 401 before the upgrade; a bad name with 400.
func TestCLIDialNeedsAdminToken(t *testing.T) {
	m, _ := startTerm(t)
	u := url.URL{Scheme: "ws", Host: m.Addr(), Path: "/ws", RawQuery: "as=cli-bryan"}
	for _, tt := range []struct {
		header http.Header
		query  string
		status int
	}{
		{nil, "as=cli-bryan", http.StatusUnauthorized},
		{http.Header{"Authorization": {"Bearer wrong"}}, "as=cli-bryan", http.StatusUnauthorized},
		{http.Header{"Authorization": {"Basic admin-secret"}}, "as=cli-bryan", http.StatusUnauthorized},
		{http.Header{"Authorization": {"Bearer admin-secret"}}, "as=web-bryan", http.StatusBadRequest},
		{http.Header{"Authorization": {"Bearer admin-secret"}}, "as=cli-a:b", http.StatusBadRequest},
		{http.Header{"Authorization": {"Bearer admin-secret"}}, "", http.StatusBadRequest},
	} {
		u.RawQuery = tt.query
		_, resp, err := websocket.DefaultDialer.Dial(u.String(), tt.header)
		if err == nil || resp == nil || resp.StatusCode != tt.status {
			t.Errorf("%v %q: err=%v resp=%v; want %d", tt.header, tt.query, err, resp, tt.status)
		}
	}
	u.RawQuery = "as=cli-bryan"
	ws, _, err := websocket.DefaultDialer.Dial(u.String(), http.Header{"Authorization": {"bearer admin-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var hello map[string]any
	ws.ReadJSON(&hello)
	if hello["platform_id"] != "cli-bryan" || hello["user"] != "user-bryan" {
		t.Fatalf("hello = %v", hello)
	}
}

// TestCLISharesSessionWithWeb: Bryan's terminal and web identities are
// one person, with one session per bot: the web's history shows what he
// said from the terminal, and a reply goes to the chat where he last
// spoke.
func TestCLISharesSessionWithWeb(t *testing.T) {
	t.Setenv("SB_TEST_WEB_SECRET", "top-secret")
	m, flags := startTerm(t)
	if code, out, errOut := runCLI(append([]string{"send", "finnshipley", "from the terminal"}, flags...)...); code != 0 || out != "Finn got from the terminal (0 before)\n" {
		t.Fatalf("send: exit %d, %q %q", code, out, errOut)
	}
	c := dial(t, m.Addr(), url.Values{"user": {"bryan"}, "sig": {web.Sign([]byte("top-secret"), "bryan")}})
	c.send(map[string]any{"type": "history", "bot": "finnshipley"})
	h := c.expect("history")
	msgs := h["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["text"] != "from the terminal" || msgs[0].(map[string]any)["platform"] != "cli" {
		t.Fatalf("history = %v", msgs)
	}
	c.send(map[string]any{"type": "send", "bot": "finnshipley", "text": "now from the web", "client_id": "w1"})
	c.expect("ack")
	if r := c.expect("message"); r["text"] != "Finn got now from the web (2 before)" {
		t.Fatalf("reply = %v", r)
	}
}

// TestChatWithoutTerminal: chat reads lines from a pipe and prints plain
// replies; a group of bots someone else made is refused with the fix.
func TestChatWithoutTerminal(t *testing.T) {
	_, flags := startTerm(t)
	withStdin(t, "first\n\nsecond\n")
	code, out, errOut := runCLI(append([]string{"chat", "finnshipley"}, flags...)...)
	if code != 0 || out != "Finn Shipley: Finn got first (0 before)\nFinn Shipley: Finn got second (2 before)\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	withStdin(t, "/quit\nnot sent\n")
	if code, out, _ := runCLI(append([]string{"chat", "mattyatlas", "finnshipley"}, flags...)...); code != 0 || out != "" {
		t.Fatalf("/quit: exit %d, %q", code, out)
	}
	withStdin(t, "hi\n")
	code, _, errOut = runCLI(append(append([]string{"chat", "mattyatlas", "finnshipley"}, flags...), "--as", "ann")...)
	if code != 2 || !strings.Contains(errOut, "not_allowed") || !strings.Contains(errOut, "conv new NAME --with mattyatlas,finnshipley") {
		t.Fatalf("another's group: exit %d, %q", code, errOut)
	}
}
