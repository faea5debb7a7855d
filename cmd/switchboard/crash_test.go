package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchboard-chat/switchboard/store/sqlite"
)

// crashBots is the configuration of the crash test: two bots whose
// replies repeat the message, so every reply names the message it answers
// and two stored replies to one message would show. Matty's script brain
// answers at once; Finn's program takes a while, so its session's turns
// queue up behind a burst and many replies are still to be made when the
// kill comes. (The new message is the last line of an exec brain's
// prompt.) The widget's limits across connections are off: the clients
// are many anonymous visitors of one address.
const crashBots = `
gateway:
  listen: %s
  database: crash.db
  web:
%sbots:
  - id: mattyatlas
    name: Matty Atlas
    brain:
      kind: script
      default: '{{.Bot.Name}} heard: {{.Text}}'
    platforms:
      web: {}
  - id: finnshipley
    name: Finn Shipley
    brain:
      kind: exec
      command: [sh, -c, 'sleep 0.02; printf "%%s\n" "Finn Shipley heard: $(tail -n 1)"']
    platforms:
      web: {}
`

// Crash test sizes: each even client sends Finn a burst of crashBurst
// messages (the widget allows bursts of 40), then one per crashSendGap;
// each odd client sends Matty one per crashSendGap from the start, each
// answered before the next. The gateway is killed once crashAcks messages
// are acknowledged, while Finn's replies to the bursts are still being
// made.
const (
	crashClients = 24
	crashBurst   = 30
	crashSendGap = 60 * time.Millisecond // under the widget's 20 frames/s
	crashAcks    = 200
)

// TestCrashSafety kills the real binary with SIGKILL while widget clients
// are sending, starts it again on the same database, and checks SPEC's
// durability promises from the clients' side: every acknowledged message
// is stored once, has exactly one stored reply, and every reply reaches
// its client — before the kill, or as a message frame after the client
// reconnects with its resume token.
func TestCrashSafety(t *testing.T) { crashSafety(t, "") }

// crashSafety runs the crash test on the SQLite file crash.db, or, when
// pgURL is set, on that PostgreSQL database (TestCrashSafetyPostgres).
func crashSafety(t *testing.T, pgURL string) {
	bin := buildGatewayBinary(t)
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	bots := fmt.Sprintf(crashBots, addr, unlimitedWeb)
	db, env := filepath.Join(dir, "crash.db"), []string(nil)
	if pgURL != "" {
		const name = "SB_CRASH_DATABASE_URL"
		bots = strings.Replace(bots, "  database: crash.db\n", "  database_env: "+name+"\n", 1)
		db, env = pgURL, []string{name + "=" + pgURL}
	}
	if err := os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(bots), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.yaml"), []byte("users: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	first := startGatewayProcess(t, bin, dir, addr, env...)
	clients := make([]*crashClient, crashClients)
	for i := range clients {
		clients[i] = newCrashClient(t, i, addr, db)
	}
	stop := make(chan struct{})
	var senders sync.WaitGroup
	for _, c := range clients {
		senders.Go(func() { c.sendUntil(stop) })
	}

	// Kill mid-stream: the clients are still sending.
	deadline := time.Now().Add(20 * time.Second)
	for totalAcks(clients) < crashAcks {
		if time.Now().After(deadline) {
			close(stop)
			t.Fatalf("%d acks after 20s\n%s", totalAcks(clients), first.log())
		}
		time.Sleep(time.Millisecond)
	}
	first.kill(t)
	close(stop)
	senders.Wait()
	pending := 0
	for _, c := range clients {
		c.endRead()
	}
	for _, c := range clients {
		c.drain()
		pending += c.unansweredAcks()
	}
	t.Logf("killed after %d acks; %d acked messages had no reply at the client yet", totalAcks(clients), pending)
	if pending == 0 {
		t.Errorf("every acked message had its reply when the kill came; want some still to be made (Finn's program is slow)")
	}

	second := startGatewayProcess(t, bin, dir, addr, env...)
	for _, c := range clients {
		c.reconnect()
	}
	// Replies not delivered before the kill come as message frames once
	// the client is back; wait for them (bounded), then check the store.
	deadline = time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && unanswered(clients) > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range clients {
		c.checkStored()
		c.closeConn()
	}
	if t.Failed() {
		t.Logf("gateway log after restart:\n%s", second.log())
	}
}

// crashClient is one anonymous widget visitor: it keeps its resume token,
// sends messages with unique client IDs, and records acks and replies.
type crashClient struct {
	t    *testing.T
	n    int
	addr string
	db   string // the gateway's database, for diagnostics

	token, platformID string
	// bot is whom the client talks to, name its name.
	bot, name string

	mu      sync.Mutex
	ws      *websocket.Conn
	texts   map[string]string // client_id → text, for every send
	acked   map[string]int64  // client_id → stored message ID
	replies map[string]int    // reply text → frames received
	errs    []string
	history chan []any
	// reader is the current connection's reader goroutine.
	reader sync.WaitGroup
}

func newCrashClient(t *testing.T, n int, addr, db string) *crashClient {
	c := &crashClient{t: t, n: n, addr: addr, db: db, texts: map[string]string{}, acked: map[string]int64{},
		replies: map[string]int{}, history: make(chan []any, 1), bot: "finnshipley", name: "Finn Shipley"}
	if n%2 == 1 {
		c.bot, c.name = "mattyatlas", "Matty Atlas"
	}
	hello := c.connect(nil)
	c.token, c.platformID = hello["token"].(string), hello["platform_id"].(string)
	if c.token == "" {
		t.Fatalf("client %d: hello without a resume token: %v", n, hello)
	}
	return c
}

// connect dials /ws, reads hello and starts the reader.
func (c *crashClient) connect(q url.Values) map[string]any {
	c.t.Helper()
	ws, resp, err := dialRaw(c.addr, q)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		c.t.Fatalf("client %d: dial: %v (HTTP %d)", c.n, err, status)
	}
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hello map[string]any
	if err := ws.ReadJSON(&hello); err != nil || hello["type"] != "hello" {
		c.t.Fatalf("client %d: hello: %v %v", c.n, err, hello)
	}
	ws.SetReadDeadline(time.Time{})
	c.mu.Lock()
	c.ws = ws
	c.mu.Unlock()
	c.reader.Go(func() { c.read(ws) })
	return hello
}

// reconnect resumes the visitor's identity on the restarted gateway.
func (c *crashClient) reconnect() {
	hello := c.connect(url.Values{"token": {c.token}})
	if hello["platform_id"] != c.platformID {
		c.t.Errorf("client %d resumed as %v, want %s", c.n, hello["platform_id"], c.platformID)
	}
}

// read records frames until the connection breaks.
func (c *crashClient) read(ws *websocket.Conn) {
	for {
		var f map[string]any
		if err := ws.ReadJSON(&f); err != nil {
			return
		}
		c.mu.Lock()
		switch f["type"] {
		case "ack":
			id, _ := f["id"].(float64)
			c.acked[fmt.Sprint(f["client_id"])] = int64(id)
		case "message":
			if from, _ := f["from"].(map[string]any); from["kind"] == "bot" {
				c.replies[fmt.Sprint(f["text"])]++
			}
		case "history":
			msgs, _ := f["messages"].([]any)
			c.history <- msgs
		case "error":
			// "unavailable" is a fair answer while the gateway is dying;
			// anything else is a bug in the test or the gateway.
			if f["code"] != "unavailable" {
				c.errs = append(c.errs, fmt.Sprint(f))
			}
		}
		c.mu.Unlock()
	}
}

// sendUntil sends crashBurst messages at once, then one every
// crashSendGap, until stop is closed or the connection breaks.
func (c *crashClient) sendUntil(stop <-chan struct{}) {
	tick := time.NewTicker(crashSendGap)
	defer tick.Stop()
	burst := crashBurst
	if c.n%2 == 1 {
		burst = 1
	}
	for k := 0; ; k++ {
		if k >= burst {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
		id := fmt.Sprintf("c%d-m%d", c.n, k)
		text := fmt.Sprintf("crash client %d message %d", c.n, k)
		c.mu.Lock()
		c.texts[id] = text
		ws := c.ws
		c.mu.Unlock()
		if err := ws.WriteJSON(map[string]any{"type": "send", "bot": c.bot, "text": text, "client_id": id}); err != nil {
			return // the gateway is gone
		}
	}
}

// endRead bounds the reading of the current connection (see drain).
func (c *crashClient) endRead() {
	c.mu.Lock()
	ws := c.ws
	c.mu.Unlock()
	ws.SetReadDeadline(time.Now().Add(5 * time.Second))
}

// drain waits for the reader to read what the killed gateway's socket had
// delivered, to the end of the stream (the kernel closed the dead
// process's sockets; endRead bounds the wait), then closes the
// connection. Closing first would throw away frames the gateway wrote,
// and counted delivered, before it died.
func (c *crashClient) drain() {
	c.reader.Wait()
	c.closeConn()
}

func (c *crashClient) closeConn() {
	c.mu.Lock()
	ws := c.ws
	c.mu.Unlock()
	ws.Close()
	c.reader.Wait()
}

// unansweredAcks counts acknowledged messages whose reply has not arrived.
func (c *crashClient) unansweredAcks() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for id := range c.acked {
		if c.replies[c.reply(c.texts[id])] == 0 {
			n++
		}
	}
	return n
}

// checkStored asks for the session's history and checks it against what
// the client saw.
func (c *crashClient) checkStored() {
	t := c.t
	c.mu.Lock()
	ws := c.ws
	c.mu.Unlock()
	if err := ws.WriteJSON(map[string]any{"type": "history", "bot": c.bot, "limit": 500}); err != nil {
		t.Fatalf("client %d: history: %v", c.n, err)
	}
	var msgs []any
	select {
	case msgs = <-c.history:
	case <-time.After(10 * time.Second):
		t.Fatalf("client %d: no history frame", c.n)
	}
	if len(msgs) >= 500 {
		t.Fatalf("client %d: history hit its limit; make the test smaller", c.n)
	}
	stored := map[string][]int64{} // text → stored message IDs, human and bot alike
	for _, m := range msgs {
		m := m.(map[string]any)
		id, _ := m["id"].(float64)
		stored[fmt.Sprint(m["text"])] = append(stored[fmt.Sprint(m["text"])], int64(id))
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.errs {
		t.Errorf("client %d: error frame %s", c.n, e)
	}
	for id, msgID := range c.acked {
		text := c.texts[id]
		if ids := stored[text]; len(ids) != 1 || ids[0] != msgID {
			t.Errorf("client %d: acked message %s (id %d) stored as %v, want exactly [%d]", c.n, id, msgID, ids, msgID)
		}
		if n := len(stored[c.reply(text)]); n != 1 {
			t.Errorf("client %d: acked message %s has %d stored replies, want 1", c.n, id, n)
		}
		if c.replies[c.reply(text)] == 0 {
			t.Errorf("client %d: the reply to acked message %s never reached the client (outbox: %s)", c.n, id, c.outboxState(c.reply(text)))
		}
	}
	// Messages stored without an ack (the kill came first) may be answered
	// or not, but never twice.
	for text, ids := range stored {
		if strings.HasPrefix(text, c.name+" heard: ") && len(ids) > 1 {
			t.Errorf("client %d: reply %q stored %d times", c.n, text, len(ids))
		}
	}
}

// outboxState reads, for a failure message, the stored delivery state of
// the reply with this text straight from the database (SQLite's file or
// PostgreSQL's): "sent" for a reply
// that never arrived means the gateway counted it delivered when it was
// not. Best effort: the schema is the store's business.
func (c *crashClient) outboxState(text string) string {
	const query = `SELECT o.status, o.attempts FROM outbox o JOIN messages m ON m.id = o.message_id
		WHERE m.text = $1 AND m.from_kind = 'bot'`
	var status string
	var attempts int
	var err error
	if strings.HasPrefix(c.db, "postgres://") {
		err = pgQueryRow(c.db, query, []any{text}, &status, &attempts)
	} else {
		var db *sql.DB
		if db, err = sql.Open("sqlite3", "file:"+c.db+"?mode=ro&_busy_timeout=5000"); err != nil {
			return err.Error()
		}
		defer db.Close()
		err = db.QueryRow(query, text).Scan(&status, &attempts)
	}
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s after %d failed attempts", status, attempts)
}

func (c *crashClient) reply(text string) string { return c.name + " heard: " + text }

func totalAcks(clients []*crashClient) int {
	n := 0
	for _, c := range clients {
		c.mu.Lock()
		n += len(c.acked)
		c.mu.Unlock()
	}
	return n
}

func unanswered(clients []*crashClient) int {
	n := 0
	for _, c := range clients {
		n += c.unansweredAcks()
	}
	return n
}

// buildGatewayBinary builds this command into a temp dir of t. It builds
// without -race even under `go test -race`: the tests that run the binary
// check its behaviour across processes, the in-process tests cover races,
// and the plain build, with the same tags, comes from the same cache as
// `make build`.
func buildGatewayBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building the gateway needs the go command: %v", err)
	}
	path := filepath.Join(t.TempDir(), "switchboard")
	out, err := exec.Command(goTool, "build", "-tags", sqlite.BuildTags, "-o", path, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return path
}

// freeLoopbackAddr returns a loopback address that was free a moment ago:
// a child process cannot tell us which port it bound, so we choose.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// gatewayProcess is a running `switchboard serve`.
type gatewayProcess struct {
	cmd    *exec.Cmd
	out    *processOutput
	exited chan struct{}
}

// startGatewayProcess runs the binary on dir, with env (NAME=value) added
// to its environment, and waits for /healthz. It is killed at cleanup if
// still running.
func startGatewayProcess(t *testing.T, bin, dir, addr string, env ...string) *gatewayProcess {
	t.Helper()
	p := &gatewayProcess{cmd: exec.Command(bin, "serve", "--config", dir), out: &processOutput{}, exited: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), "SWITCHBOARD_ADMIN_TOKEN=crash-test"), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(12 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("gateway exited at start:\n%s", p.log())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not ready after 15s:\n%s", p.log())
		}
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *gatewayProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

func (p *gatewayProcess) log() string { return p.out.String() }

// processOutput collects the child's two output streams for the test
// to read.
type processOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *processOutput) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *processOutput) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
