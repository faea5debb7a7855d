package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/world/findings"
)

// finding is a finding of bot in space, to add.
func finding(space, bot, text string) findings.Finding {
	return findings.Finding{Space: space, Bot: bot, Text: text, Severity: findings.High, CreatedAt: now()}
}

func addFinding(t *testing.T, s Store, f findings.Finding) findings.Finding {
	t.Helper()
	got, err := s.AddFinding(context.Background(), f)
	if err != nil {
		t.Fatalf("add finding %q: %v", f.Text, err)
	}
	return got
}

// findingTexts lists the texts of what q selects.
func findingTexts(t *testing.T, s Store, q findings.Query) []string {
	t.Helper()
	fs, err := s.Findings(context.Background(), q)
	if err != nil {
		t.Fatalf("findings %+v: %v", q, err)
	}
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Text)
	}
	return out
}

// testFindings: findings are kept by space, oldest first, the newest
// limit of them, by author; with no stage running each is visible at
// once and has no stage.
func testFindings(t *testing.T, f Factory) {
	s := f.New(t)
	const ann, bob = "user:ann", "chat:web:lobby"
	first := addFinding(t, s, finding(ann, "matty", "JWT with 24h expiry"))
	if first.ID == 0 || !first.Visible || first.Stage != "" || first.Severity != findings.High || first.Space != ann {
		t.Errorf("added = %+v; want an ID, visible, no stage", first)
	}
	second := addFinding(t, s, finding(ann, "finn", "race in reconnect"))
	addFinding(t, s, finding(bob, "matty", "the lobby's own"))
	third := addFinding(t, s, finding(ann, "matty", "tests at 89%"))
	if !(first.ID < second.ID && second.ID < third.ID) {
		t.Errorf("IDs %d, %d, %d do not grow", first.ID, second.ID, third.ID)
	}
	for _, tc := range []struct {
		q    findings.Query
		want []string
	}{
		{findings.Query{Space: ann, Limit: 10}, []string{"JWT with 24h expiry", "race in reconnect", "tests at 89%"}},
		{findings.Query{Space: ann, Limit: 2}, []string{"race in reconnect", "tests at 89%"}},
		{findings.Query{Space: ann, Bot: "matty", Limit: 10}, []string{"JWT with 24h expiry", "tests at 89%"}},
		{findings.Query{Space: bob, Limit: 10}, []string{"the lobby's own"}},
		{findings.Query{Limit: 2}, []string{"the lobby's own", "tests at 89%"}},
		{findings.Query{Space: "user:nobody", Limit: 10}, []string{}},
	} {
		if got := findingTexts(t, s, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("findings %+v = %q, want %q", tc.q, got, tc.want)
		}
	}
	got, err := s.Findings(context.Background(), findings.Query{Space: ann, Limit: 1})
	if err != nil || len(got) != 1 || got[0] != third {
		t.Errorf("stored finding = %+v, %v; want %+v", got, err, third)
	}
	if one, err := s.Finding(context.Background(), second.ID); err != nil || one != second {
		t.Errorf("finding %d = %+v, %v; want %+v", second.ID, one, err, second)
	}
	if _, err := s.Finding(context.Background(), third.ID+100); !errors.Is(err, findings.ErrNotFound) {
		t.Errorf("an unknown finding: %v, want ErrNotFound", err)
	}
	s = f.Reopen(t, s)
	if got := findingTexts(t, s, findings.Query{Space: bob, Limit: 10}); !slices.Equal(got, []string{"the lobby's own"}) {
		t.Errorf("after reopen: %q", got)
	}
}

// testStages: during an isolated stage each bot sees only its own
// findings; ending it shows them all at once; an open stage's findings
// are visible at once; a new stage ends the running one.
func testStages(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	const room = "chat:web:lobby"
	addFinding(t, s, finding(room, "matty", "before"))
	if _, ok, err := s.RunningStage(ctx, room); err != nil || ok {
		t.Fatalf("running stage before any = %v, %v", ok, err)
	}
	c, err := s.StartStage(ctx, findings.StageStart{Space: room, Name: "diverge", Isolated: true, At: now()})
	if err != nil || c.Started == nil || c.Started.Name != "diverge" || !c.Started.Isolated || c.Ended != nil || c.Repeat {
		t.Fatalf("start = %+v, %v", c, err)
	}
	a := addFinding(t, s, finding(room, "matty", "matty's idea"))
	b := addFinding(t, s, finding(room, "finn", "finn's idea"))
	addFinding(t, s, finding("chat:web:other", "finn", "elsewhere"))
	if a.Visible || a.Stage != "diverge" || b.Visible {
		t.Errorf("posted in an isolated stage: %+v, %+v; want hidden, stage diverge", a, b)
	}
	for _, tc := range []struct {
		q    findings.Query
		want []string
	}{
		{findings.Query{Space: room, Viewer: "matty", Limit: 10}, []string{"before", "matty's idea"}},
		{findings.Query{Space: room, Viewer: "finn", Limit: 10}, []string{"before", "finn's idea"}},
		{findings.Query{Space: room, Viewer: "priest", Limit: 10}, []string{"before"}},
		{findings.Query{Space: room, Limit: 10}, []string{"before"}},
		{findings.Query{Space: room, Hidden: true, Limit: 10}, []string{"before", "matty's idea", "finn's idea"}},
	} {
		if got := findingTexts(t, s, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("during the stage, findings %+v = %q, want %q", tc.q, got, tc.want)
		}
	}
	run, ok, err := s.RunningStage(ctx, room)
	if err != nil || !ok || run.ID != c.Started.ID || !run.EndedAt.IsZero() {
		t.Errorf("running stage = %+v, %v, %v", run, ok, err)
	}

	s = f.Reopen(t, s)
	end, err := s.EndStage(ctx, room, "", now())
	if err != nil || end.Ended == nil || end.Ended.ID != c.Started.ID || end.Ended.EndedAt.IsZero() || end.Started != nil {
		t.Fatalf("end = %+v, %v", end, err)
	}
	var released []string
	for _, f := range end.Released {
		if !f.Visible || f.Stage != "diverge" {
			t.Errorf("released %+v; want visible, stage kept", f)
		}
		released = append(released, f.Text)
	}
	if !slices.Equal(released, []string{"matty's idea", "finn's idea"}) {
		t.Errorf("released %q", released)
	}
	if got := findingTexts(t, s, findings.Query{Space: room, Limit: 10}); !slices.Equal(got, []string{"before", "matty's idea", "finn's idea"}) {
		t.Errorf("after release: %q", got)
	}
	if again, err := s.EndStage(ctx, room, "", now()); err != nil || again.Ended != nil || len(again.Released) > 0 {
		t.Errorf("end with none running = %+v, %v", again, err)
	}

	// An open stage; a new one ends it.
	if _, err := s.StartStage(ctx, findings.StageStart{Space: room, Name: "converge", At: now()}); err != nil {
		t.Fatal(err)
	}
	open := addFinding(t, s, finding(room, "priest", "cluster 1"))
	if !open.Visible || open.Stage != "converge" {
		t.Errorf("posted in an open stage: %+v", open)
	}
	if _, err := s.StartStage(ctx, findings.StageStart{Space: room, Name: "quiet", Isolated: true, At: now()}); err != nil {
		t.Fatal(err)
	}
	addFinding(t, s, finding(room, "priest", "hidden at the end"))
	next, err := s.StartStage(ctx, findings.StageStart{Space: room, Name: "review", At: now()})
	if err != nil || next.Ended == nil || next.Ended.Name != "quiet" || len(next.Released) != 1 || next.Released[0].Text != "hidden at the end" {
		t.Errorf("start over a running stage = %+v, %v; want quiet ended and released", next, err)
	}
	stages, err := s.RunningStages(ctx)
	if err != nil || len(stages) != 1 || stages[0].Name != "review" || stages[0].Space != room {
		t.Errorf("running stages = %+v, %v", stages, err)
	}
}

// testStageKeys: a command carried out once is not carried out again
// when it arrives a second time (to another bot of the group).
func testStageKeys(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	const room = "chat:telegram:-100"
	at := now()
	first, err := s.StartStage(ctx, findings.StageStart{Space: room, Name: "diverge", Isolated: true, Key: "telegram:-100:7", At: at})
	if err != nil || first.Repeat {
		t.Fatalf("start = %+v, %v", first, err)
	}
	addFinding(t, s, finding(room, "matty", "idea"))
	again, err := s.StartStage(ctx, findings.StageStart{Space: room, Name: "diverge", Isolated: true, Key: "telegram:-100:7", At: at.Add(time.Second)})
	if err != nil || !again.Repeat || again.Started == nil || again.Started.ID != first.Started.ID || again.Ended != nil {
		t.Errorf("the same start again = %+v, %v; want a repeat of the first", again, err)
	}
	if got := findingTexts(t, s, findings.Query{Space: room, Limit: 10}); len(got) != 0 {
		t.Errorf("a repeated start released %q", got)
	}
	end, err := s.EndStage(ctx, room, "telegram:-100:8", now())
	if err != nil || end.Repeat || len(end.Released) != 1 {
		t.Fatalf("release = %+v, %v", end, err)
	}
	if _, err := s.StartStage(ctx, findings.StageStart{Space: room, Name: "next", Key: "telegram:-100:9", At: now()}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.EndStage(ctx, room, "telegram:-100:8", now())
	if err != nil || !rep.Repeat || rep.Ended == nil || rep.Ended.Name != "diverge" {
		t.Errorf("the same release again = %+v, %v; want a repeat naming diverge", rep, err)
	}
	if run, ok, _ := s.RunningStage(ctx, room); !ok || run.Name != "next" {
		t.Errorf("a repeated release ended %+v", run)
	}
}
