package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchboard-chat/switchboard/identity"
	"github.com/switchboard-chat/switchboard/platforms/web"
)

// testBots is a small bots.yaml for end-to-end tests: script brains whose
// replies show what they saw.
const testBots = `
gateway:
  listen: 127.0.0.1:0
  database: test.db
  web:
    secret_env: SB_TEST_WEB_SECRET
bots:
  - id: mattyatlas
    name: Matty Atlas
    aliases: [matty]
    persona: You are Matty Atlas.
    brain:
      kind: script
      rules:
        - match: '(?i)^hello'
          reply: 'Hi {{.User.Name}}, {{.Bot.Name}} here.'
      default: '{{.Bot.Name}} heard: {{.Text}}'
    platforms:
      web: {}
    delegation:
      allow: [finnshipley]
  - id: finnshipley
    name: Finn Shipley
    aliases: [finn]
    brain:
      kind: script
      default: '{{if .Delegation}}Finn built: {{.Text}}{{else}}Finn got {{.Text}} ({{len .History}} before){{end}}'
    platforms:
      web: {}
`

const testUsers = `
users:
  - id: user-bryan
    name: Bryan
    identities: [web-bryan, telegram-123456]
`

// unlimitedWeb turns off the widget's limits across connections (SPEC
// §12): the load tests open hundreds of anonymous connections from
// loopback, which the defaults would rightly refuse. The per-connection
// frame limit stays.
const unlimitedWeb = `    max_connections_per_ip: 0
    max_messages_per_second_per_person: 0
    max_messages_per_second_per_ip: 0
`

// configDir writes the test configuration to a temp dir.
func configDir(t *testing.T) string {
	t.Helper()
	return writeConfigDir(t, testBots)
}

// loadConfigDir is configDir with unlimitedWeb.
func loadConfigDir(t *testing.T) string {
	t.Helper()
	const web = "    secret_env: SB_TEST_WEB_SECRET\n"
	return writeConfigDir(t, strings.Replace(testBots, web, web+unlimitedWeb, 1))
}

// writeConfigDir writes bots and testUsers to a temp dir.
func writeConfigDir(t *testing.T, bots string) string {
	t.Helper()
	dir := t.TempDir()
	bots = onTestStore(t, bots)
	for name, body := range map[string]string{"bots.yaml": bots, "users.yaml": testUsers} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// startMain runs a gateway in-process on dir and stops it at cleanup.
func startMain(t *testing.T, dir string) *Main {
	t.Helper()
	m := &Main{ConfigDir: dir, Listen: "127.0.0.1:0", Logger: testLogger(t)}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// client is a widget connection speaking the /ws protocol.
type client struct {
	t     *testing.T
	ws    *websocket.Conn
	hello map[string]any
}

func dial(t *testing.T, addr string, q url.Values) *client {
	t.Helper()
	c, resp, err := dialRaw(addr, q)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (HTTP %d)", err, status)
	}
	cl := &client{t: t, ws: c}
	t.Cleanup(func() { c.Close() })
	cl.hello = cl.expect("hello")
	return cl
}

func dialRaw(addr string, q url.Values) (*websocket.Conn, *http.Response, error) {
	u := url.URL{Scheme: "ws", Host: addr, Path: "/ws", RawQuery: q.Encode()}
	return websocket.DefaultDialer.Dial(u.String(), nil)
}

func (c *client) send(frame map[string]any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(frame); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read returns the next frame.
func (c *client) read() map[string]any {
	c.t.Helper()
	c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var f map[string]any
	if err := c.ws.ReadJSON(&f); err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return f
}

// expect skips typing frames and returns the next frame, which must be of
// the given type.
func (c *client) expect(typ string) map[string]any {
	c.t.Helper()
	for {
		f := c.read()
		if f["type"] == "typing" && typ != "typing" {
			continue
		}
		if f["type"] != typ {
			c.t.Fatalf("got frame %v, want type %q", f, typ)
		}
		return f
	}
}

func TestSendAckReply(t *testing.T) {
	m := startMain(t, configDir(t))
	c := dial(t, m.Addr(), nil)
	pid := c.hello["platform_id"].(string)
	if !strings.HasPrefix(pid, "web-anon-") || c.hello["user"] != pid || c.hello["token"] == "" {
		t.Fatalf("hello = %v", c.hello)
	}
	if bots := c.hello["bots"].([]any); len(bots) != 2 {
		t.Fatalf("hello bots = %v", bots)
	}
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "hello there", "client_id": "c1"})
	ack := c.expect("ack")
	if ack["client_id"] != "c1" || ack["id"] == nil {
		t.Fatalf("ack = %v", ack)
	}
	reply := c.expect("message")
	guest, _ := identity.GuestName(pid) // an anonymous visitor's name, "Guest 4F2A"
	if reply["text"] != "Hi "+guest+", Matty Atlas here." || reply["chat"] != pid+":mattyatlas" {
		t.Fatalf("reply = %v", reply)
	}
	from := reply["from"].(map[string]any)
	if from["kind"] != "bot" || from["id"] != "mattyatlas" || from["name"] != "Matty Atlas" {
		t.Errorf("reply from = %v", from)
	}
	if _, err := time.Parse(time.RFC3339, reply["time"].(string)); err != nil {
		t.Errorf("reply time: %v", err)
	}
}

func TestHistorySurvivesRestart(t *testing.T) {
	dir := configDir(t)
	m := startMain(t, dir)
	c := dial(t, m.Addr(), nil)
	token := c.hello["token"].(string)
	for i := range 3 {
		c.send(map[string]any{"type": "send", "bot": "finnshipley", "text": fmt.Sprint("task ", i), "client_id": fmt.Sprint(i)})
		c.expect("ack")
		c.expect("message")
	}
	if err := m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	m2 := startMain(t, dir)
	c2 := dial(t, m2.Addr(), url.Values{"token": {token}})
	if c2.hello["platform_id"] != c.hello["platform_id"] {
		t.Fatalf("resumed as %v, want %v", c2.hello["platform_id"], c.hello["platform_id"])
	}
	c2.send(map[string]any{"type": "history", "bot": "finnshipley"})
	h := c2.expect("history")
	msgs := h["messages"].([]any)
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.(map[string]any)["text"].(string))
	}
	want := "task 0|Finn got task 0 (0 before)|task 1|Finn got task 1 (2 before)|task 2|Finn got task 2 (4 before)"
	if strings.Join(texts, "|") != want {
		t.Errorf("history after restart = %q\nwant %q", strings.Join(texts, "|"), want)
	}
}

func TestRefusedFramesKeepConnection(t *testing.T) {
	m := startMain(t, configDir(t))
	c := dial(t, m.Addr(), nil)
	tests := []struct {
		name string
		raw  string
		code string
	}{
		{"malformed", `{"type":"send",`, "bad_request"},
		{"unknown type", `{"type":"shout"}`, "bad_request"},
		{"missing field", `{"type":"send","bot":"mattyatlas"}`, "bad_request"},
		{"unknown bot", `{"type":"send","bot":"nobody","text":"hi","client_id":"x"}`, "unknown_bot"},
		{"unknown chat", `{"type":"send","chat":"nowhere","text":"hi"}`, "unknown_chat"},
		{"too large", `{"type":"send","bot":"mattyatlas","text":"` + strings.Repeat("a", 70000) + `"}`, "too_large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.ws.WriteMessage(websocket.TextMessage, []byte(tc.raw)); err != nil {
				t.Fatal(err)
			}
			f := c.expect("error")
			if f["code"] != tc.code {
				t.Errorf("code = %v, want %s (%v)", f["code"], tc.code, f["message"])
			}
		})
	}
	// Still open, nothing lost: a good message works and history holds only it.
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "still here?", "client_id": "ok"})
	c.expect("ack")
	if r := c.expect("message"); r["text"] != "Matty Atlas heard: still here?" {
		t.Errorf("reply = %v", r)
	}
}

func TestSignedUsers(t *testing.T) {
	t.Setenv("SB_TEST_WEB_SECRET", "top-secret")
	m := startMain(t, configDir(t))

	_, resp, err := dialRaw(m.Addr(), url.Values{"user": {"bryan"}, "sig": {web.Sign([]byte("wrong"), "bryan")}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad signature: err=%v resp=%v; want 401", err, resp)
	}
	_, resp, err = dialRaw(m.Addr(), url.Values{"token": {"forged.token"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad token: err=%v; want 401", err)
	}

	c := dial(t, m.Addr(), url.Values{"user": {"bryan"}, "sig": {web.Sign([]byte("top-secret"), "bryan")}})
	if c.hello["platform_id"] != "web-bryan" || c.hello["user"] != "user-bryan" {
		t.Fatalf("hello = %v", c.hello)
	}
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "hello", "client_id": "1"})
	c.expect("ack")
	if r := c.expect("message"); r["text"] != "Hi Bryan, Matty Atlas here." {
		t.Errorf("reply = %v", r)
	}

	// A second tab of the same user sees the message and the reply.
	c2 := dial(t, m.Addr(), url.Values{"user": {"bryan"}, "sig": {web.Sign([]byte("top-secret"), "bryan")}})
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "from tab one", "client_id": "2"})
	if f := c2.expect("message"); f["text"] != "from tab one" || f["from"].(map[string]any)["kind"] != "human" {
		t.Errorf("other tab got %v", f)
	}
	if f := c2.expect("message"); f["text"] != "Matty Atlas heard: from tab one" {
		t.Errorf("other tab got %v", f)
	}
}

func TestSignedLinkWithoutSecretIs401(t *testing.T) {
	m := startMain(t, configDir(t))
	_, resp, err := dialRaw(m.Addr(), url.Values{"user": {"bryan"}, "sig": {"00"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("err=%v; want 401", err)
	}
}

func TestCrossOriginRefused(t *testing.T) {
	m := startMain(t, configDir(t))
	u := url.URL{Scheme: "ws", Host: m.Addr(), Path: "/ws"}
	_, resp, err := websocket.DefaultDialer.Dial(u.String(), http.Header{"Origin": {"https://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin dial: err=%v; want 403", err)
	}
}

func TestDuplicateClientIDAnsweredOnce(t *testing.T) {
	m := startMain(t, configDir(t))
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "once", "client_id": "same"})
	first := c.expect("ack")
	c.expect("message")
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "once", "client_id": "same"})
	second := c.expect("ack")
	if first["id"] != second["id"] {
		t.Errorf("resent message got id %v, want %v", second["id"], first["id"])
	}
	c.send(map[string]any{"type": "history", "bot": "mattyatlas"})
	if msgs := c.expect("history")["messages"].([]any); len(msgs) != 2 {
		t.Errorf("history has %d messages, want 2", len(msgs))
	}
}

func TestGroupRoom(t *testing.T) {
	m := startMain(t, configDir(t))
	a := dial(t, m.Addr(), nil)
	b := dial(t, m.Addr(), nil)
	a.send(map[string]any{"type": "join", "chat": "lobby", "bots": []string{"mattyatlas", "finnshipley"}})
	if j := a.expect("joined"); len(j["bots"].([]any)) != 2 {
		t.Fatalf("joined = %v", j)
	}
	// The room is closed: b comes in on a's invite.
	a.send(map[string]any{"type": "invite", "chat": "lobby", "user": b.hello["platform_id"]})
	a.expect("invited")
	b.send(map[string]any{"type": "join", "chat": "lobby"})
	b.expect("joined")

	a.send(map[string]any{"type": "send", "chat": "lobby", "text": "nobody is addressed", "client_id": "1"})
	a.expect("ack")
	if f := b.expect("message"); f["text"] != "nobody is addressed" {
		t.Fatalf("member got %v", f)
	}
	a.send(map[string]any{"type": "send", "chat": "lobby", "text": "@finn ship it", "client_id": "2"})
	a.expect("ack")
	if f := a.expect("message"); f["text"] != "Finn got ship it (0 before)" {
		t.Fatalf("reply = %v", f)
	}
	b.expect("message") // a's message
	if f := b.expect("message"); f["bot"] != "finnshipley" {
		t.Fatalf("member got %v", f)
	}
}

func TestManyClients(t *testing.T) {
	if testing.Short() {
		t.Log("short mode: 20 clients instead of 100")
	}
	clients, perClient := 100, 20
	if testing.Short() {
		clients = 20
	}
	m := startMain(t, loadConfigDir(t))
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- converse(m.Addr(), i, perClient)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// converse sends n messages as one anonymous client, pipelined, and checks
// that every reply arrives, once, in order.
func converse(addr string, id, n int) error {
	ws, _, err := dialRaw(addr, nil)
	if err != nil {
		return err
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	var hello map[string]any
	if err := ws.ReadJSON(&hello); err != nil {
		return err
	}
	go func() {
		for i := range n {
			ws.WriteJSON(map[string]any{"type": "send", "bot": "mattyatlas", "text": fmt.Sprintf("c%d m%d", id, i), "client_id": fmt.Sprint(i)})
		}
	}()
	acks, replies := 0, 0
	for acks < n || replies < n {
		var f map[string]any
		if err := ws.ReadJSON(&f); err != nil {
			return fmt.Errorf("client %d after %d acks %d replies: %w", id, acks, replies, err)
		}
		switch f["type"] {
		case "ack":
			acks++
		case "message":
			want := fmt.Sprintf("Matty Atlas heard: c%d m%d", id, replies)
			if f["text"] != want {
				return fmt.Errorf("client %d reply %d = %q, want %q", id, replies, f["text"], want)
			}
			replies++
		case "error":
			b, _ := json.Marshal(f)
			return fmt.Errorf("client %d: %s", id, b)
		}
	}
	return nil
}

func TestGracefulShutdownClosesConnections(t *testing.T) {
	m := startMain(t, configDir(t))
	c := dial(t, m.Addr(), nil)
	start := time.Now()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("shutdown took %s", d)
	}
	c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := c.ws.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Errorf("read after shutdown: %v; want a going-away close frame", err)
	}
	resp, err := http.Get("http://" + m.Addr() + "/healthz")
	if err == nil {
		resp.Body.Close()
		t.Errorf("server still answering after Close")
	}
}

func TestHealthz(t *testing.T) {
	m := startMain(t, configDir(t))
	resp, err := http.Get("http://" + m.Addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz = %d", resp.StatusCode)
	}
}
