package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/internal/pgtest"
)

// TestPostgresGateway runs the real binary on PostgreSQL (SPEC §11:
// every behaviour the same on both stores): a widget visitor talks to a
// bot, the gateway is killed with SIGKILL and started again on the same
// database, and the visitor, resuming with their token, finds their
// history and goes on in the same session. The database's URL carries a
// password, which no log line shows.
func TestPostgresGateway(t *testing.T) {
	const env = "SB_TEST_DATABASE_URL"
	db, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	// The throwaway cluster trusts loopback: the password is carried,
	// never asked for.
	const password = "pg-Pa55word"
	db.User = url.UserPassword(db.User.Username(), password)

	bin := buildGatewayBinary(t)
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	bots := strings.Replace(testBots, "  listen: 127.0.0.1:0\n  database: test.db\n",
		"  listen: "+addr+"\n  database_env: "+env+"\n", 1)
	for name, body := range map[string]string{"bots.yaml": bots, "users.yaml": testUsers} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	first := startGatewayProcess(t, bin, dir, addr, env+"="+db.String())
	c := dial(t, addr, nil)
	token := c.hello["token"].(string)
	for i := range 3 {
		c.send(map[string]any{"type": "send", "bot": "finnshipley", "text": fmt.Sprint("task ", i), "client_id": fmt.Sprint(i)})
		c.expect("ack")
		if got := c.expect("message")["text"]; got != fmt.Sprintf("Finn got task %d (%d before)", i, 2*i) {
			t.Errorf("reply %d = %q", i, got)
		}
	}
	// Dedupe: the same client ID again is acknowledged, not answered again.
	c.send(map[string]any{"type": "send", "bot": "finnshipley", "text": "task 2", "client_id": "2"})
	c.expect("ack")
	first.kill(t)
	if log := first.log(); !strings.Contains(log, "postgres 127.0.0.1:") || strings.Contains(log, password) {
		t.Errorf("the log names the database as %q, without the password; it says:\n%s", "postgres 127.0.0.1:…", log)
	}

	second := startGatewayProcess(t, bin, dir, addr, env+"="+db.String())
	c2 := dial(t, addr, url.Values{"token": {token}})
	if c2.hello["platform_id"] != c.hello["platform_id"] {
		t.Fatalf("resumed as %v, want %v", c2.hello["platform_id"], c.hello["platform_id"])
	}
	c2.send(map[string]any{"type": "history", "bot": "finnshipley"})
	// A reply whose delivery the kill came before recording comes again
	// (at least once across a crash; the widget drops it by its ID).
	h := c2.read()
	for h["type"] == "message" || h["type"] == "typing" {
		h = c2.read()
	}
	if h["type"] != "history" {
		t.Fatalf("got frame %v, want history", h)
	}
	var texts []string
	for _, m := range h["messages"].([]any) {
		texts = append(texts, m.(map[string]any)["text"].(string))
	}
	want := "task 0|Finn got task 0 (0 before)|task 1|Finn got task 1 (2 before)|task 2|Finn got task 2 (4 before)"
	if got := strings.Join(texts, "|"); got != want {
		t.Errorf("history after the restart = %q\nwant %q", got, want)
	}
	c2.send(map[string]any{"type": "send", "bot": "finnshipley", "text": "task 3", "client_id": "3"})
	c2.expect("ack")
	if got := c2.expect("message")["text"]; got != "Finn got task 3 (6 before)" {
		t.Errorf("reply after the restart = %q", got)
	}
	if strings.Contains(second.log(), password) {
		t.Errorf("the restarted gateway's log shows the password:\n%s", second.log())
	}
}

// TestCrashSafetyPostgres is TestCrashSafety on PostgreSQL: a kill -9
// mid-stream loses no acknowledged message, stores none twice, answers
// each once and delivers every answer (SPEC §11: at-least-once delivery
// across a crash on both stores).
func TestCrashSafetyPostgres(t *testing.T) { crashSafety(t, pgtest.NewDatabase(t)) }

// pgQueryRow reads one row of query from the PostgreSQL database at url,
// for a test's diagnostics.
func pgQueryRow(url, query string, args []any, dest ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, query, args...).Scan(dest...)
}

// testStoreEnv, set to "postgres", runs the in-process end-to-end tests
// on PostgreSQL: each configuration that writeConfigDir writes gets a
// new database of its own instead of its SQLite file.
const testStoreEnv = "SWITCHBOARD_TEST_STORE"

// onTestStore returns bots as it is, or, under
// SWITCHBOARD_TEST_STORE=postgres, with its gateway.database replaced by
// gateway.database_env naming a variable (set for the rest of the test
// binary's run, under a name of its own) that holds a new database's URL.
func onTestStore(t *testing.T, bots string) string {
	t.Helper()
	switch os.Getenv(testStoreEnv) {
	case "", "sqlite":
		return bots
	case "postgres":
	default:
		t.Fatalf("$%s is %q: sqlite or postgres", testStoreEnv, os.Getenv(testStoreEnv))
	}
	i := strings.Index(bots, "  database: ")
	if i < 0 {
		return bots
	}
	end := i + strings.IndexByte(bots[i:], '\n')
	name := fmt.Sprintf("SB_TEST_DATABASE_%d", testDatabases.Add(1))
	os.Setenv(name, pgtest.NewDatabase(t))
	return bots[:i] + "  database_env: " + name + bots[end:]
}

// testDatabases numbers the variables onTestStore sets.
var testDatabases atomic.Int64

// TestDBCopyCommand: `switchboard db copy` copies a gateway's SQLite
// file into PostgreSQL (the URL from a variable, with its password kept
// out of every message), prints the rows it copied, refuses a second copy
// into the same database, and the gateway then runs on the copy with its
// visitors' identities and history.
func TestDBCopyCommand(t *testing.T) {
	t.Setenv(testStoreEnv, "") // the source is a SQLite file
	dir := configDir(t)
	m := startMain(t, dir)
	c := dial(t, m.Addr(), nil)
	token := c.hello["token"].(string)
	c.send(map[string]any{"type": "send", "bot": "finnshipley", "text": "task 0", "client_id": "0"})
	c.expect("ack")
	c.expect("message")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	const password = "copy-Pa55"
	db.User = url.UserPassword(db.User.Username(), password)
	t.Setenv("SB_COPY_URL", db.String())
	src := filepath.Join(dir, "test.db")
	code, out, errOut := runCLI("db", "copy", "--from", src, "--to", "$SB_COPY_URL")
	if code != 0 || !strings.Contains(out, "messages") || !strings.Contains(out, "copied ") || strings.Contains(out+errOut, password) {
		t.Fatalf("db copy: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI("db", "copy", "--to", "$SB_COPY_URL", "--from", src)
	if code != 1 || !strings.Contains(errOut, "refused") || !strings.Contains(errOut, "already holds data") ||
		strings.Contains(out+errOut, password) {
		t.Errorf("second db copy: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, args := range [][]string{{"db"}, {"db", "copy", "--from", src}, {"db", "copy", "--from", "$SB_NO_SUCH_VARIABLE", "--to", "x.db"}} {
		if code, _, errOut := runCLI(args...); code != 2 || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q; want a usage error", args, code, errOut)
		}
	}

	// The gateway on the copy: the visitor is who they were.
	bots := strings.Replace(testBots, "  database: test.db\n", "  database_env: SB_COPY_URL\n", 1)
	if err := os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(bots), 0o644); err != nil {
		t.Fatal(err)
	}
	m2 := startMain(t, dir)
	c2 := dial(t, m2.Addr(), url.Values{"token": {token}})
	if c2.hello["platform_id"] != c.hello["platform_id"] {
		t.Fatalf("resumed on the copy as %v, want %v", c2.hello["platform_id"], c.hello["platform_id"])
	}
	c2.send(map[string]any{"type": "send", "bot": "finnshipley", "text": "task 1", "client_id": "1"})
	c2.expect("ack")
	if got := c2.expect("message")["text"]; got != "Finn got task 1 (2 before)" {
		t.Errorf("reply on the copy = %q", got)
	}
}

// lostBots has Finn answer after a second, so that a turn is running
// when the database goes away.
const lostBots = `
gateway:
  listen: 127.0.0.1:0
  database_env: %s
bots:
  - id: mattyatlas
    name: Matty Atlas
    brain:
      kind: script
      default: 'Matty heard: {{.Text}}'
    platforms:
      web: {}
  - id: finnshipley
    name: Finn Shipley
    brain:
      kind: exec
      command: [sh, -c, 'sleep 1; printf "%%s\n" "Finn heard: $(tail -n 1)"']
    platforms:
      web: {}
`

// TestPostgresLostAndBack (SPEC §11): while the database is unreachable
// the widget's sends are answered unavailable, a turn acknowledged
// before is not lost, and once the database is back the gateway answers
// it and takes new messages, without a restart.
func TestPostgresLostAndBack(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	const env = "SB_TEST_LOST_URL"
	t.Setenv(env, dbURL)
	m := startMain(t, writeConfigDir(t, fmt.Sprintf(lostBots, env)))
	c := dial(t, m.Addr(), nil)

	// Finn's turn runs while the database goes.
	c.send(map[string]any{"type": "send", "bot": "finnshipley", "text": "slow one", "client_id": "1"})
	c.expect("ack")
	admin, err := pgx.Connect(ctx, pgtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	u, _ := url.Parse(dbURL)
	name := pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()
	cut := func(allow bool) {
		t.Helper()
		if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %v", name, allow)); err != nil {
			t.Fatal(err)
		}
		if !allow {
			if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE datname = $1 AND pid <> pg_backend_pid()`, strings.TrimPrefix(u.Path, "/")); err != nil {
				t.Fatal(err)
			}
		}
	}
	cut(false)
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "while it is gone", "client_id": "2"})
	if f := c.expect("error"); f["code"] != "unavailable" || f["client_id"] != "2" {
		t.Errorf("a send while the database is gone = %v, want unavailable", f)
	}
	time.Sleep(1500 * time.Millisecond) // Finn's answer is ready, and cannot be stored
	cut(true)

	// Back: Finn's answer arrives, and new messages are taken.
	if f := c.expect("message"); f["text"] != "Finn heard: slow one" {
		t.Errorf("the turn acknowledged before = %v", f)
	}
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "back", "client_id": "3"})
	c.expect("ack")
	if f := c.expect("message"); f["text"] != "Matty heard: back" {
		t.Errorf("a message once the database is back = %v", f)
	}
}
