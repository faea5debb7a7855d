package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/brains/script"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/identity"
	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/sessions"
)

// scripted is a script brain; it fails the test if the rules do not
// compile.
func scripted(t *testing.T, def string, rules ...script.Rule) brains.Brain {
	t.Helper()
	b, err := script.New(script.Config{Default: def, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dbot is a bot that hands off with the default triggers to allow.
func dbot(id, name string, b brains.Brain, allow ...string) *gateway.Bot {
	bt := bot(id, b)
	bt.Name = name
	bt.Triggers = delegation.DefaultTriggers
	bt.Allow = allow
	return bt
}

// recording wraps a brain and keeps the turns it saw.
type recording struct {
	brains.Brain
	mu    sync.Mutex
	turns []brains.Turn
}

func (r *recording) Reply(ctx context.Context, t brains.Turn) (brains.Reply, error) {
	r.mu.Lock()
	r.turns = append(r.turns, kept(t))
	r.mu.Unlock()
	return r.Brain.Reply(ctx, t)
}

func (r *recording) last() brains.Turn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.turns[len(r.turns)-1]
}

// statuses collects delegation status changes in order, per delegation.
type statuses struct {
	mu   sync.Mutex
	byID map[string][]string
	ch   chan delegation.Record
}

func watch(h *harness) *statuses {
	s := &statuses{byID: map[string][]string{}, ch: make(chan delegation.Record, 1000)}
	h.gw.OnDelegation(func(d delegation.Record) {
		s.mu.Lock()
		s.byID[d.ID] = append(s.byID[d.ID], d.Status)
		s.mu.Unlock()
		s.ch <- d
	})
	return s
}

// until waits for a delegation to reach status.
func (s *statuses) until(t *testing.T, status string) delegation.Record {
	t.Helper()
	for {
		select {
		case d := <-s.ch:
			if d.Status == status {
				return d
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no delegation reached %s", status)
		}
	}
}

func (s *statuses) of(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.byID[id])
}

const finnDefault = `{{if .Delegation}}Built {{.Delegation.Task}} for {{.User.Name}} (from {{.Delegation.From}}, depth {{.Delegation.Depth}}){{else}}Finn here{{end}}`

func team(t *testing.T) (*harness, *recording, *recording) {
	matty := &recording{Brain: scripted(t, "Matty heard: {{.Text}}")}
	finn := &recording{Brain: scripted(t, finnDefault)}
	h := newHarness(t,
		dbot("mattyatlas", "Matty Atlas", matty, "finnshipley", "priest"),
		dbot("finnshipley", "Finn Shipley", finn, "priest"),
	)
	h.gw.SetDirectory(directory(t, identity.User{ID: "user-ann", Name: "Ann", Identities: []string{"web-ann"}}))
	return h, matty, finn
}

// byChat collects n messages and indexes them by chat.
func byChat(t *testing.T, r *recorder, n int) map[string]outbox.Entry {
	t.Helper()
	out := map[string]outbox.Entry{}
	for range n {
		m := r.next(t)
		out[m.ChatID] = m
	}
	return out
}

func TestPrivateHandOff(t *testing.T) {
	h, matty, finn := team(t)
	seen := watch(h)

	h.deliver(private("web-ann", "mattyatlas", "1", "we need a login page"))
	h.plat.next(t)
	h.deliver(private("web-ann", "mattyatlas", "2", "Tell Finn Shipley to build the login page."))

	// Matty's acknowledgement and notice come in order in Matty's chat;
	// Finn's reply, in Finn's chat, may overtake the acknowledgement.
	var inMatty []outbox.Entry
	var reply outbox.Entry
	for range 3 {
		m := h.plat.next(t)
		if m.ChatID == "web-ann:mattyatlas" {
			inMatty = append(inMatty, m)
		} else {
			reply = m
		}
	}
	if len(inMatty) != 2 {
		t.Fatalf("Matty said %d messages, want 2: %+v", len(inMatty), inMatty)
	}
	ack, notice := inMatty[0], inMatty[1]
	if ack.Bot != "mattyatlas" || ack.Text != "Handing this to Finn Shipley: build the login page. I'll let you know when it's done." {
		t.Fatalf("acknowledgement = %+v", ack)
	}
	if ack.Delegation == nil || ack.Delegation.To != "finnshipley" {
		t.Errorf("acknowledgement carries no delegation: %+v", ack.Delegation)
	}
	if reply.Bot != "finnshipley" || reply.ChatID != "web-ann:finnshipley" || reply.Text != "Built build the login page for Ann (from Matty Atlas, depth 1)" {
		t.Errorf("Finn's reply = %+v", reply)
	}
	if notice.Bot != "mattyatlas" || !strings.HasPrefix(notice.Text, "Finn Shipley finished: Built build the login page") {
		t.Errorf("notice in Matty's chat = %+v", notice)
	}

	// The wrapper Finn's brain saw.
	wrapper := finn.last().Delegation.Wrapper
	want := `DELEGATED TASK FROM MATTY ATLAS
User: Ann
Task: build the login page

Recent context from Matty Atlas conversation:
- [Human: Ann] we need a login page
- [Bot: Matty Atlas] Matty heard: we need a login page
- [Human: Ann] Tell Finn Shipley to build the login page.

Please complete this task and respond directly.`
	if wrapper != want {
		t.Errorf("wrapper:\n%s\nwant:\n%s", wrapper, want)
	}

	// Matty's session holds the result callback for its next turn.
	d := seen.until(t, delegation.StatusDone)
	h.deliver(private("web-ann", "mattyatlas", "3", "how did it go?"))
	h.plat.next(t)
	var callback bool
	for _, e := range matty.last().History {
		callback = callback || e.Text == "[Bot @finnshipley completed] Task: build the login page Result: Built build the login page for Ann (from Matty Atlas, depth 1)"
	}
	if !callback {
		t.Errorf("Matty's history lacks the callback: %+v", matty.last().History)
	}
	if got := seen.of(d.ID); strings.Join(got, ",") != "queued,running,done" {
		t.Errorf("statuses = %v", got)
	}
	rec, err := h.gw.Delegation(context.Background(), d.ID)
	if err != nil || rec.From != "mattyatlas" || rec.To != "finnshipley" || rec.UserID != "user-ann" ||
		rec.Depth != 1 || rec.Status != "done" || !strings.HasPrefix(rec.Result, "Built") {
		t.Errorf("record = %+v, %v", rec, err)
	}
}

func TestHandOffRefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(h *harness, roster []*gateway.Bot)
		say   []string
		want  string
	}{
		{"not allowed", nil, []string{"ask Priest to check it"}, "I'm not allowed to hand work to Priest."},
		{"public target", nil, []string{"tell the help desk to call me"}, "Hand-offs are not available with public bots."},
		{"unknown with suggestion", nil, []string{"tell Fin to build it"}, "I don't know a bot called Fin — did you mean Finn Shipley?"},
		{"unknown mention", nil, []string{"ask @nobody to help"}, "I don't know a bot called @nobody."},
		{"cooldown", nil, []string{"tell finn to build A", "tell finn to build B"}, "I handed Finn Shipley a task for you moments ago"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desk := dbot("helpdesk", "Help Desk", scripted(t, "desk"))
			desk.Public = true
			desk.Aliases = []string{"the help desk"}
			matty := dbot("mattyatlas", "Matty Atlas", scripted(t, "Matty heard: {{.Text}}"), "finnshipley", "helpdesk")
			h := newHarness(t, matty, dbot("finnshipley", "Finn Shipley", scripted(t, finnDefault)),
				dbot("priest", "Priest", scripted(t, "amen")), desk)
			var last outbox.Entry
			for i, text := range tc.say {
				h.deliver(private("web-ann", "mattyatlas", fmt.Sprint(i), text))
				last = h.plat.next(t)
				if i < len(tc.say)-1 {
					h.plat.next(t) // the first hand-off's result and notice
					h.plat.next(t)
				}
			}
			if !strings.HasPrefix(last.Text, tc.want) {
				t.Errorf("reply = %q, want %q", last.Text, tc.want)
			}
			quiet(t, h.plat)
			// Nothing lost: the message is in the session, the refusal recorded.
			msgs, _ := h.gw.SessionHistory(context.Background(), "mattyatlas", "web-ann", 50)
			if len(msgs) == 0 || msgs[len(msgs)-2].Text != tc.say[len(tc.say)-1] {
				t.Errorf("session history lacks the message: %+v", msgs)
			}
			list, _ := h.gw.Delegations(context.Background(), "web-ann", delegation.StatusRefused)
			if len(list) != 1 || !strings.HasPrefix(list[0].Error, tc.want) {
				t.Errorf("refused records = %+v", list)
			}
		})
	}
}

// chainBots are a → b → c → d, each handing on in its reply.
func chainBots(t *testing.T) []*gateway.Bot {
	return []*gateway.Bot{
		dbot("a", "Alpha", scripted(t, "a says {{.Text}}"), "b"),
		dbot("b", "Bravo", scripted(t, "Step one done. Tell c to do step two", script.Rule{Match: "(?i)loop", Reply: "Ask a to loop again"}), "c", "a"),
		dbot("c", "Charlie", scripted(t, "Step two done. Tell d to do step three"), "d"),
		dbot("d", "Delta", scripted(t, "Step three done"), "a"),
	}
}

func TestChainStopsAtMaxDepth(t *testing.T) {
	h := newHarness(t, chainBots(t)...)
	settings := gateway.DelegationSettings{Limits: delegation.DefaultLimits, ContextMessages: 3, Timeout: time.Minute}
	settings.Limits.MaxDepth = 2
	h.gw.SetDelegation(settings)
	seen := watch(h)

	h.deliver(private("web-ann", "a", "1", "tell b to start"))
	// a's ack, b's reply (hands to c), a's notice, c's reply (hands to d:
	// refused at depth 3), b's notice, c's refusal line.
	var texts []string
	for range 6 {
		texts = append(texts, h.plat.next(t).Text)
	}
	quiet(t, h.plat)
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "I can't hand this on to Delta: the chain of hand-offs would be 3 deep and the limit is 2.") {
		t.Errorf("no depth refusal among:\n%s", all)
	}
	refused := seen.until(t, delegation.StatusRefused)
	if refused.From != "c" || refused.To != "d" || refused.Depth != 3 || refused.ParentID == "" {
		t.Errorf("refused record = %+v", refused)
	}
	list, _ := h.gw.Delegations(context.Background(), "web-ann", "")
	depths := map[int]string{}
	for _, d := range list {
		depths[d.Depth] = d.From + ">" + d.To + ":" + d.Status
	}
	if depths[1] != "a>b:done" || depths[2] != "b>c:done" || depths[3] != "c>d:refused" {
		t.Errorf("chain = %v", depths)
	}
}

func TestChainLoopRefused(t *testing.T) {
	h := newHarness(t, chainBots(t)...)
	h.deliver(private("web-ann", "a", "1", "tell b to loop"))
	var texts []string
	for range 4 { // a's ack, b's reply, a's notice, b's refusal
		texts = append(texts, h.plat.next(t).Text)
	}
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "I won't hand this to Alpha: that would loop back (a → b → a).") {
		t.Errorf("no loop refusal among:\n%s", all)
	}
}

func TestManyUsersDelegateAtOnce(t *testing.T) {
	h, _, _ := team(t)
	const users = 50
	var wg sync.WaitGroup
	for i := range users {
		wg.Go(func() {
			h.deliver(private(fmt.Sprint("web-u", i), "mattyatlas", "1", fmt.Sprintf("tell finn to build thing %d", i)))
		})
	}
	wg.Wait()
	got := map[string]string{}
	for range users * 3 {
		m := h.plat.next(t)
		if m.Bot == "finnshipley" {
			got[m.ChatID] = m.Text
		}
	}
	for i := range users {
		chat := fmt.Sprintf("web-u%d:finnshipley", i)
		want := fmt.Sprintf("Built build thing %d for web-u%d (from Matty Atlas, depth 1)", i, i)
		if got[chat] != want {
			t.Errorf("%s got %q, want %q", chat, got[chat], want)
		}
	}
}

func TestDelegatedTurnTimeout(t *testing.T) {
	hang := brainFunc(func(ctx context.Context, _ brains.Turn) (brains.Reply, error) {
		<-ctx.Done()
		return brains.Reply{}, ctx.Err()
	})
	h := newHarness(t, dbot("mattyatlas", "Matty Atlas", scripted(t, "hi"), "finnshipley"), dbot("finnshipley", "Finn Shipley", hang))
	h.gw.SetDelegation(gateway.DelegationSettings{Limits: delegation.DefaultLimits, ContextMessages: 3, Timeout: 100 * time.Millisecond})
	seen := watch(h)
	h.deliver(private("web-ann", "mattyatlas", "1", "tell finn to think forever"))
	h.plat.next(t) // ack
	notice := h.plat.next(t)
	if notice.Bot != "mattyatlas" || !strings.Contains(notice.Text, "Finn Shipley couldn't finish") || !strings.Contains(notice.Text, "100ms time limit") {
		t.Errorf("notice = %q", notice.Text)
	}
	if d := seen.until(t, delegation.StatusFailed); !strings.Contains(d.Error, "time limit") {
		t.Errorf("record error = %q", d.Error)
	}
}

func TestRestartWithDelegationInFlight(t *testing.T) {
	block := make(chan struct{})
	started := make(chan struct{}, 1)
	stuck := brainFunc(func(ctx context.Context, _ brains.Turn) (brains.Reply, error) {
		started <- struct{}{}
		select {
		case <-block:
		case <-ctx.Done():
		}
		return brains.Reply{}, ctx.Err()
	})
	matty := dbot("mattyatlas", "Matty Atlas", scripted(t, "hi"), "finnshipley")
	h := newHarness(t, matty, dbot("finnshipley", "Finn Shipley", stuck))
	h.deliver(private("web-ann", "mattyatlas", "1", "tell finn to survive a restart"))
	h.plat.next(t)
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	h.gw.Drain(ctx)
	cancel()
	h.close()
	close(block)

	h.open(matty, dbot("finnshipley", "Finn Shipley", scripted(t, finnDefault)))
	got := byChat(t, h.plat, 2)
	if r := got["web-ann:finnshipley"]; r.Text != "Built survive a restart for web-ann (from Matty Atlas, depth 1)" {
		t.Errorf("after restart Finn said %q", r.Text)
	}
	list, _ := h.gw.Delegations(context.Background(), "web-ann", "")
	if len(list) != 1 || list[0].Status != delegation.StatusDone {
		t.Errorf("records = %+v", list)
	}
}

func TestRestartFailsOrphanedDelegation(t *testing.T) {
	matty := dbot("mattyatlas", "Matty Atlas", scripted(t, "hi"), "finnshipley")
	finn := dbot("finnshipley", "Finn Shipley", scripted(t, finnDefault))
	h := newHarness(t, matty, finn)
	// A running record with no turn left to finish it.
	_, err := h.store.StartDelegations(context.Background(), []sessions.Handoff{{Record: delegation.Record{
		ID: "dlg-orphan", From: "mattyatlas", To: "finnshipley", UserID: "web-ann", Task: "x", Depth: 1, Status: delegation.StatusRunning,
		Origin: chat.Ref{Platform: "web", ID: "web-ann:mattyatlas", Type: chat.Private},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	h.close()
	h.open(matty, finn)
	if m := h.plat.next(t); !strings.Contains(m.Text, "interrupted by a restart") {
		t.Errorf("notice = %q", m.Text)
	}
	d, err := h.gw.Delegation(context.Background(), "dlg-orphan")
	if err != nil || d.Status != delegation.StatusFailed || !strings.Contains(d.Error, "restart") {
		t.Errorf("record = %+v, %v", d, err)
	}
}

var competitorsSchema = []byte(`{"type":"object","required":["competitors"],"properties":{"competitors":{"type":"array","items":{"type":"string"}}}}`)

func TestStructuredHandOff(t *testing.T) {
	good := script.Rule{Match: "(?i)competitors", Reply: "Here they are.", Artifacts: []script.ArtifactTemplate{
		{Name: "competitors.json", MediaType: "application/json", Content: `{"competitors":["acme","globex"]}`}}}
	bad := script.Rule{Match: "(?i)competitors", Reply: "Here they are.", Artifacts: []script.ArtifactTemplate{
		{Name: "competitors.json", MediaType: "application/json", Content: `{"competitors":[1,2]}`}}}
	fixes := script.Rule{Match: "(?i)invalid ones", Reply: "Fixed.", Artifacts: []script.ArtifactTemplate{
		{Name: "competitors.json", MediaType: "application/json", Content: `{"competitors":["acme"]}`}}}
	tests := []struct {
		name       string
		rules      []script.Rule
		wantStatus string
		wantTurns  int
	}{
		{"valid", []script.Rule{good}, delegation.StatusDone, 1},
		{"fixed on retry", []script.Rule{fixes, bad}, delegation.StatusDone, 2},
		{"invalid twice", []script.Rule{bad}, delegation.StatusFailed, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			finn := &recording{Brain: scripted(t, "no", tc.rules...)}
			h := newHarness(t, dbot("mattyatlas", "Matty Atlas", scripted(t, "hi"), "finnshipley"), dbot("finnshipley", "Finn Shipley", finn))
			seen := watch(h)
			rec, err := h.gw.Delegate(context.Background(), gateway.DelegateRequest{
				From: "mattyatlas", To: "finnshipley", User: "web-ann", Task: "list the competitors",
				Expected: []delegation.Expected{{Name: "competitors.json", MediaType: "application/json", Schema: competitorsSchema}},
			})
			if err != nil || rec.Status != delegation.StatusQueued {
				t.Fatalf("Delegate = %+v, %v", rec, err)
			}
			d := seen.until(t, tc.wantStatus)
			d, _ = h.gw.Delegation(context.Background(), d.ID)
			finn.mu.Lock()
			turns := len(finn.turns)
			finn.mu.Unlock()
			if turns != tc.wantTurns {
				t.Errorf("Finn ran %d turns, want %d", turns, tc.wantTurns)
			}
			switch tc.wantStatus {
			case delegation.StatusDone:
				if len(d.Artifacts) != 1 || len(d.Artifacts[0].SHA256) != 64 || d.Artifacts[0].Producer != "finnshipley" {
					t.Errorf("artifacts = %+v", d.Artifacts)
				}
			case delegation.StatusFailed:
				if !strings.Contains(d.Error, "competitors.json: does not match its schema") {
					t.Errorf("error = %q", d.Error)
				}
				if last := finn.last(); !strings.Contains(last.Text, "competitors.json: does not match its schema") {
					t.Errorf("the corrective turn did not say what was wrong: %q", last.Text)
				}
			}
		})
	}
}

func TestStructuredHandOffInputs(t *testing.T) {
	finn := &recording{Brain: scripted(t, `{{range .Delegation.Inputs}}{{.Name}}={{.Content}} {{end}}`,
		script.Rule{Match: "make", Reply: "made", Artifacts: []script.ArtifactTemplate{{Name: "brief.md", MediaType: "text/markdown", Content: "# brief"}}})}
	h := newHarness(t, dbot("mattyatlas", "Matty Atlas", scripted(t, "hi"), "finnshipley"), dbot("finnshipley", "Finn Shipley", finn))
	seen := watch(h)
	first, err := h.gw.Delegate(context.Background(), gateway.DelegateRequest{From: "mattyatlas", To: "finnshipley", User: "web-ann", Task: "make a brief"})
	if err != nil {
		t.Fatal(err)
	}
	seen.until(t, delegation.StatusDone)
	d, _ := h.gw.Delegation(context.Background(), first.ID)
	if len(d.Artifacts) != 1 {
		t.Fatalf("first delegation's artifacts = %+v", d.Artifacts)
	}
	second, err := h.gw.Delegate(context.Background(), gateway.DelegateRequest{
		From: "mattyatlas", To: "finnshipley", User: "web-ann", Task: "read it", Inputs: []string{d.Artifacts[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	seen.until(t, delegation.StatusDone)
	if got := finn.last().Text; got != "read it" {
		t.Fatalf("task = %q", got)
	}
	d2, _ := h.gw.Delegation(context.Background(), second.ID)
	if len(d2.Inputs) != 1 || d2.Inputs[0] != d.Artifacts[0].ID || d2.Result != "brief.md=# brief" {
		t.Errorf("second delegation = %+v", d2)
	}
	if _, err := h.gw.Delegate(context.Background(), gateway.DelegateRequest{
		From: "mattyatlas", To: "finnshipley", User: "web-ann", Task: "x", Inputs: []string{"art-missing"}}); !errors.Is(err, gateway.ErrBadRequest) {
		t.Errorf("unknown input: %v", err)
	}
}

func TestBusyPairIsPaused(t *testing.T) {
	h, _, _ := team(t)
	limits := delegation.DefaultLimits
	limits.Cooldown = 0
	h.gw.SetDelegation(gateway.DelegationSettings{Limits: limits, ContextMessages: 3, Timeout: time.Minute})
	var last string
	for i := range 21 {
		h.deliver(private("web-ann", "mattyatlas", fmt.Sprint(i), fmt.Sprintf("tell finn to do chore %d", i)))
		last = h.plat.next(t).Text
		if i < 20 {
			byChat(t, h.plat, 2) // Finn's reply and Matty's notice
		}
	}
	if !strings.HasPrefix(last, "Hand-offs between Matty Atlas and Finn Shipley are paused for 1m0s") {
		t.Errorf("21st hand-off in a minute: %q", last)
	}
	// Another user is not held up by Ann's busy pair. (Matty's chat gets
	// the acknowledgement, then the notice; Finn's reply, in Finn's chat,
	// may come before, between or after them.)
	h.deliver(private("web-bob", "mattyatlas", "1", "tell finn to do one chore"))
	var inMatty []string
	for range 3 {
		if m := h.plat.next(t); m.ChatID == "web-bob:mattyatlas" {
			inMatty = append(inMatty, m.Text)
		}
	}
	if len(inMatty) == 0 || !strings.HasPrefix(inMatty[0], "Handing this to Finn Shipley") {
		t.Errorf("Bob's hand-off: %q in Matty's chat", inMatty)
	}
}

func TestGroupHandOffAnswersInTheGroup(t *testing.T) {
	h, _, _ := team(t)
	h.openRoom("lobby")
	h.deliver(roomEvent("web-ann", "1", "@matty tell finn to build the roof"))
	ack := h.plat.next(t)
	reply := h.plat.next(t)
	if ack.ChatID != "lobby" || ack.Bot != "mattyatlas" || !strings.HasPrefix(ack.Text, "Handing this to Finn Shipley: build the roof") {
		t.Errorf("ack = %+v", ack)
	}
	if reply.ChatID != "lobby" || reply.Bot != "finnshipley" || !strings.HasPrefix(reply.Text, "Built build the roof") {
		t.Errorf("Finn's reply = %+v", reply)
	}
	quiet(t, h.plat) // no notice: the answer is where the question was
}

// A brain's delegate actions go through the same router and limits.
func TestBrainHandoffsAreRouted(t *testing.T) {
	var team []brains.Mate
	var mu sync.Mutex
	tool := brainFunc(func(ctx context.Context, tr brains.Turn) (brains.Reply, error) {
		mu.Lock()
		team = tr.Team
		mu.Unlock()
		for _, args := range []string{`{"bot": "finnshipley", "task": "paint the fence"}`, `{"bot": "priest", "task": "bless it"}`} {
			if _, err := tr.Actions.Call(ctx, "delegate", json.RawMessage(args)); err != nil {
				return brains.Reply{}, err
			}
		}
		return brains.Reply{Text: "I'll get Finn on it."}, nil
	})
	finn := dbot("finnshipley", "Finn Shipley", scripted(t, finnDefault))
	finn.Persona = "You are Finn, the builder.\nYou ship."
	h := newHarness(t, dbot("mattyatlas", "Matty Atlas", tool, "finnshipley"), finn, dbot("priest", "Priest", scripted(t, "amen")))
	h.deliver(private("web-ann", "mattyatlas", "1", "the fence is ugly"))
	var texts []string
	for range 4 { // Matty's reply, the refusal for Priest, Finn's result, Matty's notice
		texts = append(texts, h.plat.next(t).Text)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"I'll get Finn on it.", "I'm not allowed to hand work to Priest.", "Built paint the fence for web-ann"} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in:\n%s", want, all)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(team) != 1 || team[0].ID != "finnshipley" || team[0].Summary != "You are Finn, the builder." {
		t.Errorf("team = %+v", team)
	}
}

func TestDelegateRefusesBadExpectedOutputs(t *testing.T) {
	h, _, _ := team(t)
	tests := []struct {
		name string
		exp  []delegation.Expected
		want string // in the error
	}{
		{"empty", []delegation.Expected{{Name: ""}}, "has no name"},
		{"blank", []delegation.Expected{{Name: "  "}}, "has no name"},
		{"duplicate", []delegation.Expected{{Name: "a.md"}, {Name: "a.md"}}, "named twice"},
		{"parent", []delegation.Expected{{Name: "../x"}}, `contains ".."`},
		{"dot dot alone", []delegation.Expected{{Name: ".."}}, `contains ".."`},
		{"slash", []delegation.Expected{{Name: "a/b.json"}}, `contains "/"`},
		{"absolute", []delegation.Expected{{Name: "/etc/passwd"}}, `contains "/"`},
		{"backslash", []delegation.Expected{{Name: `a\b.json`}}, `contains "\"`},
		{"nul", []delegation.Expected{{Name: "a\x00.json"}}, "NUL"},
		{"dot", []delegation.Expected{{Name: "."}}, "directory itself"},
		{"second of two", []delegation.Expected{{Name: "ok.md"}, {Name: "sub/x.md"}}, "expected_outputs[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.gw.Delegate(context.Background(), gateway.DelegateRequest{
				From: "mattyatlas", To: "finnshipley", User: "web-ann", Task: "x", Expected: tt.exp})
			if !errors.Is(err, gateway.ErrBadRequest) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrBadRequest naming %q", err, tt.want)
			}
		})
	}
	list, err := h.gw.Delegations(context.Background(), "", "")
	if err != nil || len(list) != 0 {
		t.Errorf("refused submissions stored delegations: %v %v", list, err)
	}
}
