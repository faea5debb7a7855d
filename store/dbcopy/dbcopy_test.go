package dbcopy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/internal/pgtest"
	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/store/postgres"
	"github.com/switchboard-chat/switchboard/store/sqlite"
	"github.com/switchboard-chat/switchboard/world/chains"
	"github.com/switchboard-chat/switchboard/world/findings"
	"github.com/switchboard-chat/switchboard/world/gossip"
	"github.com/switchboard-chat/switchboard/world/insights"
	"github.com/switchboard-chat/switchboard/world/shared"
)

// TestRoundTrip copies a SQLite store holding some of everything to
// PostgreSQL and back to a new SQLite file, and compares every table of
// the two files row by row; the PostgreSQL copy works as a store (same
// secret, new IDs after the copied ones); a second copy into either
// target is refused and changes nothing.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	pg := pgtest.NewDatabase(t)

	s, err := sqlite.Open(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	secret := fill(t, s)
	s.Close()

	counts, err := Copy(ctx, a, pg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counts {
		if c.Rows == 0 {
			t.Errorf("the test's store has no rows of %s: fill it", c.Table)
		}
	}
	if _, err := Copy(ctx, pg, b, nil); err != nil {
		t.Fatal(err)
	}
	want, got := dump(t, a), dump(t, b)
	for _, tb := range tables {
		if w, g := want[tb.name], got[tb.name]; w != g {
			t.Errorf("%s differs after the round trip:\n%s\nwant:\n%s", tb.name, g, w)
		}
	}
	// The SQLite copy's full-text index of the insights is rebuilt.
	back, err := sqlite.Open(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct{ message, bot string }{{"my new jobs", "matty"}, {"a café", "finn"}} {
		found, err := back.SearchInsights(ctx, insights.Search{User: "ann", Viewer: "priest", Words: insights.Words(q.message), Limit: 3})
		if err != nil || len(found) != 1 || found[0].Bot != q.bot {
			t.Errorf("insights found for %q on the SQLite copy = %+v, %v; want %s's", q.message, found, err, q.bot)
		}
	}
	back.Close()

	// The copy is a store: the same secret, the next IDs after the
	// copied ones, the pending turn and reply still pending.
	p, err := postgres.Open(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Secret(ctx, "web-token", 32); err != nil || string(got) != string(secret) {
		t.Errorf("secret after the copy = %x, %v; want %x", got, err, secret)
	}
	res, err := p.AppendInbound(ctx, private("zed", "n1", "after the copy"))
	if err != nil || res.Message.ID <= maxID(t, a, "messages") || res.Turns[0].ID <= maxID(t, a, "turns") {
		t.Errorf("a message after the copy = %+v, %v; want IDs after the copied ones", res, err)
	}
	if n, err := p.QueueDepth(ctx); err != nil || n != 4 {
		t.Errorf("queue depth after the copy = %d, %v; want 4", n, err)
	}
	if pending, err := p.PendingOutbox(ctx); err != nil || len(pending) != 2 {
		t.Errorf("pending outbox after the copy = %+v, %v", pending, err)
	}
	// Insights are found on the copy (PostgreSQL computes its index).
	if found, err := p.SearchInsights(ctx, insights.Search{User: "ann", Viewer: "priest", Words: insights.Words("my new jobs"), Limit: 3}); err != nil ||
		len(found) != 1 || found[0].Bot != "matty" {
		t.Errorf("insights found on the PostgreSQL copy = %+v, %v", found, err)
	}
	// The shared context reads the same: the attributes in their
	// written form, the chain from the copied delegations.
	c, err := p.SharedContext(ctx, "chat:web:lobby", shared.Limits{Events: 5, Entities: 5, Facts: 5, Chain: 5})
	wantAttrs := `{"nested":{"a":"é<&>","zz":1.50},"none":null,"pricing":"$99/month","tags":["a","b"]}`
	if err != nil || len(c.Events) != 1 || len(c.Entities) != 1 || string(c.Entities[0].Attributes) != wantAttrs || len(c.Facts) != 1 {
		t.Errorf("the lobby's context on the PostgreSQL copy = %+v, %v", c, err)
	}
	c, err = p.SharedContext(ctx, "user:ann", shared.Limits{Chain: 5})
	if err != nil || len(c.Chain) != 1 || c.Chain[0].DelegationID != "dlg-1" || c.Chain[0].Time.IsZero() ||
		len(c.Chain[0].Inputs) != 1 || c.Chain[0].Inputs[0].ID != "art-1" || len(c.Chain[0].Outputs) != 1 || c.Chain[0].Outputs[0].ID != "art-2" {
		t.Errorf("ann's chain on the PostgreSQL copy = %+v, %v", c.Chain, err)
	}
	// A gateway running on a database: a copy from it is refused.
	m, err := p.Join(ctx, "gw:8080")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { m.Run(runCtx); close(ran) }()
	if _, err := Copy(ctx, pg, filepath.Join(dir, "d.db"), nil); err == nil || !strings.Contains(err.Error(), "gateway(s) are running") {
		t.Errorf("a copy from a database a gateway runs on: %v, want refused", err)
	}
	stop()
	<-ran
	p.Close()

	// Into a target with data: refused, nothing changed.
	before := dump(t, b)
	for _, target := range []string{pg, b} {
		if _, err := Copy(ctx, a, target, nil); !errors.Is(err, ErrNotEmpty) {
			t.Errorf("a second copy into %s: %v, want ErrNotEmpty", parse(target), err)
		}
	}
	if after := dump(t, b); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused copy changed its target")
	}
	if _, err := Copy(ctx, a, a, nil); err == nil {
		t.Errorf("a copy onto itself was not refused")
	}
	if _, err := Copy(ctx, filepath.Join(dir, "none.db"), filepath.Join(dir, "c.db"), nil); err == nil {
		t.Errorf("a copy from no database was not refused")
	}
}

// store is what fill uses of a store.
type store interface {
	gateway.Store
	gateway.SessionStore
	outbox.Store
	findings.Store
	insights.Store
	gossip.Store
	shared.Store
	Secret(ctx context.Context, name string, n int) ([]byte, error)
}

var clock = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func now() time.Time { clock = clock.Add(time.Millisecond); return clock }

func private(user, msgID, text string) gateway.Inbound {
	return gateway.Inbound{
		Message: chat.Message{Platform: "web", ChatID: "web-" + user + ":matty", ChatType: chat.Private, PlatformMsgID: msgID,
			Kind: chat.KindChat, From: chat.Party{Kind: chat.Human, ID: "web-" + user, Name: user}, UserID: user,
			Bot: "matty", Text: text, Time: now(), Mentions: []string{"matty"}},
		Turns: []sessions.Request{{Session: sessions.Key{Bot: "matty", Scope: sessions.ScopeUser, ScopeID: user}, Text: text}},
	}
}

// fill stores some of everything in s and returns its web-token secret.
func fill(t *testing.T, s store) []byte {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	secret, err := s.Secret(ctx, "web-token", 32)
	must(err)
	answer := func(session string, o func(turn sessions.Turn) sessions.Outcome) sessions.Done {
		t.Helper()
		turn, ok, err := s.NextTurn(ctx, session, 20)
		if err != nil || !ok {
			t.Fatalf("next turn: %v %v", ok, err)
		}
		done, err := s.CompleteTurn(ctx, o(turn))
		must(err)
		return done
	}
	post := func(turn sessions.Turn, bot, text string) sessions.Post {
		m := turn.Message
		if m.Platform == "" {
			m.Platform, m.ChatID, m.ChatType = "web", "web-ann:"+bot, chat.Private
		}
		return sessions.Post{Session: turn.Ref.SessionID, Message: chat.Message{Platform: m.Platform, ChatID: m.ChatID,
			ChatType: m.ChatType, Kind: chat.KindChat, From: chat.Party{Kind: chat.Bot, ID: bot, Name: bot}, UserID: "ann",
			Bot: bot, Text: text, ReplyTo: m.PlatformMsgID, ReplyToID: m.ID, Time: now(), DelegationID: m.DelegationID}}
	}
	art := func(id string) chat.Artifact {
		return chat.Artifact{ID: id, Name: id + ".txt", MediaType: "text/plain", Size: 3, SHA256: "ab", Producer: "finn", Content: []byte("hé\x00")}
	}

	// A private exchange, its reply delivered; a failed turn.
	res, err := s.AppendInbound(ctx, private("ann", "m1", "hello ✓"))
	must(err)
	session := res.Turns[0].SessionID
	done := answer(session, func(turn sessions.Turn) sessions.Outcome {
		return sessions.Outcome{Turn: turn.Ref, ResumeID: "r-1", Posts: []sessions.Post{post(turn, "matty", "hi")},
			Artifacts: []chat.Artifact{art("art-1")}}
	})
	must(s.MarkSent(ctx, done.Outbox[0].OutboxID, ""))
	_, err = s.AppendInbound(ctx, private("ann", "m2", "tell finn to build it"))
	must(err)
	done = answer(session, func(turn sessions.Turn) sessions.Outcome {
		p := post(turn, "matty", "Sorry, matty couldn't answer just now.")
		p.Message.Failed = true
		return sessions.Outcome{Turn: turn.Ref, Posts: []sessions.Post{p}, Handoffs: []sessions.Handoff{{
			Record: delegation.Record{ID: "dlg-1", From: "matty", To: "finn", UserID: "ann", UserName: "Ann", Task: "build it",
				Depth: 1, Status: delegation.StatusQueued, Origin: turn.Message.Chat(), OriginSender: "web-ann", FromSession: session,
				Inputs: []string{"art-1"}, Expected: []delegation.Expected{{Name: "out.txt"}}, Space: "user:ann"},
			Target: sessions.Key{Bot: "finn", Scope: sessions.ScopeUser, ScopeID: "ann"}, Wrapper: "DELEGATED TASK: build it",
		}}}
	})
	must(s.MarkAttempt(ctx, done.Outbox[0].OutboxID, "timeout"))
	must(s.MarkSent(ctx, done.Outbox[0].OutboxID, ""))
	// Finn answers the hand-off with an artifact and hands on a part
	// (a child delegation, still queued).
	answer(done.Turns[0].SessionID, func(turn sessions.Turn) sessions.Outcome {
		return sessions.Outcome{Turn: turn.Ref, Posts: []sessions.Post{post(turn, "finn", "built")},
			Artifacts: []chat.Artifact{art("art-2")},
			Update:    &delegation.Update{ID: "dlg-1", Status: delegation.StatusDone, Result: "built"},
			Handoffs: []sessions.Handoff{{
				Record: delegation.Record{ID: "dlg-2", From: "finn", To: "priest", UserID: "ann", Task: "check it", Depth: 2,
					ParentID: "dlg-1", Status: delegation.StatusQueued, Inputs: []string{"art-1"}},
				Target: sessions.Key{Bot: "priest", Scope: sessions.ScopeUser, ScopeID: "ann"}, Wrapper: "DELEGATED TASK: check it",
			}}}
	})
	// A Telegram group message to two bots: the first answers in two
	// parts (one delivered), the second waits.
	in := gateway.Inbound{Message: chat.Message{Platform: "telegram", ChatID: "-100", ChatType: chat.Group, PlatformMsgID: "77",
		Kind: chat.KindChat, From: chat.Party{Kind: chat.Human, ID: "telegram-5", Name: "Bo"}, UserID: "telegram-5",
		Text: "@matty @finn hi", Time: now()}, ChatName: "Team",
		Turns: []sessions.Request{{Session: sessions.Key{Bot: "matty", Scope: sessions.ScopeGroup, ScopeID: "telegram:-100"}, Text: "hi"},
			{Session: sessions.Key{Bot: "finn", Scope: sessions.ScopeGroup, ScopeID: "telegram:-100"}, Text: "hi"}}}
	res, err = s.AppendInbound(ctx, in)
	must(err)
	done = answer(res.Turns[0].SessionID, func(turn sessions.Turn) sessions.Outcome {
		return sessions.Outcome{Turn: turn.Ref, Posts: []sessions.Post{post(turn, "matty", "part one\n\npart two")}}
	})
	must(s.MarkPart(ctx, done.Outbox[0].OutboxID, 1, "tg-1"))
	// Matty's answer there starts a bot-to-bot chain: Finn's step, the
	// closing one, is queued (SPEC §10.6).
	at := now()
	_, ok, err := s.AdvanceChain(ctx, gateway.ChainAdvance{Message: done.Outbox[0].MessageID, At: at,
		State: chains.State{Platform: "telegram", Chat: "-100", Chain: 1, Status: chains.Closed, Steps: 1,
			StartedAt: at, LastAt: at, Mark: done.Outbox[0].MessageID, Draws: 3,
			Burst: chains.Burst{Bot: "matty", At: at, First: true, Woke: []string{"finn"}}},
		Answers: []gateway.ChainAnswer{{Session: sessions.Key{Bot: "finn", Scope: sessions.ScopeGroup, ScopeID: "telegram:-100"},
			Text: "part one", Step: 1, Closing: true}}})
	must(err)
	if !ok {
		t.Fatal("the chain was not stored")
	}
	// Rooms: an open one with bots and an invited member, a closed one.
	_, err = s.JoinRoom(ctx, "web", "lobby", gateway.Person{ID: "web-ann"}, gateway.NewRoom{Bots: []string{"finn", "matty", "priest"}, Open: true})
	must(err)
	must(s.AddRoomMember(ctx, "web", "lobby", gateway.Person{ID: "web-ann"}, gateway.Person{ID: "user-bo"}))
	_, err = s.JoinRoom(ctx, "web", "den", gateway.Person{ID: "web-cy"}, gateway.NewRoom{Bots: []string{"matty"}})
	must(err)
	// A focus in the lobby (SPEC §10.3).
	must(s.SetFocus(ctx, gateway.FocusKey{Platform: "web", ChatID: "lobby", Person: "web-ann"}, "matty", now()))
	// Findings: one released by an ended stage, one hidden in the
	// running isolated stage.
	_, err = s.StartStage(ctx, findings.StageStart{Space: "chat:web:lobby", Name: "diverge", Isolated: true, Key: "web:lobby:1", At: now()})
	must(err)
	_, err = s.AddFinding(ctx, findings.Finding{Space: "chat:web:lobby", Bot: "matty", Text: "idea one", Severity: "high", CreatedAt: now()})
	must(err)
	_, err = s.StartStage(ctx, findings.StageStart{Space: "chat:web:lobby", Name: "converge", Isolated: true, At: now()})
	must(err)
	_, err = s.AddFinding(ctx, findings.Finding{Space: "chat:web:lobby", Bot: "finn", Text: "idea two", Severity: "low", CreatedAt: now()})
	must(err)
	// Insights about ann (SPEC §10.4).
	_, err = s.AddInsight(ctx, insights.Insight{User: "ann", Bot: "matty", Kind: insights.Epiphany, Text: "Ann is excited about her new job", Confidence: 0.85, CreatedAt: now()})
	must(err)
	_, err = s.AddInsight(ctx, insights.Insight{User: "ann", Bot: "finn", Kind: insights.Dream, Text: "Ann's café ✓", Confidence: 1, CreatedAt: now()})
	must(err)
	// Gossip: an event delivered to finn, still due to priest.
	ev, _, err := s.AddGossip(ctx, gossip.Event{User: "ann", UserName: "Ann", SourceBot: "matty", MessageID: 1, Key: "web/lobby/1", Topic: "career",
		Summary: "I got a new job.", Status: gossip.StatusQueued, CreatedAt: now()}, []string{"finn", "priest"})
	must(err)
	_, err = s.DeliverMemory(ctx, gossip.Delivery{Event: ev, Bot: "finn"}, chat.Message{Kind: chat.KindSystem,
		From: chat.Party{Kind: chat.System, ID: "matty", Name: gossip.NoteFrom}, UserID: "ann", Bot: "finn",
		Text: gossip.NoteText("Matty", ev), Time: now()})
	must(err)
	// The shared context of the lobby (SPEC §10.7); dlg-1, done in
	// ann's space, is a step of hers.
	_, err = s.AddEvent(ctx, shared.Event{Space: "chat:web:lobby", Bot: "matty", Text: "started ✓", Time: now()})
	must(err)
	_, err = s.MergeEntity(ctx, shared.Entity{Space: "chat:web:lobby", Name: "competitor-x", UpdatedBy: "finn", UpdatedAt: now(),
		Attributes: []byte(`{"pricing": "$99/month", "tags": ["a", "b"], "nested": {"zz": 1.50, "a": "é<&>"}, "none": null}`)})
	must(err)
	_, err = s.PutFact(ctx, shared.Fact{Space: "chat:web:lobby", Subject: "CompetitorX", Predicate: "pricing_valid", Object: "true",
		Confidence: 0.95, Bot: "priest", Time: now()})
	must(err)
	return secret
}

// dump reads every table of the SQLite file at path, a string per table.
func dump(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]string{}
	for _, tb := range tables {
		order := tb.order
		if tb.sqliteOrder != "" {
			order = tb.sqliteOrder
		}
		rows, err := db.Query(`SELECT ` + strings.Join(tb.cols, ", ") + ` FROM ` + tb.name + ` ORDER BY ` + order)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		vals := make([]any, len(tb.cols))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if bs, ok := v.([]byte); ok {
					vals[i] = fmt.Sprintf("%q", bs)
				}
			}
			fmt.Fprintln(&b, vals...)
		}
		rows.Close()
		out[tb.name] = b.String()
	}
	return out
}

// maxID is the largest id of table in the SQLite file at path.
func maxID(t *testing.T, path, table string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(`SELECT MAX(id) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
