package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world"
	"github.com/switchboard-chat/switchboard/world/shared"
)

// all reads everything of a space.
var all = shared.Limits{Events: 100, Entities: 100, Facts: 100, Chain: 100}

const (
	lab   = "chat:web:lab"
	annsp = "user:ann"
)

func sharedContext(t *testing.T, s Store, space string, l shared.Limits) shared.Context {
	t.Helper()
	c, err := s.SharedContext(context.Background(), space, l)
	if err != nil {
		t.Fatalf("shared context of %s: %v", space, err)
	}
	// The contract's forms: lists never nil, times in UTC.
	if c.Events == nil || c.Entities == nil || c.Facts == nil || c.Chain == nil {
		t.Errorf("shared context of %s has a nil list: %+v", space, c)
	}
	for _, e := range c.Events {
		utc(t, "event", e.Time)
	}
	for _, e := range c.Entities {
		utc(t, "entity", e.UpdatedAt)
	}
	for _, f := range c.Facts {
		utc(t, "fact", f.Time)
	}
	for _, st := range c.Chain {
		utc(t, "step", st.Time)
		if st.Inputs == nil || st.Outputs == nil {
			t.Errorf("step %d has a nil list of files: %+v", st.Step, st)
		}
	}
	return c
}

func utc(t *testing.T, what string, at time.Time) {
	t.Helper()
	if at.Location() != time.UTC {
		t.Errorf("%s time %v is not in UTC", what, at)
	}
}

func addEvent(t *testing.T, s Store, space, bot, text string) shared.Event {
	t.Helper()
	e, err := s.AddEvent(context.Background(), shared.Event{Space: space, Bot: bot, Text: text, Time: now()})
	if err != nil {
		t.Fatalf("add event %q: %v", text, err)
	}
	return e
}

func mergeEntity(t *testing.T, s Store, space, name, bot, attrs string) shared.Entity {
	t.Helper()
	e, err := s.MergeEntity(context.Background(), shared.Entity{Space: space, Name: name, UpdatedBy: bot,
		Attributes: json.RawMessage(attrs), UpdatedAt: now()})
	if err != nil {
		t.Fatalf("merge entity %s %s: %v", name, attrs, err)
	}
	return e
}

func putFact(t *testing.T, s Store, space, subject, predicate, object string, confidence float64, bot string) shared.Fact {
	t.Helper()
	f, err := s.PutFact(context.Background(), shared.Fact{Space: space, Subject: subject, Predicate: predicate,
		Object: object, Confidence: confidence, Bot: bot, Time: now()})
	if err != nil {
		t.Fatalf("put fact %s %s: %v", subject, predicate, err)
	}
	return f
}

func eventTexts(es []shared.Event) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Bot+": "+e.Text)
	}
	return out
}

func entityLines(es []shared.Entity) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Name+" "+string(e.Attributes)+" by "+e.UpdatedBy)
	}
	return out
}

func factLines(fs []shared.Fact) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s %s %s (%v, %s)", f.Subject, f.Predicate, f.Object, f.Confidence, f.Bot))
	}
	return out
}

// testSharedContext: events, entities and facts are kept per space and
// read newest within each limit, oldest first; an entity's attributes
// merge key by key; a fact replaces the space's fact of the same subject
// and predicate; the confidence filter keeps the facts at or above it;
// what is stored survives a reopen (SPEC §10.7).
func testSharedContext(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	if c := sharedContext(t, s, lab, all); !c.Empty() {
		t.Errorf("an empty store's context = %+v", c)
	}

	// Events: the lab's timeline and ann's own.
	first := addEvent(t, s, lab, "researcher", "started the competitor survey")
	if first.ID == 0 || first.Space != lab || first.Bot != "researcher" || first.Time.IsZero() {
		t.Errorf("added event = %+v", first)
	}
	second := addEvent(t, s, lab, "coder", "compared the APIs")
	if second.ID <= first.ID {
		t.Errorf("a later event's ID %d is not greater than %d", second.ID, first.ID)
	}
	addEvent(t, s, annsp, "matty", "ann's own")
	addEvent(t, s, lab, "auditor", "validated both")
	// A zero time is the store's clock.
	if e, err := s.AddEvent(ctx, shared.Event{Space: "chat:web:other", Bot: "x", Text: "now"}); err != nil || e.Time.IsZero() {
		t.Errorf("an event without a time = %+v, %v", e, err)
	}

	// Entities: a key replaced, another kept, a new one added.
	x := mergeEntity(t, s, lab, "competitor-x", "researcher", `{"pricing": "$99/month", "founded": 2019}`)
	if string(x.Attributes) != `{"founded":2019,"pricing":"$99/month"}` || x.UpdatedBy != "researcher" || x.Space != lab {
		t.Errorf("new entity = %s %+v", x.Attributes, x)
	}
	mergeEntity(t, s, lab, "competitor-y", "researcher", `{"pricing":"free"}`)
	x = mergeEntity(t, s, lab, "competitor-x", "auditor", `{"pricing":"$89/month","employees":40,"notes":{"b":1,"a":[true,null]}}`)
	wantX := `{"employees":40,"founded":2019,"notes":{"a":[true,null],"b":1},"pricing":"$89/month"}`
	if string(x.Attributes) != wantX || x.UpdatedBy != "auditor" {
		t.Errorf("merged entity = %s by %s; want %s by auditor", x.Attributes, x.UpdatedBy, wantX)
	}
	// Names differ by case: two entities. Another space: its own.
	mergeEntity(t, s, lab, "Competitor-X", "coder", `{}`)
	mergeEntity(t, s, annsp, "competitor-x", "matty", `{"seen":true}`)
	// Attributes that are not an object are refused, changing nothing.
	for _, bad := range []string{`[1]`, `null`, `"x"`, `{"a":`, ``} {
		_, err := s.MergeEntity(ctx, shared.Entity{Space: lab, Name: "competitor-x", UpdatedBy: "coder", Attributes: json.RawMessage(bad), UpdatedAt: now()})
		if !errors.Is(err, world.ErrInvalid) {
			t.Errorf("merging %q: %v, want ErrInvalid", bad, err)
		}
	}

	// Facts: one replaced by subject and predicate, another predicate
	// kept; confidences below the minimum left out.
	putFact(t, s, lab, "CompetitorX", "pricing", "$99/month", 0.4, "researcher")
	putFact(t, s, lab, "CompetitorX", "pricing_valid", "true", 0.95, "auditor")
	putFact(t, s, lab, "CompetitorY", "size", "small", 0.3, "researcher")
	putFact(t, s, annsp, "ann", "likes", "trains", 0.9, "matty")
	replaced := putFact(t, s, lab, "CompetitorX", "pricing", "$89/month", 0.8, "coder")
	if replaced.Object != "$89/month" || replaced.Space != lab || replaced.Time.IsZero() {
		t.Errorf("put fact = %+v", replaced)
	}

	check := func(s Store) {
		t.Helper()
		c := sharedContext(t, s, lab, all)
		if got, want := eventTexts(c.Events), []string{"researcher: started the competitor survey", "coder: compared the APIs",
			"auditor: validated both"}; !slices.Equal(got, want) {
			t.Errorf("lab's events = %q, want %q", got, want)
		}
		if got, want := entityLines(c.Entities), []string{`competitor-y {"pricing":"free"} by researcher`,
			"competitor-x " + wantX + " by auditor", `Competitor-X {} by coder`}; !slices.Equal(got, want) {
			t.Errorf("lab's entities = %q\nwant %q", got, want)
		}
		if got, want := factLines(c.Facts), []string{"CompetitorX pricing_valid true (0.95, auditor)",
			"CompetitorY size small (0.3, researcher)", "CompetitorX pricing $89/month (0.8, coder)"}; !slices.Equal(got, want) {
			t.Errorf("lab's facts = %q\nwant %q", got, want)
		}
		if len(c.Chain) != 0 {
			t.Errorf("lab's chain = %+v, want none", c.Chain)
		}
		// Ann's space has only its own.
		c = sharedContext(t, s, annsp, all)
		if got := eventTexts(c.Events); !slices.Equal(got, []string{"matty: ann's own"}) {
			t.Errorf("ann's events = %q", got)
		}
		if got := entityLines(c.Entities); !slices.Equal(got, []string{`competitor-x {"seen":true} by matty`}) {
			t.Errorf("ann's entities = %q", got)
		}
		if got := factLines(c.Facts); !slices.Equal(got, []string{"ann likes trains (0.9, matty)"}) {
			t.Errorf("ann's facts = %q", got)
		}
	}
	check(s)

	// Each limit keeps the newest, oldest first; 0 keeps none.
	for _, tc := range []struct {
		l                      shared.Limits
		events, entities, facs []string
	}{
		{shared.Limits{Events: 2, Entities: 1, Facts: 1},
			[]string{"coder: compared the APIs", "auditor: validated both"},
			[]string{`Competitor-X {} by coder`},
			[]string{"CompetitorX pricing $89/month (0.8, coder)"}},
		{shared.Limits{Events: 1, Entities: 2, Facts: 100, MinConfidence: 0.5},
			[]string{"auditor: validated both"},
			[]string{"competitor-x " + wantX + " by auditor", `Competitor-X {} by coder`},
			[]string{"CompetitorX pricing_valid true (0.95, auditor)", "CompetitorX pricing $89/month (0.8, coder)"}},
		// The minimum itself is kept.
		{shared.Limits{Facts: 100, MinConfidence: 0.95}, nil, nil, []string{"CompetitorX pricing_valid true (0.95, auditor)"}},
		{shared.Limits{Facts: 100, MinConfidence: 1}, nil, nil, nil},
		{shared.Limits{MinConfidence: 0}, nil, nil, nil},
	} {
		c := sharedContext(t, s, lab, tc.l)
		if got := eventTexts(c.Events); !slices.Equal(got, tc.events) {
			t.Errorf("events within %+v = %q, want %q", tc.l, got, tc.events)
		}
		if got := entityLines(c.Entities); !slices.Equal(got, tc.entities) {
			t.Errorf("entities within %+v = %q, want %q", tc.l, got, tc.entities)
		}
		if got := factLines(c.Facts); !slices.Equal(got, tc.facs) {
			t.Errorf("facts within %+v = %q, want %q", tc.l, got, tc.facs)
		}
	}
	check(f.Reopen(t, s))
}

// spaceHandoff is a queued hand-off of task from matty to producer in
// space, through the API, taking inputs.
func spaceHandoff(id, space, producer, task string, inputs ...string) sessions.Handoff {
	h := handoff(id, task, nil)
	h.Record.Space, h.Record.To, h.Record.Inputs = space, producer, inputs
	h.Target = userKey(producer, "ann")
	return h
}

// runHandoff starts h, runs it and ends it with status, its turn
// producing arts; it returns the record as stored.
func runHandoff(t *testing.T, s Store, h sessions.Handoff, status string, arts ...chat.Artifact) delegation.Record {
	t.Helper()
	ctx := context.Background()
	turns, err := s.StartDelegations(ctx, []sessions.Handoff{h})
	if err != nil || len(turns) != 1 {
		t.Fatalf("start %s: %+v, %v", h.Record.ID, turns, err)
	}
	turn := nextTurn(t, s, turns[0].SessionID)
	if err := s.UpdateDelegation(ctx, delegation.Update{ID: h.Record.ID, Status: delegation.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	complete(t, s, sessions.Outcome{Turn: turn.Ref, Artifacts: arts,
		Update: &delegation.Update{ID: h.Record.ID, Status: status, Result: "ended " + status}})
	d, err := s.Delegation(ctx, h.Record.ID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// named is an artifact with a name of its own.
func named(id, name, producer string) chat.Artifact {
	a := artifact(id, producer)
	a.Name = name
	return a
}

// file is the chain's view of the artifact named made with: its ID,
// name, media type, size and hash.
func file(id, name string) shared.File {
	a := named(id, name, "")
	return shared.File{ID: a.ID, Name: a.Name, MediaType: a.MediaType, Size: a.Size, SHA256: a.SHA256}
}

// testSharedChain: a space's artifact chain is its hand-offs that ended
// done or failed — not refused, queued, running or help records, nor
// another space's — in the order they ended, numbered over all of them,
// each with its producer, task, status, end and the names and IDs of its
// inputs and outputs in the order stored; a limit keeps the newest.
func testSharedChain(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	// The research → code → audit flow of seed 001.
	research := runHandoff(t, s, spaceHandoff("dlg-c01", lab, "researcher", "survey the competitors"), delegation.StatusDone,
		named("art-comp", "competitors.json", "researcher"))
	// Outputs of one turn are stored together: by ID then.
	code := runHandoff(t, s, spaceHandoff("dlg-c02", lab, "coder", "compare the APIs", "art-comp"), delegation.StatusDone,
		named("art-api", "api-comparison.json", "coder"), named("art-notes", "notes.md", "coder"))
	// Inputs in the order the hand-off named them.
	audit := runHandoff(t, s, spaceHandoff("dlg-c03", lab, "auditor", "validate both", "art-api", "art-comp"), delegation.StatusFailed)

	// Not steps of the lab's chain: a hand-off in another space, one in
	// no space, a help request answered, one refused, one queued, one
	// running.
	other := runHandoff(t, s, spaceHandoff("dlg-o01", "chat:web:other", "coder", "elsewhere", "art-comp"), delegation.StatusDone,
		named("art-o", "other.json", "coder"))
	runHandoff(t, s, spaceHandoff("dlg-n01", "", "coder", "nowhere"), delegation.StatusDone)
	help := spaceHandoff("dlg-h01", lab, "priest", "what is the auth pattern?")
	help.Record.Kind = delegation.KindHelp
	runHandoff(t, s, help, delegation.StatusDone)
	refused := spaceHandoff("dlg-r01", lab, "priest", "no")
	refused.Record.Status, refused.Record.Error = delegation.StatusRefused, "not allowed"
	queued := spaceHandoff("dlg-q01", lab, "finn", "later")
	running := spaceHandoff("dlg-u01", lab, "matty", "busy")
	if _, err := s.StartDelegations(ctx, []sessions.Handoff{refused, queued, running}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateDelegation(ctx, delegation.Update{ID: "dlg-u01", Status: delegation.StatusRunning}); err != nil {
		t.Fatal(err)
	}

	want := []shared.Step{
		{Step: 1, DelegationID: "dlg-c01", Producer: "researcher", Task: "survey the competitors", Status: delegation.StatusDone,
			Time: research.EndedAt, Inputs: []shared.File{}, Outputs: []shared.File{file("art-comp", "competitors.json")}},
		{Step: 2, DelegationID: "dlg-c02", Producer: "coder", Task: "compare the APIs", Status: delegation.StatusDone,
			Time: code.EndedAt, Inputs: []shared.File{file("art-comp", "competitors.json")},
			Outputs: []shared.File{file("art-api", "api-comparison.json"), file("art-notes", "notes.md")}},
		{Step: 3, DelegationID: "dlg-c03", Producer: "auditor", Task: "validate both", Status: delegation.StatusFailed,
			Time: audit.EndedAt, Inputs: []shared.File{file("art-api", "api-comparison.json"), file("art-comp", "competitors.json")},
			Outputs: []shared.File{}},
	}
	for i, d := range []delegation.Record{research, code, audit} {
		if d.EndedAt.IsZero() || i > 0 && d.EndedAt.Before(want[i-1].Time) {
			t.Fatalf("record %s ended at %v", d.ID, d.EndedAt)
		}
	}
	check := func(s Store) {
		t.Helper()
		for _, tc := range []struct {
			limit int
			want  []shared.Step
		}{{100, want}, {3, want}, {2, want[1:]}, {1, want[2:]}, {0, []shared.Step{}}} {
			c := sharedContext(t, s, lab, shared.Limits{Chain: tc.limit})
			if !reflect.DeepEqual(c.Chain, tc.want) {
				t.Errorf("lab's chain of %d steps =\n%+v\nwant\n%+v", tc.limit, c.Chain, tc.want)
			}
			if len(c.Events)+len(c.Entities)+len(c.Facts) != 0 {
				t.Errorf("limits %d read more than the chain: %+v", tc.limit, c)
			}
		}
		c := sharedContext(t, s, "chat:web:other", all)
		wantOther := []shared.Step{{Step: 1, DelegationID: "dlg-o01", Producer: "coder", Task: "elsewhere", Status: delegation.StatusDone,
			Time: other.EndedAt, Inputs: []shared.File{file("art-comp", "competitors.json")},
			Outputs: []shared.File{file("art-o", "other.json")}}}
		if !reflect.DeepEqual(c.Chain, wantOther) {
			t.Errorf("the other space's chain = %+v, want %+v", c.Chain, wantOther)
		}
	}
	check(s)
	s = f.Reopen(t, s)
	check(s)

	// The running hand-off ends: the fourth step. Numbers count every
	// step however few are read: the newest two of four are 3 and 4.
	if err := s.UpdateDelegation(ctx, delegation.Update{ID: "dlg-u01", Status: delegation.StatusDone, Result: "ok"}); err != nil {
		t.Fatal(err)
	}
	c := sharedContext(t, s, lab, shared.Limits{Chain: 2})
	if len(c.Chain) != 2 || c.Chain[0].DelegationID != "dlg-c03" || c.Chain[0].Step != 3 ||
		c.Chain[1].DelegationID != "dlg-u01" || c.Chain[1].Step != 4 || c.Chain[1].Producer != "matty" ||
		c.Chain[1].Task != "busy" || len(c.Chain[1].Inputs) != 0 || len(c.Chain[1].Outputs) != 0 {
		t.Errorf("the newest two steps of four = %+v", c.Chain)
	}
}

// testDelegationProgress: a record keeps its space; progress is set only
// while the record runs, the newest kept; a record's end is set by its
// first final status (or at once for one stored refused) and never
// moves after.
func testDelegationProgress(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	// Asked in a turn: the hand-off stored with the outcome keeps its
	// space as the API's does.
	res := appendInbound(t, s, group("lab", "ann", "g1", "@matty research it", "matty"))
	turn := nextTurn(t, s, res.Turns[0].SessionID)
	h := handoff("dlg-p", "research it", &turn)
	h.Record.Space = lab
	refused := handoff("dlg-pr", "nothing", &turn)
	refused.Record.Space, refused.Record.Status, refused.Record.Error = lab, delegation.StatusRefused, "not allowed"
	o := reply(turn, "asking finn")
	o.Handoffs = []sessions.Handoff{h, refused}
	done := complete(t, s, o)

	d, err := s.Delegation(ctx, "dlg-p")
	if err != nil || d.Space != lab || !d.EndedAt.IsZero() || d.Progress != nil || d.Ref().Progress != nil {
		t.Errorf("queued record = %+v, %v", d, err)
	}
	if r, err := s.Delegation(ctx, "dlg-pr"); err != nil || r.Space != lab || r.EndedAt.IsZero() {
		t.Errorf("refused record = %+v, %v; want it ended", r, err)
	}
	if list, err := s.Delegations(ctx, delegation.Filter{IDs: []string{"dlg-p"}}); err != nil || len(list) != 1 || list[0].Space != lab {
		t.Errorf("listed record = %+v, %v", list, err)
	}

	step := delegation.Progress{Text: "Researching CompetitorX…", Step: 1, Total: 3}
	if err := s.SetDelegationProgress(ctx, "dlg-p", step); !errors.Is(err, delegation.ErrNotRunning) {
		t.Errorf("progress of a queued record: %v, want ErrNotRunning", err)
	}
	if err := s.SetDelegationProgress(ctx, "dlg-none", step); !errors.Is(err, delegation.ErrNotFound) {
		t.Errorf("progress of a missing record: %v, want ErrNotFound", err)
	}
	if err := s.SetDelegationProgress(ctx, "dlg-pr", step); !errors.Is(err, delegation.ErrNotRunning) {
		t.Errorf("progress of a refused record: %v, want ErrNotRunning", err)
	}
	if d, _ := s.Delegation(ctx, "dlg-p"); d.Progress != nil {
		t.Errorf("refused progress stored: %+v", d.Progress)
	}

	target := nextTurn(t, s, done.Turns[0].SessionID)
	if err := s.UpdateDelegation(ctx, delegation.Update{ID: "dlg-p", Status: delegation.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []delegation.Progress{step, {Text: "Writing competitors.json", Step: 2, Total: 3}, {Text: "Almost done"}} {
		if err := s.SetDelegationProgress(ctx, "dlg-p", p); err != nil {
			t.Fatal(err)
		}
		d, err := s.Delegation(ctx, "dlg-p")
		if err != nil || d.Progress == nil || *d.Progress != p || d.Ref().Progress == nil || *d.Ref().Progress != p || !d.EndedAt.IsZero() {
			t.Errorf("record after progress %+v = %+v, %v", p, d, err)
		}
	}
	// The turn's outcome ends it: its end is set, the newest progress
	// kept, and no more progress taken.
	complete(t, s, sessions.Outcome{Turn: target.Ref, Update: &delegation.Update{ID: "dlg-p", Status: delegation.StatusDone, Result: "ok"}})
	d, err = s.Delegation(ctx, "dlg-p")
	if err != nil || d.Status != delegation.StatusDone || d.EndedAt.IsZero() || d.Progress == nil || d.Progress.Text != "Almost done" {
		t.Fatalf("ended record = %+v, %v", d, err)
	}
	if err := s.SetDelegationProgress(ctx, "dlg-p", step); !errors.Is(err, delegation.ErrNotRunning) {
		t.Errorf("progress of a done record: %v, want ErrNotRunning", err)
	}
	// Later changes of status leave the end where it was.
	ended := d.EndedAt
	time.Sleep(3 * time.Millisecond)
	for _, st := range []string{delegation.StatusFailed, delegation.StatusDone} {
		if err := s.UpdateDelegation(ctx, delegation.Update{ID: "dlg-p", Status: st}); err != nil {
			t.Fatal(err)
		}
		if d, err := s.Delegation(ctx, "dlg-p"); err != nil || !d.EndedAt.Equal(ended) || d.Status != st {
			t.Errorf("record after %s again = %+v, %v; want it ended at %v", st, d, err, ended)
		}
	}
	s = f.Reopen(t, s)
	if d, err := s.Delegation(ctx, "dlg-p"); err != nil || !d.EndedAt.Equal(ended) || d.Space != lab || d.Progress == nil {
		t.Errorf("record after a reopen = %+v, %v", d, err)
	}
}

// testSharedEntityLimit: a merge whose attributes would come to more
// than shared.MaxAttributes bytes is refused as invalid, naming
// attributes, and the entity keeps what it had.
func testSharedEntityLimit(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	half := fmt.Sprintf(`{"%%s": "%s"}`, strings.Repeat("x", shared.MaxAttributes/2))
	first, err := s.MergeEntity(ctx, shared.Entity{Space: lab, Name: "big", Attributes: json.RawMessage(fmt.Sprintf(half, "a")), UpdatedBy: "a"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.MergeEntity(ctx, shared.Entity{Space: lab, Name: "big", Attributes: json.RawMessage(fmt.Sprintf(half, "b")), UpdatedBy: "b"})
	var ie *world.InvalidError
	if !errors.As(err, &ie) || ie.Field != "attributes" || !errors.Is(err, world.ErrInvalid) {
		t.Fatalf("a merge past the limit: %v", err)
	}
	c := sharedContext(t, s, lab, shared.Limits{Entities: 5})
	if len(c.Entities) != 1 || string(c.Entities[0].Attributes) != string(first.Attributes) || c.Entities[0].UpdatedBy != "a" {
		t.Errorf("after a refused merge the entity is %+v", c.Entities)
	}
}

// testSharedConcurrentMerge: merges into one entity at once keep every
// key each brought; facts put at once on one subject and predicate
// leave one of them.
func testSharedConcurrentMerge(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Go(func() {
			_, err := s.MergeEntity(ctx, shared.Entity{Space: lab, Name: "competitor-x", UpdatedBy: fmt.Sprint("bot", i),
				Attributes: json.RawMessage(fmt.Sprintf(`{"k%d":%d,"last":%d}`, i, i, i))})
			errs <- err
			_, err = s.PutFact(ctx, shared.Fact{Space: lab, Subject: "CompetitorX", Predicate: "pricing",
				Object: fmt.Sprint(i), Confidence: 1, Bot: fmt.Sprint("bot", i)})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c := sharedContext(t, s, lab, all)
	if len(c.Entities) != 1 {
		t.Fatalf("entities = %q", entityLines(c.Entities))
	}
	var attrs map[string]int
	if err := json.Unmarshal(c.Entities[0].Attributes, &attrs); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if attrs[fmt.Sprint("k", i)] != i {
			t.Errorf("attributes %s lack k%d", c.Entities[0].Attributes, i)
		}
	}
	if last := fmt.Sprint("bot", attrs["last"]); len(attrs) != n+1 || c.Entities[0].UpdatedBy != last {
		t.Errorf("attributes %s by %s: want the last merge's, by %s", c.Entities[0].Attributes, c.Entities[0].UpdatedBy, last)
	}
	if len(c.Facts) != 1 {
		t.Errorf("facts = %q, want one", factLines(c.Facts))
	}
}
