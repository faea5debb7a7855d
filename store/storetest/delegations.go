package storetest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/sessions"
)

// handoff is a queued hand-off of task from matty to finn for ann, asked
// in turn (nil: through the API).
func handoff(id, task string, turn *sessions.Turn) sessions.Handoff {
	h := sessions.Handoff{
		Record: delegation.Record{
			ID: id, Kind: delegation.KindHandoff, From: "matty", To: "finn", UserID: "ann", UserName: "Ann",
			Task: task, Depth: 1, Status: delegation.StatusQueued,
		},
		Target:  userKey("finn", "ann"),
		Wrapper: "DELEGATED TASK FROM MATTY\nTask: " + task,
	}
	if turn != nil {
		h.Record.Origin = turn.Message.Chat()
		h.Record.OriginSender = turn.Message.From.ID
		h.Record.FromSession = turn.Ref.SessionID
	} else {
		key := userKey("matty", "ann")
		h.FromSession = &key
	}
	return h
}

// testDelegations: a queued hand-off puts its wrapper and a turn in the
// target's session; a refused one is only recorded; records are read,
// listed, updated and, when their turn is gone, found open.
func testDelegations(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	res := appendInbound(t, s, private("ann", "matty", "m1", "tell finn to build it"))
	turn := nextTurn(t, s, res.Turns[0].SessionID)
	queued := handoff("dlg-1", "build it", &turn)
	refused := handoff("dlg-2", "nothing", &turn)
	refused.Record.Status, refused.Record.Error = delegation.StatusRefused, "not allowed"
	o := reply(turn, "Handing this to finn")
	o.Posts[0].Message.DelegationID = "dlg-1"
	o.Handoffs = []sessions.Handoff{queued, refused}
	done := complete(t, s, o)
	if len(done.Turns) != 1 {
		t.Fatalf("hand-offs queued %+v, want one turn", done.Turns)
	}
	if d := done.Outbox[0].Delegation; d == nil || d.ID != "dlg-1" || d.Status != delegation.StatusQueued || d.To != "finn" {
		t.Errorf("acknowledgement's delegation = %+v", d)
	}
	target := nextTurn(t, s, done.Turns[0].SessionID)
	if target.Session.Key != userKey("finn", "ann") || target.Text != "build it" || target.Message.Kind != chat.KindWrapper ||
		target.Message.Text != queued.Wrapper || target.Delegation == nil || target.Delegation.ID != "dlg-1" {
		t.Errorf("target's turn = %+v %q %+v delegation %+v", target.Session.Key, target.Text, target.Message, target.Delegation)
	}

	got, err := s.Delegation(ctx, "dlg-1")
	if err != nil {
		t.Fatal(err)
	}
	want := queued.Record
	if got.ID != want.ID || got.Kind != delegation.KindHandoff || got.From != "matty" || got.To != "finn" || got.UserID != "ann" ||
		got.UserName != "Ann" || got.Task != want.Task || got.Depth != 1 || got.Status != delegation.StatusQueued ||
		got.Origin != want.Origin || got.OriginSender != want.OriginSender || got.FromSession != want.FromSession ||
		got.Progress != nil || len(got.Inputs) != 0 || len(got.Artifacts) != 0 || got.CreatedAt.IsZero() {
		t.Errorf("record = %+v, want %+v", got, want)
	}
	if r, err := s.Delegation(ctx, "dlg-2"); err != nil || r.Status != delegation.StatusRefused || r.Error != "not allowed" {
		t.Errorf("refused record = %+v, %v", r, err)
	}
	if _, err := s.Delegation(ctx, "dlg-none"); !isNotFound(err, delegation.ErrNotFound) {
		t.Errorf("missing record: %v, want ErrNotFound", err)
	}

	for _, tc := range []struct {
		f    delegation.Filter
		want []string
	}{
		{delegation.Filter{}, []string{"dlg-1", "dlg-2"}},
		{delegation.Filter{Status: delegation.StatusRefused}, []string{"dlg-2"}},
		{delegation.Filter{UserIDs: []string{"bob"}}, nil},
		{delegation.Filter{UserIDs: []string{"web-ann", "ann"}, Limit: 1}, []string{"dlg-1"}},
		{delegation.Filter{IDs: []string{"dlg-2"}}, []string{"dlg-2"}},
		{delegation.Filter{IDs: []string{"dlg-1", "dlg-none", "dlg-2"}}, []string{"dlg-1", "dlg-2"}},
		{delegation.Filter{IDs: []string{"dlg-1"}, Status: delegation.StatusRefused}, nil},
	} {
		list, err := s.Delegations(ctx, tc.f)
		var ids []string
		for _, d := range list {
			ids = append(ids, d.ID)
		}
		slices.Sort(ids)
		if tc.f.Limit == 1 && len(ids) == 1 {
			ids = tc.want // newest first: either may be the newest when made in the same microsecond
		}
		if err != nil || !slices.Equal(ids, tc.want) {
			t.Errorf("delegations %+v = %v, %v; want %v", tc.f, ids, err, tc.want)
		}
	}

	if open, err := s.OpenDelegations(ctx); err != nil || len(open) != 0 {
		t.Errorf("open delegations while its turn waits = %+v, %v", open, err)
	}
	if err := s.UpdateDelegation(ctx, delegation.Update{ID: "dlg-1", Status: delegation.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateDelegation(ctx, delegation.Update{ID: "dlg-none", Status: delegation.StatusRunning}); !isNotFound(err, delegation.ErrNotFound) {
		t.Errorf("update a missing record: %v, want ErrNotFound", err)
	}
	// The target's turn ends without a word about it (a crash would
	// leave it so): the record is open work to settle.
	complete(t, s, sessions.Outcome{Turn: target.Ref})
	open, err := s.OpenDelegations(ctx)
	if err != nil || len(open) != 1 || open[0].ID != "dlg-1" || open[0].Status != delegation.StatusRunning {
		t.Fatalf("open delegations = %+v, %v", open, err)
	}
	// Settling it (an outcome without a turn) fails it and calls back.
	settled := complete(t, s, sessions.Outcome{
		Update: &delegation.Update{ID: "dlg-1", Status: delegation.StatusFailed, Error: "interrupted"},
		Notes: []sessions.Note{{Session: turn.Ref.SessionID, Message: chat.Message{
			Kind: chat.KindSystem, From: chat.Party{Kind: chat.System, ID: "finn", Name: "delegation"},
			UserID: "ann", Bot: "matty", Text: "[Bot @finn failed]", Time: now(), DelegationID: "dlg-1",
		}}},
	})
	if len(settled.Outbox) != 0 || len(settled.Turns) != 0 {
		t.Errorf("settling = %+v", settled)
	}
	if r, _ := s.Delegation(ctx, "dlg-1"); r.Status != delegation.StatusFailed || r.Error != "interrupted" {
		t.Errorf("settled record = %+v", r)
	}
	if open, _ := s.OpenDelegations(ctx); len(open) != 0 {
		t.Errorf("open after settling = %+v", open)
	}
	msgs, _ := s.SessionMessages(ctx, turn.Ref.SessionID, chat.KindSystem, 10)
	if got := texts(msgs); !slices.Equal(got, []string{"[Bot @finn failed]"}) {
		t.Errorf("asking bot's system messages = %q", got)
	}
}

// testDelegationArtifacts: a hand-off made through the API creates the
// asking bot's session, takes artifacts as inputs and keeps what its
// turn produced, with expected outputs, retries and content.
func testDelegationArtifacts(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	first := handoff("dlg-a", "research", nil)
	first.Record.Expected = []delegation.Expected{{Name: "out.json", MediaType: "application/json", Schema: json.RawMessage(`{"type":"object"}`)}}
	turns, err := s.StartDelegations(ctx, []sessions.Handoff{first})
	if err != nil || len(turns) != 1 {
		t.Fatalf("start = %+v, %v", turns, err)
	}
	if sess, ok, err := s.FindSession(ctx, userKey("matty", "ann")); err != nil || !ok {
		t.Errorf("the asking bot's session was not made: %v, %v", ok, err)
	} else if r, _ := s.Delegation(ctx, "dlg-a"); r.FromSession != sess.ID {
		t.Errorf("record's asking session = %q, want %q", r.FromSession, sess.ID)
	}
	turn := nextTurn(t, s, turns[0].SessionID)
	if turn.Delegation == nil || len(turn.Delegation.Expected) != 1 || string(turn.Delegation.Expected[0].Schema) != `{"type":"object"}` {
		t.Errorf("turn's delegation = %+v", turn.Delegation)
	}
	// A corrective retry first.
	done := complete(t, s, sessions.Outcome{Turn: turn.Ref, Retry: "fix it",
		Update: &delegation.Update{ID: "dlg-a", Status: delegation.StatusRunning, Retry: true}})
	if r, _ := s.Delegation(ctx, "dlg-a"); r.Retries != 1 || r.Status != delegation.StatusRunning {
		t.Errorf("record after a retry = %+v", r)
	}
	retry := nextTurn(t, s, done.Turns[0].SessionID)
	if retry.Text != "fix it" || retry.Delegation == nil || retry.Delegation.ID != "dlg-a" {
		t.Errorf("retry turn = %q %+v", retry.Text, retry.Delegation)
	}
	art := chat.Artifact{ID: "art-1", Name: "out.json", MediaType: "application/json", Size: 2,
		SHA256: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", Producer: "finn", Content: []byte("{}")}
	// A delegated turn's message is its wrapper, in no chat: the reply
	// goes where the person can be reached.
	o := reply(retry, "done")
	post := &o.Posts[0].Message
	post.Platform, post.ChatID, post.ChatType, post.DelegationID = "web", "web-ann:finn", chat.Private, "dlg-a"
	o.Artifacts = []chat.Artifact{art}
	o.Update = &delegation.Update{ID: "dlg-a", Status: delegation.StatusDone, Result: "done"}
	done = complete(t, s, o)
	if d := done.Outbox[0].Delegation; d == nil || d.Status != delegation.StatusDone {
		t.Errorf("reply's delegation = %+v, want done", d)
	}
	r, err := s.Delegation(ctx, "dlg-a")
	if err != nil || r.Status != delegation.StatusDone || r.Result != "done" || len(r.Artifacts) != 1 {
		t.Fatalf("record = %+v, %v", r, err)
	}
	a := r.Artifacts[0]
	if a.ID != "art-1" || a.Name != "out.json" || a.MediaType != "application/json" || a.Size != 2 ||
		a.SHA256 != art.SHA256 || a.Producer != "finn" || a.DelegationID != "dlg-a" || a.Content != nil {
		t.Errorf("record's artifact = %+v", a)
	}

	// The artifact feeds the next hand-off.
	second := handoff("dlg-b", "compare", nil)
	second.Record.Inputs = []string{"art-1"}
	turns, err = s.StartDelegations(ctx, []sessions.Handoff{second})
	if err != nil || len(turns) != 1 {
		t.Fatalf("start = %+v, %v", turns, err)
	}
	if r, _ := s.Delegation(ctx, "dlg-b"); !slices.Equal(r.Inputs, []string{"art-1"}) {
		t.Errorf("inputs = %v", r.Inputs)
	}
	arts, err := s.Artifacts(ctx, []string{"art-1"})
	if err != nil || len(arts) != 1 || string(arts[0].Content) != "{}" || arts[0].DelegationID != "dlg-a" {
		t.Errorf("artifacts = %+v, %v", arts, err)
	}
	if _, err := s.Artifacts(ctx, []string{"art-1", "art-none"}); !isNotFound(err, delegation.ErrNotFound) {
		t.Errorf("a missing artifact: %v, want ErrNotFound", err)
	}
	if arts, err := s.Artifacts(ctx, nil); err != nil || len(arts) != 0 {
		t.Errorf("no artifacts = %+v, %v", arts, err)
	}
}
