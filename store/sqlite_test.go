package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/store"
)

func open(t *testing.T, path string) *store.SQLite {
	t.Helper()
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func inbound(msgID, text string) gateway.Inbound {
	return gateway.Inbound{
		Event: gateway.Event{
			Platform: "web", Bot: "matty", ChatID: "web-ann:matty", ChatType: gateway.ChatPrivate,
			MessageID: msgID, Sender: gateway.Sender{PlatformID: "web-ann", Name: "Ann"}, Text: text,
			Mentions: []gateway.Mention{{Start: 0, End: 6, Name: "matty"}},
			Time:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		},
		UserID: "user-ann", UserName: "Ann",
		Turns: []gateway.TurnRequest{{Session: gateway.SessionKey{Bot: "matty", Scope: "user", ScopeID: "user-ann"}, Text: text}},
	}
}

func TestOpenSetsPragmasAndMigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sb.db")
	open(t, path).Close()
	open(t, path) // a second open must not re-run migrations

	db, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	var version int
	db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	db.QueryRow("PRAGMA user_version").Scan(&version)
	if mode != "wal" || version != 10 {
		t.Errorf("journal_mode=%s user_version=%d; want wal, 10", mode, version)
	}
}

func TestAppendInboundDedupesAndQueuesTurns(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "sb.db"))
	first, err := s.AppendInbound(ctx, inbound("1", "@matty hi"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate || len(first.Turns) != 1 {
		t.Fatalf("first = %+v", first)
	}
	again, err := s.AppendInbound(ctx, inbound("1", "@matty hi"))
	if err != nil {
		t.Fatal(err)
	}
	if !again.Duplicate || again.Message.ID != first.Message.ID || len(again.Turns) != 0 {
		t.Fatalf("duplicate = %+v", again)
	}
	if got := again.Message.Mentions; len(got) != 1 || got[0] != "matty" {
		t.Errorf("mentions = %q", got)
	}
	pending, err := s.PendingTurns(ctx)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending = %v, %v", pending, err)
	}
	d, err := s.LoadTurn(ctx, pending[0].ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if d.Text != "@matty hi" || d.Session.Key.ScopeID != "user-ann" || d.Message.UserID != "user-ann" || len(d.History) != 0 {
		t.Errorf("loaded turn = %+v", d)
	}
}

func TestCompleteTurnIsIdempotent(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "sb.db"))
	res, err := s.AppendInbound(ctx, inbound("1", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	turn := res.Turns[0]
	c := gateway.Completion{
		Turn: turn, Session: turn.SessionID, ResumeID: "resume-1",
		Posts: []gateway.Post{{Session: turn.SessionID, Message: gateway.Message{
			Platform: "telegram", ChatID: "lobby", ChatType: gateway.ChatGroup, Kind: gateway.KindChat,
			From: gateway.Party{Kind: "bot", ID: "matty", Name: "Matty"}, Bot: "matty", Text: "hello Ann", Time: time.Now(),
		}}},
		Artifacts: []gateway.ArtifactRecord{{ID: "art-1", Name: "a.txt", MediaType: "text/plain", Size: 1, SHA256: "x", Producer: "matty", Content: []byte("a")}},
	}
	out, err := s.CompleteTurn(ctx, c)
	if err != nil || len(out.Outbox) != 1 {
		t.Fatalf("complete = %v, %v", out, err)
	}
	// A turn re-run after a crash stores no second reply.
	out2, err := s.CompleteTurn(ctx, c)
	if err != nil || len(out2.Outbox) != 0 {
		t.Fatalf("second complete = %v, %v", out2, err)
	}
	msgs, _ := s.SessionMessages(ctx, turn.SessionID, 10)
	if len(msgs) != 2 || msgs[1].Text != "hello Ann" {
		t.Fatalf("session messages = %+v", msgs)
	}
	sess, ok, err := s.FindSession(ctx, gateway.SessionKey{Bot: "matty", Scope: "user", ScopeID: "user-ann"})
	if err != nil || !ok || sess.ResumeID != "resume-1" {
		t.Errorf("session = %+v %v %v", sess, ok, err)
	}
	pending, _ := s.PendingOutbox(ctx)
	if len(pending) != 1 || pending[0].Text != "hello Ann" {
		t.Fatalf("pending outbox = %+v", pending)
	}
	if err := s.MarkSent(ctx, pending[0].OutboxID, "42"); err != nil {
		t.Fatal(err)
	}
	if bot, ok, _ := s.BotOfMessage(ctx, "telegram", "lobby", "42"); !ok || bot != "matty" {
		t.Errorf("bot of message 42 = %q, %v", bot, ok)
	}
	if pending, _ := s.PendingOutbox(ctx); len(pending) != 0 {
		t.Errorf("still pending after sent: %+v", pending)
	}
}

func TestRoomsAndSecrets(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sb.db")
	s := open(t, path)
	bots, err := s.EnsureRoom(ctx, "web", "lobby", "web-ann", []string{"matty", "finn"})
	if err != nil || len(bots) != 2 {
		t.Fatalf("room bots = %v, %v", bots, err)
	}
	// Joining again does not change the room's bots.
	bots, err = s.EnsureRoom(ctx, "web", "lobby", "web-bob", []string{"priest"})
	if err != nil || len(bots) != 2 || bots[0] != "matty" {
		t.Fatalf("room bots on second join = %v, %v", bots, err)
	}
	a, err := s.Secret(ctx, "k", 16)
	if err != nil || len(a) != 16 {
		t.Fatal(err)
	}
	s.Close()
	b, err := open(t, path).Secret(ctx, "k", 16)
	if err != nil || string(a) != string(b) {
		t.Errorf("secret changed across restarts")
	}
}

// TestLastPrivateChatOfUser checks that the private chat where a person
// last wrote, to any bot, is found through their sessions; group messages
// and other people's messages do not count.
func TestLastPrivateChatOfUser(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "sb.db"))
	if _, _, ok, err := s.LastPrivateChatOfUser(ctx, "user-ann"); ok || err != nil {
		t.Fatalf("before any message: ok=%v err=%v", ok, err)
	}
	send := func(id, platform, chat, pid string, typ gateway.ChatType, user, bot string, scope, scopeID string) {
		t.Helper()
		in := inbound(id, "hi")
		in.Event.Platform, in.Event.ChatID, in.Event.ChatType, in.Event.Bot = platform, chat, typ, bot
		in.Event.Sender.PlatformID, in.UserID = pid, user
		in.Turns[0].Session = gateway.SessionKey{Bot: bot, Scope: scope, ScopeID: scopeID}
		if _, err := s.AppendInbound(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	send("1", "telegram", "100", "telegram:100", gateway.ChatPrivate, "user-ann", "matty", "user", "user-ann")
	send("2", "web", "web-ann:finn", "web-ann", gateway.ChatPrivate, "user-ann", "finn", "user", "user-ann")
	send("3", "telegram", "-5", "telegram:100", gateway.ChatGroup, "user-ann", "matty", "group", "telegram:-5")
	send("4", "web", "web-bob:finn", "web-bob", gateway.ChatPrivate, "user-bob", "finn", "user", "user-bob")
	c, pid, ok, err := s.LastPrivateChatOfUser(ctx, "user-ann")
	if err != nil || !ok || c.Platform != "web" || c.ChatID != "web-ann:finn" || c.Type != gateway.ChatPrivate || pid != "web-ann" {
		t.Errorf("last private chat of Ann = %+v, %q, %v, %v; want her web chat with Finn", c, pid, ok, err)
	}
}
