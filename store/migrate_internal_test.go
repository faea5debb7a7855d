package store

// These tests check migrations on databases that hold data: 0006 rebuilds
// tables other tables refer to and marks groups' messages for their
// index, and a migration that breaks a reference is rolled back. One
// checks what 0006 was for: no write of a message's life builds a
// temporary table.

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

// openAt creates a database at path holding the migrations up to version
// (applied straight from the migration files, as an older binary would
// have) and returns a plain connection to it.
func openAt(t *testing.T, path string, version int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	names, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(names) < version {
		t.Fatalf("migrations: %v %v", names, err)
	}
	sort.Strings(names)
	for _, n := range names[:version] {
		body, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(body)); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", version)); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestMigrationsKeepDataAndChecks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sb.db")
	db := openAt(t, path, 5)
	// A chat message with a turn, a bot's reply in the outbox, and a
	// delegation chain: rows that refer to the three rebuilt tables.
	for _, q := range []string{
		`INSERT INTO conversations (id, platform, chat_id, bot, kind, created_at) VALUES (1, 'web', 'c1', 'matty', 'private', 1)`,
		`INSERT INTO sessions (id, bot, scope, scope_id, created_at, updated_at) VALUES ('s1', 'matty', 'user', 'u1', 1, 1)`,
		`INSERT INTO messages (id, conversation_id, platform_msg_id, kind, from_kind, from_id, from_name, user_id, bot, text, created_at)
			VALUES (10, 1, 'p1', 'chat', 'human', 'web-ann', 'Ann', 'u1', 'matty', 'hello', 1)`,
		`INSERT INTO messages (id, conversation_id, kind, from_kind, from_id, from_name, bot, text, created_at, delegation_id)
			VALUES (11, 1, 'chat', 'bot', 'matty', 'Matty', 'matty', 'hi Ann', 2, 'd1')`,
		`INSERT INTO inbound_keys VALUES ('web', 'matty', 'c1', 'p1', 10)`,
		`INSERT INTO session_messages VALUES ('s1', 10), ('s1', 11)`,
		`INSERT INTO delegations (id, from_bot, to_bot, user_id, task, depth, status, created_at, updated_at)
			VALUES ('d1', 'matty', 'finn', 'u1', 'build it', 1, 'running', 1, 1)`,
		`INSERT INTO delegations (id, from_bot, to_bot, user_id, task, depth, parent_id, status, created_at, updated_at)
			VALUES ('d2', 'finn', 'priest', 'u1', 'check it', 2, 'd1', 'queued', 1, 1)`,
		`INSERT INTO turns (id, session_id, message_id, text, created_at, delegation_id) VALUES (5, 's1', 10, 'hello', 1, 'd1')`,
		`INSERT INTO outbox (id, message_id, platform, bot, chat_id, created_at, updated_at, parts_sent) VALUES (7, 11, 'web', 'matty', 'c1', 2, 2, 1)`,
		`INSERT INTO conversations (id, platform, chat_id, kind, created_at) VALUES (2, 'telegram', '-100', 'group', 1)`,
		`INSERT INTO messages (id, conversation_id, kind, from_kind, from_id, from_name, text, created_at)
			VALUES (12, 2, 'chat', 'human', '42', 'Bo', 'hi all', 3)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs, err := s.SessionMessages(ctx, "s1", 10)
	if err != nil || len(msgs) != 2 || msgs[0].Text != "hello" || msgs[1].DelegationID != "d1" || msgs[0].PlatformMsgID != "p1" {
		t.Fatalf("session messages after migration: %+v, %v", msgs, err)
	}
	out, err := s.PendingOutbox(ctx)
	if err != nil || len(out) != 1 || out[0].OutboxID != 7 || out[0].MessageID != 11 || out[0].PartsSent != 1 {
		t.Fatalf("outbox after migration: %+v, %v", out, err)
	}
	open, err := s.OpenDelegations(ctx)
	// d1 is not listed: it has a pending turn.
	if err != nil || len(open) != 1 || open[0].ID != "d2" || open[0].ParentID != "d1" {
		t.Fatalf("open delegations after migration: %+v, %v", open, err)
	}
	turns, err := s.PendingTurns(ctx)
	if err != nil || len(turns) != 1 || turns[0].ID != 5 {
		t.Fatalf("pending turns after migration: %+v, %v", turns, err)
	}

	// 0009: the dedupe key survived its table's copy, and the two link
	// tables no longer declare references; the others still do.
	dup, err := s.AppendInbound(ctx, gateway.Inbound{
		Event: gateway.Event{
			Platform: gateway.PlatformWeb, Bot: "matty", ChatID: "c1", ChatType: gateway.ChatPrivate,
			MessageID: "p1", Sender: gateway.Sender{PlatformID: "web-ann", Name: "Ann"}, Text: "hello", Time: time.Now(),
		},
		UserID: "u1", UserName: "Ann",
	})
	if err != nil || !dup.Duplicate || dup.Message.ID != 10 {
		t.Fatalf("the message p1 again after migration: %+v, %v; want a duplicate of 10", dup, err)
	}
	for table, want := range map[string]bool{"session_messages": false, "inbound_keys": false, "turns": true, "outbox": true, "messages": true} {
		var refs int
		if err := s.queryRow(ctx, `SELECT count(*) FROM pragma_foreign_key_list(?)`, table).Scan(&refs); err != nil {
			t.Fatal(err)
		}
		if (refs > 0) != want {
			t.Errorf("%s declares %d references after migration; want some: %v", table, refs, want)
		}
	}

	group, err := s.ChatMessages(ctx, "telegram", "-100", 10)
	if err != nil || len(group) != 1 || group[0].Text != "hi all" {
		t.Fatalf("group messages after migration: %+v, %v", group, err)
	}
	var plan []string
	rows, err := s.r.Query(`EXPLAIN QUERY PLAN SELECT m.id FROM conversations c
		JOIN messages m ON m.conversation_id = c.id AND m.in_group = 1
		WHERE c.platform = 'telegram' AND c.chat_id = '-100' AND c.bot = '' ORDER BY m.id DESC LIMIT 5`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, parent, unused any
		var detail string
		rows.Scan(&id, &parent, &unused, &detail)
		plan = append(plan, detail)
	}
	rows.Close()
	if !strings.Contains(strings.Join(plan, "\n"), "messages_of_groups") {
		t.Errorf("a group's messages are not read through messages_of_groups: %q", plan)
	}

	// The checks still hold, and writing a delegation builds no temporary
	// table (a message's writes are checked by
	// TestMessageWritesBuildNoTemporaryTables).
	err = s.tx(ctx, func(tx *txn) error {
		_, err := insertMessage(ctx, tx, 1, gateway.Message{Kind: "bogus", From: gateway.Party{Kind: "human"}, Time: time.Now()}, "")
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "CHECK") {
		t.Errorf("a message of kind bogus: err = %v, want a CHECK failure", err)
	}
	for _, q := range []string{
		`INSERT INTO delegations (id, from_bot, to_bot, user_id, task, depth, status, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		`UPDATE delegations SET status = ?, result = ?, error = ?, retries = retries + ?, updated_at = ? WHERE id = ?`,
	} {
		if ops := ephemeralOps(t, s, q); len(ops) > 0 {
			t.Errorf("%s\nbuilds temporary tables: %v", q, ops)
		}
	}
}

// ephemeralOps returns the opcodes of q's program that build a temporary
// table.
func ephemeralOps(t *testing.T, s *SQLite, q string) []string {
	t.Helper()
	args := make([]any, strings.Count(q, "?"))
	rows, err := s.r.Query("EXPLAIN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var addr, p1, p2, p3, p4, p5, comment any
		var op string
		if err := rows.Scan(&addr, &op, &p1, &p2, &p3, &p4, &p5, &comment); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(op, "Ephemeral") {
			out = append(out, op)
		}
	}
	return out
}

func TestMigrationBreakingAReferenceIsRolledBack(t *testing.T) {
	ctx := context.Background()
	s := openBatchStore(t)
	in := gateway.Inbound{
		Event: gateway.Event{Platform: "web", Bot: "matty", ChatID: "c1", ChatType: gateway.ChatPrivate,
			MessageID: "m1", Sender: gateway.Sender{PlatformID: "web-ann"}, Text: "hello", Time: time.Now()},
		UserID: "u1", Turns: []gateway.TurnRequest{{Session: gateway.SessionKey{Bot: "matty", Scope: "user", ScopeID: "u1"}, Text: "hello"}},
	}
	if _, err := s.AppendInbound(ctx, in); err != nil {
		t.Fatal(err)
	}
	// Migrations run only inside Open, before anything else writes; the
	// store is idle here, so running one on an open store is the same.
	err := s.migration(ctx, "DELETE FROM messages", 99)
	if err == nil || !strings.Contains(err.Error(), "refers to a missing row of messages") {
		t.Fatalf("a migration deleting referenced messages: err = %v", err)
	}
	var n, version, keys int
	if err := s.r.QueryRow("SELECT COUNT(*) FROM messages").Scan(&n); err != nil || n != 1 {
		t.Errorf("messages after the failed migration: %d, %v", n, err)
	}
	if err := s.r.QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != 10 {
		t.Errorf("user_version after the failed migration: %d, %v", version, err)
	}
	s.withConn(func(c *conn) error {
		return c.queryRow("PRAGMA foreign_keys").Scan(&keys)
	})
	if keys != 1 {
		t.Errorf("foreign keys on the writer after a migration: %d, want 1", keys)
	}
}

// TestMessageWritesBuildNoTemporaryTables runs the writes of a message's
// life — a new person's first message (new chat, new session), later
// ones, an instant exchange, a group's, the replies and their delivery
// marks — and then checks
// every statement the committer prepared on the way: none of them may
// build a temporary table (a CHECK with an IN list, RETURNING, an
// unindexed IN), which costs an allocation and a teardown per run.
func TestMessageWritesBuildNoTemporaryTables(t *testing.T) {
	ctx := context.Background()
	s := openBatchStore(t)
	cycle := func(chatType gateway.ChatType, chat, msgID, platformReplyID string) {
		t.Helper()
		scope, scopeID := "user", "u1"
		if chatType == gateway.ChatGroup {
			scope, scopeID = "group", "telegram:"+chat
		}
		in := gateway.Inbound{
			Event: gateway.Event{Platform: "telegram", Bot: "matty", ChatID: chat, ChatType: chatType,
				MessageID: msgID, Sender: gateway.Sender{PlatformID: "42", Name: "Ann"}, Text: "hello", Time: time.Now()},
			UserID: "u1", UserName: "Ann",
			Turns: []gateway.TurnRequest{{Session: gateway.SessionKey{Bot: "matty", Scope: scope, ScopeID: scopeID}, Text: "hello"}},
		}
		res, err := s.AppendInbound(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.LoadTurn(ctx, res.Turns[0].ID, 20)
		if err != nil {
			t.Fatal(err)
		}
		reply := gateway.Message{Platform: "telegram", ChatID: chat, ChatType: chatType, Kind: gateway.KindChat,
			From: gateway.Party{Kind: "bot", ID: "matty", Name: "Matty"}, Bot: "matty", Text: "hi", Time: time.Now()}
		done, err := s.CompleteTurn(ctx, gateway.Completion{Turn: d.Ref, Session: d.Session.ID,
			Posts: []gateway.Post{{Message: reply, Session: d.Session.ID}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.MarkSent(ctx, done.Outbox[0].OutboxID, platformReplyID); err != nil {
			t.Fatal(err)
		}
	}
	cycle(gateway.ChatPrivate, "42", "1", "")
	cycle(gateway.ChatPrivate, "42", "2", "100")
	// An instant exchange, stored as one row (exchanges.go).
	key := gateway.SessionKey{Bot: "matty", Scope: "user", ScopeID: "u1"}
	data, latest, ok := s.PeekSession(key, 20)
	if !ok {
		t.Fatal("the session is not cached")
	}
	in := gateway.Inbound{
		Event: gateway.Event{Platform: "telegram", Bot: "matty", ChatID: "42", ChatType: gateway.ChatPrivate,
			MessageID: "3", Sender: gateway.Sender{PlatformID: "42", Name: "Ann"}, Text: "hello", Time: time.Now()},
		UserID: "u1", UserName: "Ann", Turns: []gateway.TurnRequest{{Session: key, Text: "hello"}},
	}
	sid := data.Ref.SessionID
	answer := gateway.Completion{Session: sid, Posts: []gateway.Post{{Session: sid, Message: gateway.Message{
		Platform: "telegram", ChatID: "42", ChatType: gateway.ChatPrivate, Kind: gateway.KindChat,
		From: gateway.Party{Kind: "bot", ID: "matty", Name: "Matty"}, UserID: "u1", Bot: "matty", Text: "hi",
		ReplyTo: "3", Time: time.Now()}}}}
	res, done, err := s.AppendAnswered(ctx, in, answer, latest)
	if err != nil || len(done.Outbox) != 1 || done.Outbox[0].MessageID != res.Message.ID+1 {
		t.Fatalf("instant exchange: %+v, %+v, %v; want one row", res, done, err)
	}
	if err := s.MarkSent(ctx, done.Outbox[0].OutboxID, "102"); err != nil {
		t.Fatal(err)
	}
	cycle(gateway.ChatGroup, "-100", "7", "101")
	cycle(gateway.ChatGroup, "-100", "8", "")
	if _, err := s.PendingOutbox(ctx); err != nil { // commits the lazy marks
		t.Fatal(err)
	}
	var prepared []string
	s.tx(ctx, func(tx *txn) error { // the statement map is the committer's
		prepared = nil
		for q := range tx.c.stmts {
			prepared = append(prepared, q)
		}
		return nil
	})
	if len(prepared) < 10 {
		t.Fatalf("only %d statements prepared: %q", len(prepared), prepared)
	}
	// The link log's statements of several rows, which a flush this small
	// does not reach.
	prepared = append(prepared, insertLinks.rows, insertKeys.rows)
	for _, q := range prepared {
		if verb, _, _ := strings.Cut(strings.TrimSpace(q), " "); verb == "BEGIN" || verb == "COMMIT" || verb == "ROLLBACK" || verb == "PRAGMA" {
			continue
		}
		if ops := ephemeralOps(t, s, q); len(ops) > 0 {
			t.Errorf("%s\nbuilds temporary tables: %v", strings.Join(strings.Fields(q), " "), ops)
		}
	}
}
