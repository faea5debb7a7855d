package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/internal/pgtest"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/store/postgres"
)

// lockedBuffer is a log several goroutines write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestMigrateConcurrently: several processes opening one new database at
// once apply each migration once, and all of them open it.
func TestMigrateConcurrently(t *testing.T) {
	url := pgtest.NewDatabase(t)
	var log lockedBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			s, err := postgres.Open(context.Background(), url, postgres.WithLogger(logger))
			if err != nil {
				t.Errorf("open %d: %v", i, err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v %v", files, err)
	}
	want := len(files)
	if n := strings.Count(log.String(), "applied a migration"); n != want {
		t.Errorf("migrations applied %d times, want %d (each once):\n%s", n, want, log.String())
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var versions, rows int
	if err := conn.QueryRow(context.Background(), `SELECT COUNT(DISTINCT version), COUNT(*) FROM schema_migrations`).Scan(&versions, &rows); err != nil {
		t.Fatal(err)
	}
	if versions != want || rows != want {
		t.Errorf("schema_migrations holds %d rows of %d versions, want %d of %d", rows, versions, want, want)
	}

	// A database migrated by a newer binary is refused, and left as it is.
	if _, err := conn.Exec(context.Background(), `INSERT INTO schema_migrations (version, name) VALUES (99, 'future')`); err != nil {
		t.Fatal(err)
	}
	if s, err := postgres.Open(context.Background(), url); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		if s != nil {
			s.Close()
		}
		t.Errorf("open a newer schema: %v", err)
	}
}

// TestOpenErrors: a server that cannot be reached, or a URL that cannot be
// read, is an error naming the server and never the password.
func TestOpenErrors(t *testing.T) {
	const secret = "s3cret-Pa55"
	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"refused", "postgres://switchboard:" + secret + "@127.0.0.1:1/sb?sslmode=disable",
			[]string{"cannot reach the PostgreSQL server", "127.0.0.1:1", `database "sb"`}},
		{"password in the query", "postgres://127.0.0.1:1/sb?sslmode=disable&user=sb&password=" + secret,
			[]string{"cannot reach the PostgreSQL server", "127.0.0.1:1"}},
		{"escaped password", "postgres://sb:" + secret + "%21@127.0.0.1:1/sb?sslmode=disable",
			[]string{"127.0.0.1:1"}},
		{"no such database", strings.Replace(pgtest.ServerURL(t), "/postgres?", "/no_such_db?", 1),
			[]string{"the PostgreSQL server 127.0.0.1:", "refused the connection", `database "no_such_db"`, "does not exist"}},
		{"bad port", "postgres://sb:" + secret + "@127.0.0.1:port/sb", []string{"URL cannot be read"}},
		{"bad option", "postgres://sb:" + secret + "@127.0.0.1:5432/sb?sslmode=sometimes", []string{"URL cannot be read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := postgres.Open(context.Background(), tc.url)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			msg := err.Error()
			if strings.Contains(msg, secret) || strings.Contains(msg, "Pa55") {
				t.Errorf("the error shows the password: %s", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
		})
	}
}

// TestText: what PostgreSQL's text cannot hold (a NUL, bytes that are not
// UTF-8) is stored as U+FFFD, not refused.
func TestText(t *testing.T) {
	s := open(t, pgtest.NewDatabase(t))
	in := inbound("ann", "m1", "a\x00b\xffc")
	res, err := s.AppendInbound(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.SessionMessages(context.Background(), res.Turns[0].SessionID, "", 10)
	if err != nil || len(msgs) != 1 || msgs[0].Text != "a\uFFFDb\uFFFDc" {
		t.Errorf("stored %+v, %v", msgs, err)
	}
}

// TestTwoStores: two stores on one database, as two processes: a message
// arriving at both is stored once, and a turn completed by both is
// answered once.
func TestTwoStores(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	stores := []*store{open(t, url), open(t, url)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var stored, dups int
	var turn sessions.TurnRef
	for i := range 8 {
		wg.Go(func() {
			res, err := stores[i%2].AppendInbound(ctx, inbound("ann", "race", "once"))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if res.Duplicate {
				dups++
			} else {
				stored++
				turn = res.Turns[0]
			}
		})
	}
	wg.Wait()
	if stored != 1 || dups != 7 {
		t.Fatalf("stored %d, duplicates %d; want 1, 7", stored, dups)
	}
	next, ok, err := stores[1].NextTurn(ctx, turn.SessionID, 10)
	if err != nil || !ok || next.Ref != turn {
		t.Fatalf("next turn = %+v, %v, %v", next.Ref, ok, err)
	}
	answers := make(chan int, 2)
	for i, s := range stores {
		wg.Go(func() {
			done, err := s.CompleteTurn(ctx, sessions.Outcome{Turn: turn, Posts: []sessions.Post{{Session: turn.SessionID, Message: chat.Message{
				Platform: "web", ChatID: "web-ann:matty", ChatType: chat.Private, Kind: chat.KindChat,
				From: chat.Party{Kind: chat.Bot, ID: "matty", Name: "matty"}, UserID: "ann", Bot: "matty",
				Text: fmt.Sprint("answer ", i), Time: next.Message.Time,
			}}}})
			if err != nil {
				t.Error(err)
			}
			answers <- len(done.Outbox)
		})
	}
	wg.Wait()
	if a, b := <-answers, <-answers; a+b != 1 {
		t.Errorf("two completions queued %d and %d replies, want one in all", a, b)
	}
	msgs, err := stores[0].SessionMessages(ctx, turn.SessionID, "", 10)
	if err != nil || len(msgs) != 2 {
		t.Errorf("session = %+v, %v; want the message and one answer", msgs, err)
	}
}

// inbound is ann's private web message to matty.
func inbound(user, msgID, text string) gateway.Inbound {
	return gateway.Inbound{
		Message: chat.Message{
			Platform: "web", ChatID: "web-" + user + ":matty", ChatType: chat.Private, PlatformMsgID: msgID,
			Kind: chat.KindChat, From: chat.Party{Kind: chat.Human, ID: "web-" + user, Name: user},
			UserID: user, Bot: "matty", Text: text, Time: timeNow(),
		},
		Turns: []sessions.Request{{Session: sessions.Key{Bot: "matty", Scope: sessions.ScopeUser, ScopeID: user}, Text: text}},
	}
}

func timeNow() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// TestLostCommit: a write whose COMMIT took effect but whose answer was
// lost (the caller sees an error) is not lost to its caller: tried
// again, it returns what the first try stored (the message's turns to
// wake, the reply's outbox entry to deliver), and only then reads as a
// duplicate, or as done, as any other.
func TestLostCommit(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.NewDatabase(t))
	in := inbound("ann", "m1", "hello")
	postgres.FailNextCommit(s.Store)
	if _, err := s.AppendInbound(ctx, in); err == nil {
		t.Fatal("the lost commit reported no error")
	}
	res, err := s.AppendInbound(ctx, in)
	if err != nil || res.Duplicate || len(res.Turns) != 1 {
		t.Fatalf("the second try = %+v, %v; want what the first stored, its turn included", res, err)
	}
	if again, err := s.AppendInbound(ctx, in); err != nil || !again.Duplicate || again.Message.ID != res.Message.ID {
		t.Errorf("a third arrival = %+v, %v; want a duplicate", again, err)
	}

	turn, _, err := s.NextTurn(ctx, res.Turns[0].SessionID, 10)
	if err != nil {
		t.Fatal(err)
	}
	o := sessions.Outcome{Turn: turn.Ref, Posts: []sessions.Post{{Session: turn.Ref.SessionID, Message: chat.Message{
		Platform: "web", ChatID: "web-ann:matty", ChatType: chat.Private, Kind: chat.KindChat,
		From: chat.Party{Kind: chat.Bot, ID: "matty", Name: "matty"}, UserID: "ann", Bot: "matty", Text: "hi", Time: timeNow(),
	}}}}
	postgres.FailNextCommit(s.Store)
	if _, err := s.CompleteTurn(ctx, o); err == nil {
		t.Fatal("the lost commit reported no error")
	}
	done, err := s.CompleteTurn(ctx, o)
	if err != nil || len(done.Outbox) != 1 || done.Outbox[0].Text != "hi" {
		t.Fatalf("the second try = %+v, %v; want the reply the first stored", done, err)
	}
	pending, err := s.PendingOutbox(ctx)
	if err != nil || len(pending) != 1 || pending[0].OutboxID != done.Outbox[0].OutboxID {
		t.Errorf("pending outbox = %+v, %v; want the one reply", pending, err)
	}
	if again, err := s.CompleteTurn(ctx, o); err != nil || len(again.Outbox) != 0 {
		t.Errorf("a third completion = %+v, %v; want nothing", again, err)
	}
}
