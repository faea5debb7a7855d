package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/internal/pgtest"
	"github.com/switchboard-chat/switchboard/platforms/discord/discordtest"
	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
)

// clusterBots is the configuration of TestTwoInstances: one bot on the
// web and on Telegram; LISTEN is each process's address.
const clusterBots = `
gateway:
  listen: LISTEN
  database_env: SB_CLUSTER_DB
  web:
    max_connections_per_ip: 0
bots:
  - id: mattyatlas
    name: Matty Atlas
    brain: {kind: script, default: 'Matty heard: {{.Text}}'}
    platforms:
      web: {}
      telegram: {token_env: SB_CLUSTER_TG, api_url: TGURL}
`

// TestTwoInstances runs two real gateways on one PostgreSQL database
// (SPEC §11). Widget connections on both see a private chat's replies
// whichever process answered, and a room's traffic; the Telegram bot is
// polled by exactly one of them; when that one is killed with SIGKILL
// the other takes polling over within 10 s, and every update is answered
// exactly once in the store.
func TestTwoInstances(t *testing.T) {
	tg := telegramtest.New(t)
	tg.AddBot("cluster-token", 9300, "matty_bot")
	db := pgtest.NewDatabase(t)
	bin := buildGatewayBinary(t)
	env := []string{"SB_CLUSTER_DB=" + db, "SB_CLUSTER_TG=cluster-token"}

	start := func() (*gatewayProcess, string) {
		addr := freeLoopbackAddr(t)
		dir := t.TempDir()
		bots := strings.NewReplacer("LISTEN", addr, "TGURL", tg.URL).Replace(clusterBots)
		os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(bots), 0o644)
		os.WriteFile(filepath.Join(dir, "users.yaml"), []byte("users: []\n"), 0o644)
		return startGatewayProcess(t, bin, dir, addr, env...), addr
	}
	a, addrA := start()
	b, addrB := start()

	// Both listed; one leads the Telegram bot.
	var leader string
	if !waitUntil(10*time.Second, func() bool {
		leader = leaderAt(t, addrA, "crash-test", "telegram")
		return leader != ""
	}) {
		t.Fatalf("no instance leads the Telegram bot:\n%v\nA:\n%s\nB:\n%s", instancesAt(t, addrA, "crash-test"), a.log(), b.log())
	}
	if got := len(instancesAt(t, addrB, "crash-test")); got != 2 {
		t.Fatalf("instances listed = %d, want 2: %v", got, instancesAt(t, addrB, "crash-test"))
	}

	// One person, a connection on each process: a reply reaches both,
	// whichever process took the message.
	onA := dial(t, addrA, nil)
	token := onA.hello["token"].(string)
	onB := dial(t, addrB, url.Values{"token": {token}})
	if onB.hello["platform_id"] != onA.hello["platform_id"] {
		t.Fatalf("the token names %v on B, %v on A", onB.hello["platform_id"], onA.hello["platform_id"])
	}
	for i, from := range []*client{onA, onB, onA, onB} {
		text := fmt.Sprint("private ", i)
		from.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": text, "client_id": fmt.Sprint("p", i)})
		from.expect("ack")
		for _, c := range []*client{onA, onB} {
			if got := expectMessage(c)["text"]; got != "Matty heard: "+text {
				t.Fatalf("message %d: got %q", i, got)
			}
		}
	}

	// A room with a member on each process.
	ann := dial(t, addrA, nil)
	bob := dial(t, addrB, nil)
	ann.send(map[string]any{"type": "join", "chat": "den", "bots": []string{"mattyatlas"}, "open": true, "client_id": "j"})
	ann.expect("joined")
	bob.send(map[string]any{"type": "join", "chat": "den", "client_id": "j"})
	bob.expect("joined")
	bob.send(map[string]any{"type": "send", "chat": "den", "text": "@matty from B", "client_id": "r1"})
	bob.expect("ack")
	if got := expectMessage(ann); got["text"] != "@matty from B" {
		t.Fatalf("ann saw %v, want bob's message", got)
	}
	for _, c := range []*client{ann, bob} {
		if got := expectMessage(c)["text"]; got != "Matty heard: from B" {
			t.Fatalf("room reply: got %q", got)
		}
	}

	// Telegram: updates go to the leader only.
	const users = 10
	var texts []string
	push := func(round int) {
		for i := range users {
			u := telegramtest.User{ID: int64(2000 + i), FirstName: fmt.Sprint("u", i)}
			text := fmt.Sprintf("u%d r%d", i, round)
			texts = append(texts, text)
			tg.Push("cluster-token", telegramtest.Private(u, text))
		}
	}
	push(0)
	if !tg.WaitFor(20*time.Second, func() bool { return len(tg.Sent("cluster-token")) >= users }) {
		t.Fatalf("Telegram updates not answered:\nA:\n%s\nB:\n%s", a.log(), b.log())
	}

	// Kill the leader mid-stream: the other takes polling over.
	push(1)
	dead, alive, aliveAddr := a, b, addrB
	if leader == addrB {
		dead, alive, aliveAddr = b, a, addrA
	}
	killed := time.Now()
	dead.kill(t)
	if !waitUntil(10*time.Second, func() bool {
		return leaderAt(t, aliveAddr, "crash-test", "telegram") == aliveAddr
	}) {
		t.Fatalf("the surviving instance did not take Telegram over within 10 s: %v\n%s", instancesAt(t, aliveAddr, "crash-test"), alive.log())
	}
	t.Logf("Telegram polling taken over %v after the kill", time.Since(killed).Round(time.Millisecond))
	if got := instancesAt(t, aliveAddr, "crash-test"); len(got) != 1 {
		t.Errorf("instances after the kill = %v, want the survivor only", got)
	}
	push(2)
	answered := func() map[string]int { return answersOf(tg, "cluster-token") }
	if !tg.WaitFor(30*time.Second, func() bool { return len(answered()) == len(texts) }) {
		t.Fatalf("answered %d of %d updates:\n%s", len(answered()), len(texts), alive.log())
	}
	if n := tg.Conflicts("cluster-token"); n != 0 {
		t.Errorf("%d getUpdates calls were ended by another poller: two instances polled at once", n)
	}

	// Exactly one stored reply per update.
	replies := map[string]int{}
	_, body := apiGetAt(t, aliveAddr, "/api/v1/sessions?limit=500", "crash-test")
	for _, s := range items(body) {
		_, msgs := apiGetAt(t, aliveAddr, "/api/v1/sessions/"+s["id"].(string)+"/messages?limit=500", "crash-test")
		for _, m := range items(msgs) {
			if from := m["from"].(map[string]any); from["kind"] == "bot" {
				replies[strings.TrimPrefix(m["text"].(string), "Matty heard: ")]++
			}
		}
	}
	for _, text := range texts {
		if replies[text] != 1 {
			t.Errorf("update %q has %d stored replies, want 1", text, replies[text])
		}
	}
}

// leaderAt asks addr's instances list (with the admin token) which
// instance leads a bot on platform, and returns its address ("" when
// none does).
func leaderAt(t *testing.T, addr, token, platform string) string {
	t.Helper()
	for _, in := range instancesAt(t, addr, token) {
		for _, l := range in["leads"].([]any) {
			if l.(map[string]any)["platform"] == platform {
				return in["address"].(string)
			}
		}
	}
	return ""
}

// instancesAt lists GET /api/v1/instances at addr.
func instancesAt(t *testing.T, addr, token string) []map[string]any {
	t.Helper()
	status, body := apiGetAt(t, addr, "/api/v1/instances", token)
	if status != 200 {
		t.Fatalf("GET /api/v1/instances: %d %v", status, body)
	}
	return items(body)
}

// expectMessage returns the next message frame, skipping the frames
// that may come between (typing, delegation).
func expectMessage(c *client) map[string]any {
	c.t.Helper()
	for {
		f := c.read()
		if f["type"] == "message" {
			return f
		}
	}
}

// answersOf counts Matty's answers sent to Telegram with token, by the
// text they answer.
func answersOf(tg *telegramtest.Server, token string) map[string]int {
	n := map[string]int{}
	for _, m := range tg.Sent(token) {
		n[strings.TrimPrefix(m.Text, "Matty heard: ")]++
	}
	return n
}

// waitUntil polls cond every 50 ms until it holds or d passes.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTurnOrderAcrossInstances: one person writes to one bot through two
// gateways sharing a database, from both at once (SPEC §11: a session
// runs one turn at a time across all instances, in order). Every message
// is answered once, and each answer saw exactly the messages and answers
// stored before its message: the turns ran one after another in the
// order their messages were stored, whichever process ran them.
func TestTurnOrderAcrossInstances(t *testing.T) {
	t.Setenv("SB_ORDER_DB", pgtest.NewDatabase(t))
	dir := t.TempDir()
	const web = "    secret_env: SB_TEST_WEB_SECRET\n"
	bots := strings.NewReplacer("  database: test.db\n", "  database_env: SB_ORDER_DB\n", web, web+unlimitedWeb).Replace(testBots)
	os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(bots), 0o644)
	os.WriteFile(filepath.Join(dir, "users.yaml"), []byte(testUsers), 0o644)
	m1, m2 := startMain(t, dir), startMain(t, dir)

	c1 := dial(t, m1.Addr(), nil)
	c2 := dial(t, m2.Addr(), url.Values{"token": {c1.hello["token"].(string)}})
	const each = 15
	done := make(chan error, 2)
	for n, c := range []*client{c1, c2} {
		go func() {
			for i := range each {
				text := fmt.Sprintf("c%d-%d", n, i)
				if err := c.ws.WriteJSON(map[string]any{"type": "send", "bot": "finnshipley", "text": text, "client_id": text}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// Each connection sees every answer (2 × each), whoever runs it.
	for _, c := range []*client{c1, c2} {
		for range 2 * each {
			expectMessage(c)
		}
	}

	var session string
	_, body := apiGetAt(t, m1.Addr(), "/api/v1/sessions", m1.AdminToken)
	for _, s := range items(body) {
		if s["bot"] == "finnshipley" {
			session = s["id"].(string)
		}
	}
	_, body = apiGetAt(t, m1.Addr(), "/api/v1/sessions/"+session+"/messages?limit=500", m1.AdminToken)
	msgs := items(body)
	var asked []string
	answered := map[string]int{}
	for _, m := range msgs {
		text := m["text"].(string)
		if m["from"].(map[string]any)["kind"] == "human" {
			asked = append(asked, text)
			continue
		}
		var what string
		var before int
		if _, err := fmt.Sscanf(text, "Finn got %s (%d before)", &what, &before); err != nil {
			t.Fatalf("answer %q: %v", text, err)
		}
		answered[what]++
		// The k-th answer (k from 0) answers the k-th message and follows
		// k messages and k answers, of which it sees the newest 20 (a
		// script brain's history window).
		k := len(answered) - 1
		if k < len(asked) && what != asked[k] {
			t.Errorf("answer %d is to %q, want %q: turns ran out of order", k, what, asked[k])
		}
		if before != min(2*k, 20) {
			t.Errorf("answer %d (%q) saw %d messages before it, want %d: turns overlapped", k, text, before, min(2*k, 20))
		}
	}
	if len(asked) != 2*each || len(answered) != 2*each {
		t.Fatalf("%d messages, %d answered, want %d of each", len(asked), len(answered), 2*each)
	}
	for what, n := range answered {
		if n != 1 {
			t.Errorf("%q answered %d times", what, n)
		}
	}
}

// TestTelegramWebhookAnyInstance: with two gateways behind one webhook
// URL, Telegram's calls may reach either (SPEC §11). Each update is
// answered once whichever took it, a repeated call included.
func TestTelegramWebhookAnyInstance(t *testing.T) {
	tg := telegramtest.New(t)
	tg.AddBot("hook-token", 9400, "matty_bot")
	t.Setenv("SB_HOOK_DB", pgtest.NewDatabase(t))
	t.Setenv("SB_HOOK_TG", "hook-token")
	t.Setenv("SB_HOOK_SECRET", "hook-secret")
	dir := t.TempDir()
	bots := strings.ReplaceAll(`
gateway:
  listen: 127.0.0.1:0
  database_env: SB_HOOK_DB
bots:
  - id: mattyatlas
    name: Matty Atlas
    brain: {kind: script, default: 'Matty heard: {{.Text}}'}
    platforms:
      telegram:
        token_env: SB_HOOK_TG
        api_url: TGURL
        mode: webhook
        webhook: {url: 'https://bots.example.com/telegram/mattyatlas', secret_env: SB_HOOK_SECRET}
`, "TGURL", tg.URL)
	os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(bots), 0o644)
	os.WriteFile(filepath.Join(dir, "users.yaml"), []byte("users: []\n"), 0o644)
	m1, m2 := startMain(t, dir), startMain(t, dir)

	var texts []string
	for i := range 10 {
		u := telegramtest.User{ID: int64(3000 + i), FirstName: fmt.Sprint("u", i)}
		text := fmt.Sprint("hook ", i)
		texts = append(texts, text)
		upd := tg.Push("hook-token", telegramtest.Private(u, text))
		// Even updates go to one gateway or the other; odd ones to both
		// (Telegram retrying on the other).
		targets := []*Main{[]*Main{m1, m2}[i/2%2]}
		if i%2 == 1 {
			targets = []*Main{m1, m2}
		}
		for _, m := range targets {
			var status int
			if !waitUntil(10*time.Second, func() bool {
				status, _ = tg.PostWebhook("http://"+m.Addr()+"/telegram/mattyatlas", "hook-secret", upd)
				return status == 200
			}) {
				t.Fatalf("webhook call %d to %s: %d", i, m.Addr(), status)
			}
		}
	}
	answered := func() map[string]int { return answersOf(tg, "hook-token") }
	if !tg.WaitFor(20*time.Second, func() bool { return len(answered()) == len(texts) }) {
		t.Fatalf("answered %v of %v", answered(), texts)
	}
	time.Sleep(300 * time.Millisecond) // a second answer would be out by now
	for text, n := range answered() {
		if n != 1 {
			t.Errorf("%q answered %d times", text, n)
		}
	}
}

// TestPersonRateAcrossInstances: a person's message rate holds across
// gateways sharing a database (SPEC §11): messages sent through one count
// on the other.
func TestPersonRateAcrossInstances(t *testing.T) {
	t.Setenv("SB_RATE_DB", pgtest.NewDatabase(t))
	dir := t.TempDir()
	const web = "    secret_env: SB_TEST_WEB_SECRET\n"
	bots := strings.NewReplacer("  database: test.db\n", "  database_env: SB_RATE_DB\n",
		web, web+"    max_messages_per_second_per_person: 0.5\n    max_messages_per_second_per_ip: 0\n").Replace(testBots)
	os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(bots), 0o644)
	os.WriteFile(filepath.Join(dir, "users.yaml"), []byte(testUsers), 0o644)
	m1, m2 := startMain(t, dir), startMain(t, dir)

	c1 := dial(t, m1.Addr(), nil)
	c2 := dial(t, m2.Addr(), url.Values{"token": {c1.hello["token"].(string)}})
	// Half a message a second: a burst of one, spent on the first
	// gateway (its reply reaches both connections).
	c1.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "one", "client_id": "a1"})
	c1.expect("ack")
	expectMessage(c1)
	expectMessage(c2)
	c2.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "two", "client_id": "b1"})
	c2.refusedWith("rate_limited", "b1")
}

// TestDiscordLeadAcrossInstances: of two gateways sharing a database,
// one holds the Discord bot's gateway connection; when it shuts down the
// other connects, and messages go on being answered once.
func TestDiscordLeadAcrossInstances(t *testing.T) {
	dc := discordtest.New(t)
	dc.AddBot("lead-token", "8100", "finn")
	t.Setenv("SB_LEAD_DB", pgtest.NewDatabase(t))
	t.Setenv("SB_LEAD_DC", "lead-token")
	dir := t.TempDir()
	bots := fmt.Sprintf(`
gateway:
  listen: 127.0.0.1:0
  database_env: SB_LEAD_DB
bots:
  - id: finnshipley
    name: Finn Shipley
    brain: {kind: script, default: 'Finn heard: {{.Text}}'}
    platforms:
      discord: {token_env: SB_LEAD_DC, api_url: %s, gateway_url: %s}
`, dc.APIURL(), dc.GatewayURL())
	os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(bots), 0o644)
	os.WriteFile(filepath.Join(dir, "users.yaml"), []byte("users: []\n"), 0o644)
	m1 := startMain(t, dir)
	m2 := startMain(t, dir)
	ask := func(text string) {
		t.Helper()
		dc.Dispatch("lead-token", dc.DM("lead-token", discordtest.User{ID: "333", Username: "bo"}, text))
		select {
		case got := <-dc.Messages():
			if got.Content != "Finn heard: "+text {
				t.Fatalf("answer = %q, want to %q", got.Content, text)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q not answered", text)
		}
	}
	ask("first")
	if n := dc.Identifies("lead-token"); n != 1 {
		t.Fatalf("%d gateway sessions identified, want 1 (one instance leads)", n)
	}
	// The leader goes; the other identifies within a few seconds.
	leader := m1
	if leaderAt(t, m2.Addr(), m2.AdminToken, "discord") == m2.Addr() {
		leader = m2
	}
	leader.Close()
	if !waitUntil(10*time.Second, func() bool { return dc.Identifies("lead-token") == 2 }) {
		t.Fatalf("no take-over of the Discord connection: %d identifies", dc.Identifies("lead-token"))
	}
	ask("second")
	select {
	case extra := <-dc.Messages():
		t.Fatalf("an extra message %+v", extra)
	case <-time.After(300 * time.Millisecond):
	}
}
