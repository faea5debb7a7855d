package findings_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-chat/switchboard/store/sqlite"
	"github.com/switchboard-chat/switchboard/world"
	"github.com/switchboard-chat/switchboard/world/actions"
	"github.com/switchboard-chat/switchboard/world/findings"
)

// board is a board on a real store in a temp dir, with what its
// watchers were told.
type board struct {
	*findings.Board
	mu   sync.Mutex
	told []string // "space: text" of each finding that became visible
}

func newBoard(t *testing.T) *board {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b := &board{Board: findings.New(s, findings.Options{})}
	b.OnVisible(func(space string, fs []findings.Finding) {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, f := range fs {
			b.told = append(b.told, space+": "+f.Text)
		}
	})
	return b
}

func (b *board) takeTold() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.told
	b.told = nil
	return out
}

func TestPostChecks(t *testing.T) {
	b := newBoard(t)
	ctx := context.Background()
	for _, tc := range []struct {
		p     findings.Post
		field string
	}{
		{findings.Post{Space: "user:ann", Bot: "matty", Text: "  "}, "text"},
		{findings.Post{Space: "user:ann", Bot: "matty", Text: strings.Repeat("é", findings.MaxText+1)}, "text"},
		{findings.Post{Space: "user:ann", Bot: "matty", Text: "x", Severity: "urgent"}, "severity"},
		{findings.Post{Space: "room:x", Bot: "matty", Text: "x"}, "space"},
		{findings.Post{Space: "user:ann", Text: "x"}, "bot"},
	} {
		_, err := b.Post(ctx, tc.p)
		var ie *world.InvalidError
		if !errors.As(err, &ie) || ie.Field != tc.field || !errors.Is(err, world.ErrInvalid) {
			t.Errorf("Post(%+v) = %v; want an InvalidError on %s", tc.p, err, tc.field)
		}
	}
	f, err := b.Post(ctx, findings.Post{Space: "user:ann", Bot: "matty", Text: strings.Repeat("é", findings.MaxText)})
	if err != nil || f.Severity != findings.Medium || !f.Visible {
		t.Errorf("a finding of exactly %d characters = %+v, %v; want it stored, medium", findings.MaxText, f.Severity, err)
	}
	if got := b.takeTold(); len(got) != 1 {
		t.Errorf("watchers told %d findings, want 1", len(got))
	}
}

func TestIsolatedStage(t *testing.T) {
	b := newBoard(t)
	ctx := context.Background()
	const room = "chat:web:lobby"
	post := func(bot, text string) {
		t.Helper()
		if _, err := b.Post(ctx, findings.Post{Space: room, Bot: bot, Text: text, Severity: findings.High}); err != nil {
			t.Fatal(err)
		}
	}
	seen := func(viewer string) []string {
		t.Helper()
		fs, err := b.ForTurn(ctx, room, viewer)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range fs {
			out = append(out, f.Text)
		}
		return out
	}
	post("matty", "shared before")
	if _, err := b.StartStage(ctx, room, "diverge", true, ""); err != nil {
		t.Fatal(err)
	}
	b.takeTold()
	post("matty", "matty's idea")
	post("finn", "finn's idea")
	if got := b.takeTold(); len(got) != 0 {
		t.Errorf("hidden findings were shown: %q", got)
	}
	if got := strings.Join(seen("matty"), "|"); got != "shared before|matty's idea" {
		t.Errorf("matty sees %q", got)
	}
	if got := strings.Join(seen("finn"), "|"); got != "shared before|finn's idea" {
		t.Errorf("finn sees %q", got)
	}
	c, err := b.Release(ctx, room, "")
	if err != nil || c.Ended == nil || c.Ended.Name != "diverge" || len(c.Released) != 2 {
		t.Fatalf("release = %+v, %v", c, err)
	}
	if got := strings.Join(b.takeTold(), "|"); got != room+": matty's idea|"+room+": finn's idea" {
		t.Errorf("at release the watchers were told %q", got)
	}
	for _, bot := range []string{"matty", "finn", "priest"} {
		if got := strings.Join(seen(bot), "|"); got != "shared before|matty's idea|finn's idea" {
			t.Errorf("after release %s sees %q", bot, got)
		}
	}
	if _, err := b.Release(ctx, room, ""); !errors.Is(err, findings.ErrNoStage) {
		t.Errorf("second release: %v, want ErrNoStage", err)
	}
	b.SetInject(1)
	if got := seen("priest"); len(got) != 1 || got[0] != "finn's idea" {
		t.Errorf("with inject 1, priest sees %q", got)
	}
	b.SetInject(0)
	if got := seen("priest"); len(got) != 0 {
		t.Errorf("with inject 0, priest sees %q", got)
	}
	if _, err := b.StartStage(ctx, room, "two words", false, ""); !errors.Is(err, world.ErrInvalid) {
		t.Errorf("a stage name with a space: %v", err)
	}
}

func TestAction(t *testing.T) {
	b := newBoard(t)
	reg := actions.New()
	if err := reg.Register(findings.Action(b.Board)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	turn := reg.Bind(actions.Caller{Bot: "matty", User: "ann", Space: "user:ann"})
	out, err := turn.Call(ctx, "post_finding", json.RawMessage(`{"text": "The auth module uses JWT with 24h expiry", "severity": "high"}`))
	if err != nil || !strings.Contains(out, "Posted finding") {
		t.Fatalf("post_finding = %q, %v", out, err)
	}
	_, err = turn.Call(ctx, "post_finding", json.RawMessage(`{"text": "x", "severity": "hgh"}`))
	var ae *actions.ArgumentError
	if !errors.As(err, &ae) || ae.Arg != "severity" || !strings.Contains(err.Error(), "low, medium, high, critical") {
		t.Errorf("bad severity: %v", err)
	}
	_, err = turn.Call(ctx, "post_finding", json.RawMessage(`{"text": "`+strings.Repeat("x", findings.MaxText+1)+`"}`))
	if !errors.As(err, &ae) || ae.Arg != "text" || !strings.Contains(err.Error(), "at most 4000 characters") {
		t.Errorf("a finding over 4000 characters: %v", err)
	}
	_, err = turn.Call(ctx, "post_finding", json.RawMessage(`{"text": "   "}`))
	if !errors.As(err, &ae) || ae.Arg != "text" {
		t.Errorf("a blank finding: %v", err)
	}
	if _, err := b.StartStage(ctx, "user:ann", "quiet", true, ""); err != nil {
		t.Fatal(err)
	}
	out, err = turn.Call(ctx, "post_finding", json.RawMessage(`{"text": "kept to myself"}`))
	if err != nil || !strings.Contains(out, "isolated") {
		t.Errorf("post_finding in an isolated stage = %q, %v", out, err)
	}
	fs, _ := b.List(ctx, findings.Query{Space: "user:ann", Hidden: true, Limit: 10})
	if len(fs) != 2 || fs[0].Bot != "matty" || fs[0].Severity != "high" || fs[1].Severity != "medium" || fs[1].Visible {
		t.Errorf("board = %+v", fs)
	}
}
