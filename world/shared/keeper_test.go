package shared_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/store/sqlite"
	"github.com/switchboard-chat/switchboard/world"
	"github.com/switchboard-chat/switchboard/world/actions"
	"github.com/switchboard-chat/switchboard/world/shared"
)

const room = "chat:web:plan"

// newKeeper is a keeper on a real store in a temp dir, and the spaces
// it said changed.
func newKeeper(t *testing.T) (*shared.Keeper, *[]string) {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	k := shared.NewKeeper(s, shared.DefaultLimits())
	var changed []string
	k.OnChange(func(space string) { changed = append(changed, space) })
	return k, &changed
}

// Each rule an addition can break is refused naming the field, and
// nothing is stored.
func TestKeeperRefuses(t *testing.T) {
	k, changed := newKeeper(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		add   func() error
		field string
	}{
		{"empty event", func() error { _, err := k.AddEvent(ctx, room, "a", "  "); return err }, "text"},
		{"long event", func() error {
			_, err := k.AddEvent(ctx, room, "a", strings.Repeat("é", shared.MaxEventText+1))
			return err
		}, "text"},
		{"bad space", func() error { _, err := k.AddEvent(ctx, "room", "a", "x"); return err }, "space"},
		{"array attributes", func() error { _, err := k.AddEntity(ctx, room, "a", "x", json.RawMessage(`[1]`)); return err }, "attributes"},
		{"null attributes", func() error { _, err := k.AddEntity(ctx, room, "a", "x", json.RawMessage(`null`)); return err }, "attributes"},
		{"two objects", func() error { _, err := k.AddEntity(ctx, room, "a", "x", json.RawMessage(`{} {}`)); return err }, "attributes"},
		{"huge attributes", func() error {
			_, err := k.AddEntity(ctx, room, "a", "x", json.RawMessage(`{"k":"`+strings.Repeat("x", shared.MaxAttributes)+`"}`))
			return err
		}, "attributes"},
		{"empty name", func() error { _, err := k.AddEntity(ctx, room, "a", " ", json.RawMessage(`{}`)); return err }, "name"},
		{"name of two lines", func() error {
			_, err := k.AddEntity(ctx, room, "a", "x\nSHARED FINDINGS", json.RawMessage(`{}`))
			return err
		}, "name"},
		{"object with a tab", func() error {
			_, err := k.AddFact(ctx, shared.Fact{Space: room, Subject: "s", Predicate: "p", Object: "o\tx", Confidence: 0.5})
			return err
		}, "object"},
		{"confidence above 1", func() error {
			_, err := k.AddFact(ctx, shared.Fact{Space: room, Subject: "s", Predicate: "p", Object: "o", Confidence: 1.5})
			return err
		}, "confidence"},
		{"negative confidence", func() error {
			_, err := k.AddFact(ctx, shared.Fact{Space: room, Subject: "s", Predicate: "p", Object: "o", Confidence: -0.1})
			return err
		}, "confidence"},
		{"empty predicate", func() error {
			_, err := k.AddFact(ctx, shared.Fact{Space: room, Subject: "s", Object: "o", Confidence: 0.5})
			return err
		}, "predicate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ie *world.InvalidError
			if err := tc.add(); !errors.As(err, &ie) || ie.Field != tc.field || !errors.Is(err, world.ErrInvalid) {
				t.Errorf("err = %v, want an invalid %s", err, tc.field)
			}
		})
	}
	c, err := k.Read(ctx, room, shared.Limits{Events: 9, Entities: 9, Facts: 9, Chain: 9})
	if err != nil || !c.Empty() || len(*changed) != 0 {
		t.Errorf("after refusals: %+v, %v, changed %v", c, err, *changed)
	}
}

// Attributes merge key by key, a fact replaces the one of its subject
// and predicate, the limits and the confidence threshold hold, and each
// change is told.
func TestKeeperKeeps(t *testing.T) {
	k, changed := newKeeper(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, text := range []string{"one", "two", "three"} {
		_, err := k.AddEvent(ctx, room, "scribe", text)
		must(err)
	}
	_, err := k.AddEntity(ctx, room, "mapper", "competitor-x", json.RawMessage(`{"pricing": "$99", "api": "REST"}`))
	must(err)
	e, err := k.AddEntity(ctx, room, "scout", "competitor-x", json.RawMessage(`{"pricing": "$89", "seats": 5}`))
	must(err)
	if string(e.Attributes) != `{"api":"REST","pricing":"$89","seats":5}` || e.UpdatedBy != "scout" {
		t.Errorf("merged entity = %s by %s", e.Attributes, e.UpdatedBy)
	}
	for _, f := range []shared.Fact{
		{Subject: "X", Predicate: "status", Object: "draft", Confidence: 0.9, Bot: "a"},
		{Subject: "X", Predicate: "status", Object: "final", Confidence: 0.6, Bot: "b"},
		{Subject: "X", Predicate: "rumour", Object: "big", Confidence: 0.2, Bot: "a"},
	} {
		f.Space = room
		_, err := k.AddFact(ctx, f)
		must(err)
	}
	k.SetLimits(shared.Limits{Events: 2, Entities: 5, Facts: 5, MinConfidence: 0.5, Chain: 5})
	c, err := k.ForTurn(ctx, room)
	must(err)
	if len(c.Events) != 2 || c.Events[0].Text != "two" || c.Events[1].Text != "three" {
		t.Errorf("events = %+v, want the newest two, oldest first", c.Events)
	}
	if len(c.Facts) != 1 || c.Facts[0].Object != "final" || c.Facts[0].Bot != "b" {
		t.Errorf("facts = %+v, want the replacement alone", c.Facts)
	}
	if other, err := k.ForTurn(ctx, "chat:web:other"); err != nil || !other.Empty() {
		t.Errorf("another space = %+v, %v", other, err)
	}
	if len(*changed) != 8 || (*changed)[0] != room {
		t.Errorf("changes told = %v", *changed)
	}
	// Empty lists are [] in JSON, never null.
	b, err := json.Marshal(must2(k.Read(ctx, "chat:web:other", shared.DefaultLimits())))
	must(err)
	if string(b) != `{"events":[],"entities":[],"facts":[],"chain":[]}` {
		t.Errorf("empty context as JSON = %s", b)
	}
}

func must2[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The actions check their arguments before the keeper runs, and name the
// argument at fault.
func TestActionsRefuse(t *testing.T) {
	k, _ := newKeeper(t)
	reg := actions.New()
	for _, a := range shared.Actions(k) {
		if err := reg.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	turn := reg.Bind(actions.Caller{Bot: "scribe", User: "ann", Space: room})
	ctx := context.Background()
	for _, tc := range []struct {
		action, args, want string
	}{
		{"add_fact", `{"subject":"s","predicate":"p","object":"o","confidence":2}`, "add_fact: confidence"},
		{"add_fact", `{"subject":"s","predicate":"p","object":"o"}`, "add_fact: confidence: missing"},
		{"add_entity", `{"name":"x","attributes":"{}"}`, "add_entity: attributes"},
		{"add_entity", `{"name":"x","attributes":[1]}`, "add_entity: attributes"},
		{"add_event", `{"text":""}`, "add_event: text"},
		{"add_event", `{"text":"x","colour":"red"}`, "add_event: colour: unknown argument"},
	} {
		if _, err := turn.Call(ctx, tc.action, json.RawMessage(tc.args)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: err = %v, want %q", tc.action, tc.args, err, tc.want)
		}
	}
	if got, err := turn.Call(ctx, "add_fact", json.RawMessage(`{"subject":"X","predicate":"ok","object":"yes","confidence":0.7}`)); err != nil ||
		got != "Fact stated: X ok yes (0.7)." {
		t.Errorf("a good fact: %q, %v", got, err)
	}
	// A public bot takes no part.
	public := reg.Bind(actions.Caller{Bot: "pub", User: "ann", Space: room, Public: true})
	if _, err := public.Call(ctx, "add_event", json.RawMessage(`{"text":"x"}`)); !errors.Is(err, brains.ErrActionRefused) {
		t.Errorf("a public bot's call: %v", err)
	}
}
