//go:build unix

package main

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/platforms/web"
)

// retentionBots keeps anonymous visitors' data two seconds after their
// last message: the job then sweeps every two seconds.
const retentionBots = `
gateway:
  listen: %s
  database: retention.db
  web:
    secret_env: SB_RETENTION_SECRET
  retention:
    anonymous: 2s
bots:
  - id: mattyatlas
    name: Matty Atlas
    aliases: [matty]
    brain:
      kind: script
      default: '{{.Bot.Name}} heard: {{.Text}}'
    platforms:
      web: {}
`

const retentionUsers = `
users:
  - id: user-ann
    name: Ann
    identities: [web-ann]
`

// TestRetentionDeletesIdleVisitors runs the real binary with
// gateway.retention.anonymous at two seconds: an anonymous visitor who
// chatted in private and in a room, then left, loses everything once the
// job has run, and can come back afresh; Ann, a listed user who was just
// as quiet, loses nothing. The binary runs with umask 000, and its
// database files are still 0600.
func TestRetentionDeletesIdleVisitors(t *testing.T) {
	bin := buildGatewayBinary(t)
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	writeConfig(t, dir, fmt.Sprintf(retentionBots, addr), retentionUsers)
	t.Setenv("SB_RETENTION_SECRET", "retention-secret")
	var gw *gatewayProcess
	func() {
		// The child inherits the umask; nothing else runs meanwhile.
		old := syscall.Umask(0)
		defer syscall.Umask(old)
		gw = startGatewayProcess(t, bin, dir, addr)
	}()
	db := filepath.Join(dir, "retention.db")

	// The visitor talks in private and in a room, then leaves.
	v := dial(t, addr, nil)
	visitor, token := v.hello["platform_id"].(string), v.hello["token"].(string)
	v.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "hello", "client_id": "v1"})
	v.expect("ack")
	v.expect("message")
	v.send(map[string]any{"type": "join", "chat": "lobby", "bots": []string{"mattyatlas"}, "open": true})
	v.expect("joined")
	v.send(map[string]any{"type": "send", "chat": "lobby", "text": "@matty hi room", "client_id": "v2"})
	v.expect("ack")
	v.expect("message")
	v.ws.Close()

	// Ann does the same, signed in, and stays quiet as long.
	ann := dial(t, addr, url.Values{"user": {"ann"}, "sig": {web.Sign([]byte("retention-secret"), "ann")}})
	ann.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "hello from ann", "client_id": "a1"})
	ann.expect("ack")
	ann.expect("message")
	ann.send(map[string]any{"type": "join", "chat": "lobby"})
	ann.expect("joined")
	ann.send(map[string]any{"type": "send", "chat": "lobby", "text": "@matty ann in the room", "client_id": "a2"})
	ann.expect("ack")
	for { // her own message comes back first, then the reply
		if f := ann.expect("message"); f["bot"] == "mattyatlas" && f["from"].(map[string]any)["kind"] == "bot" {
			break
		}
	}
	annRows := countRows(t, db, "web-ann", "user-ann")

	// The job deletes the visitor within a few sweeps.
	deadline := time.Now().Add(20 * time.Second)
	for countRows(t, db, visitor, visitor) != (rowCounts{}) {
		if time.Now().After(deadline) {
			t.Fatalf("the visitor's rows are still there after 20s: %+v\n%s", countRows(t, db, visitor, visitor), gw.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(gw.log(), "retention: deleted") || !strings.Contains(gw.log(), "deleted.visitors=1") {
		t.Errorf("no log line says what the job deleted:\n%s", gw.log())
	}
	if got := countRows(t, db, "web-ann", "user-ann"); got != annRows {
		t.Errorf("Ann's rows went from %+v to %+v", annRows, got)
	}
	if annRows.messages != 4 || annRows.sessions != 1 || annRows.chats != 1 || annRows.rooms != 1 || annRows.spoke != 1 {
		t.Errorf("Ann's rows = %+v; want her 2 messages and 2 replies, her session, her private chat, her room", annRows)
	}
	status, body := apiGetAt(t, addr, "/api/v1/sessions?user=user-ann", "crash-test")
	if status != 200 || len(items(body)) != 1 {
		t.Errorf("Ann's sessions: %d %v", status, body)
	}

	// The visitor comes back with their token: the same identity, with
	// nothing kept, and talking works as for a new visitor.
	v = dial(t, addr, url.Values{"token": {token}})
	if v.hello["platform_id"] != visitor {
		t.Fatalf("came back as %v, want %s", v.hello["platform_id"], visitor)
	}
	v.send(map[string]any{"type": "history", "bot": "mattyatlas"})
	if msgs := v.expect("history")["messages"].([]any); len(msgs) != 0 {
		t.Errorf("the returning visitor's history = %v, want nothing", msgs)
	}
	v.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "hello again", "client_id": "v1"})
	v.expect("ack")
	if f := v.expect("message"); f["text"] != "Matty Atlas heard: hello again" {
		t.Errorf("reply = %v", f)
	}
	v.send(map[string]any{"type": "join", "chat": "lobby"})
	v.expect("joined")

	for _, name := range []string{"retention.db", "retention.db-wal", "retention.db-shm"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %#o under umask 000, want 0600", name, fi.Mode().Perm())
		}
	}
}

// writeConfig writes bots.yaml and users.yaml into dir.
func writeConfig(t *testing.T, dir, bots, users string) {
	t.Helper()
	for name, body := range map[string]string{"bots.yaml": bots, "users.yaml": users} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// rowCounts is what the database holds of one person.
type rowCounts struct {
	messages, sessions, chats, rooms, spoke, turns, outbox int
}

// countRows reads, straight from the database, what it holds of the
// person with platform ID pid and user ID user: their messages and the
// replies to them, their sessions, their private chats, the rooms they
// are members of and those they spoke in, their turns and outbox entries. The schema is the store's
// business; this is the test's independent look at it.
func countRows(t *testing.T, path, pid, user string) rowCounts {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var c rowCounts
	for _, q := range []struct {
		n    *int
		sql  string
		args []any
	}{
		{&c.messages, `SELECT COUNT(*) FROM messages WHERE user_id = ?`, []any{user}},
		{&c.sessions, `SELECT COUNT(*) FROM sessions WHERE scope = 'user' AND scope_id = ?`, []any{user}},
		{&c.chats, `SELECT COUNT(*) FROM conversations WHERE chat_id LIKE ? || ':%'`, []any{pid}},
		{&c.rooms, `SELECT COUNT(*) FROM room_members WHERE member_id = ?`, []any{user}},
		{&c.spoke, `SELECT COUNT(*) FROM participants p JOIN conversations c ON c.id = p.conversation_id
			WHERE c.kind = 'group' AND p.kind = 'user' AND p.participant_id = ?`, []any{pid}},
		{&c.turns, `SELECT COUNT(*) FROM turns t JOIN messages m ON m.id = t.message_id WHERE m.user_id = ?`, []any{user}},
		{&c.outbox, `SELECT COUNT(*) FROM outbox o JOIN messages m ON m.id = o.message_id WHERE m.user_id = ?`, []any{user}},
	} {
		if err := db.QueryRow(q.sql, q.args...).Scan(q.n); err != nil {
			t.Fatal(err)
		}
	}
	return c
}
