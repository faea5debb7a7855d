package delegation

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func req(from, to string) Request {
	return Request{From: from, To: to, FromName: from, ToName: to, User: "u", Depth: 1, Allowed: true}
}

func code(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}

func TestPolicyRefusals(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Request)
		want   string
	}{
		{"allowed", func(*Request) {}, ""},
		{"not allowed", func(r *Request) { r.Allowed = false }, RefusedAllow},
		{"public", func(r *Request) { r.Public = true }, RefusedPublic},
		{"too deep", func(r *Request) { r.Depth = 4; r.Chain = []string{"x", "y", "z"} }, RefusedDepth},
		{"at the limit", func(r *Request) { r.Depth = 3; r.Chain = []string{"x", "y"} }, ""},
		{"loop", func(r *Request) { r.Chain = []string{"b"}; r.Depth = 2 }, RefusedLoop},
		{"self", func(r *Request) { r.To = "a" }, RefusedLoop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPolicy(DefaultLimits, nil)
			r := req("a", "b")
			tc.mutate(&r)
			err := p.Admit(r)
			if code(err) != tc.want {
				t.Fatalf("Admit = %v, want code %q", err, tc.want)
			}
			if err != nil && !strings.HasSuffix(err.(*Refusal).Reason, ".") {
				t.Errorf("reason %q is not a sentence", err.(*Refusal).Reason)
			}
		})
	}
}

func TestPolicyCooldownPerUserAndPair(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := NewPolicy(DefaultLimits, c.now)
	if err := p.Admit(req("a", "b")); err != nil {
		t.Fatal(err)
	}
	c.advance(10 * time.Second)
	err := p.Admit(req("a", "b"))
	if code(err) != RefusedCooldown || !strings.Contains(err.Error(), "20s") {
		t.Fatalf("second hand-off within cooldown: %v", err)
	}
	other := req("a", "b")
	other.User = "someone else"
	if err := p.Admit(other); err != nil {
		t.Errorf("another user is not under the cooldown: %v", err)
	}
	if err := p.Admit(req("a", "c")); err != nil {
		t.Errorf("another target is not under the cooldown: %v", err)
	}
	c.advance(20 * time.Second)
	if err := p.Admit(req("a", "b")); err != nil {
		t.Errorf("after the cooldown: %v", err)
	}
}

func TestPolicyPausesBusyPair(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := DefaultLimits
	l.Cooldown = 0
	p := NewPolicy(l, c.now)
	for i := range 20 {
		r := req("a", "b")
		if i%2 == 1 {
			r = req("b", "a") // either direction counts
		}
		if err := p.Admit(r); err != nil {
			t.Fatalf("hand-off %d: %v", i, err)
		}
		c.advance(time.Second)
	}
	if err := p.Admit(req("a", "b")); code(err) != RefusedPaused {
		t.Fatalf("21st hand-off in a minute: %v", err)
	}
	other := req("a", "b")
	other.User = "another user"
	if err := p.Admit(other); err != nil {
		t.Errorf("another user's hand-offs are paused too: %v", err)
	}
	c.advance(30 * time.Second)
	if err := p.Admit(req("a", "b")); code(err) != RefusedPaused {
		t.Fatalf("during the pause: %v", err)
	}
	c.advance(31 * time.Second)
	if err := p.Admit(req("a", "b")); err != nil {
		t.Errorf("after the pause: %v", err)
	}
}

func TestWrapper(t *testing.T) {
	got := Wrapper("Matty Atlas", "Bryan", "build feature X", []Line{
		{Human: true, Name: "Bryan", Text: "we need X"},
		{Name: "Matty Atlas", Text: "agreed,\nlet's plan"},
	})
	want := `DELEGATED TASK FROM MATTY ATLAS
User: Bryan
Task: build feature X

Recent context from Matty Atlas conversation:
- [Human: Bryan] we need X
- [Bot: Matty Atlas] agreed, let's plan

Please complete this task and respond directly.`
	if got != want {
		t.Errorf("wrapper:\n%s\nwant:\n%s", got, want)
	}
	if got := Callback("finnshipley", "build X", nil, "done"); got != "[Bot @finnshipley completed] Task: build X Result: done" {
		t.Errorf("callback = %q", got)
	}
	outs := []chat.Artifact{
		{Name: "competitors.json", Size: 2048, SHA256: strings.Repeat("ab", 32)},
		{Name: "notes.md", Size: 12, SHA256: strings.Repeat("0f", 32)},
	}
	want = "[Bot @coder completed] Task: compare Outputs: competitors.json (2048 bytes, sha256:" + strings.Repeat("ab", 32) +
		"), notes.md (12 bytes, sha256:" + strings.Repeat("0f", 32) + ") Result: done"
	if got := Callback("coder", "compare", outs, "done"); got != want {
		t.Errorf("callback with outputs = %q\nwant %q", got, want)
	}
}

func TestFinishedKeepsLines(t *testing.T) {
	result := "Built the login page.\n\n\n- form   \n- validation\r\n- tests\n"
	got := Finished("Finn Shipley", result)
	want := "Finn Shipley finished: Built the login page.\n\n- form\n- validation\n- tests"
	if got != want {
		t.Errorf("Finished = %q, want %q", got, want)
	}
}

func TestExcerpt(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"  padded\n", 10, "padded"},
		{"one two three four five", 15, "one two three…"},
		{"line one\nline two\nline three", 20, "line one\nline two…"},
		{"abcdefghijklmnopqrstuvwxyz", 10, "abcdefghi…"},
		{"héllo wörld ünïcode", 8, "héllo…"},
	}
	for _, c := range cases {
		got := Excerpt(c.in, c.n)
		if got != c.want {
			t.Errorf("Excerpt(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if n := len([]rune(got)); n > c.n {
			t.Errorf("Excerpt(%q, %d) has %d runes", c.in, c.n, n)
		}
	}
}

// TestPolicyNotesOtherProcesses: hand-offs another process admitted count
// here, for the cooldown (unless programmatic) and the pair rate.
func TestPolicyNotesOtherProcesses(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := NewPolicy(DefaultLimits, c.now)
	p.Note("a", "b", "u", c.t.Add(-5*time.Second), false)
	if err := p.Admit(req("a", "b")); code(err) != RefusedCooldown {
		t.Fatalf("after a hand-off elsewhere 5 s ago: %v, want cooldown", err)
	}
	p.Note("a", "c", "u", c.t, true) // the API's: no cooldown
	if err := p.Admit(req("a", "c")); err != nil {
		t.Fatalf("after a programmatic hand-off elsewhere: %v", err)
	}

	l := DefaultLimits
	l.Cooldown = 0
	q := NewPolicy(l, c.now)
	for i := range 20 {
		q.Note("x", "y", "u", c.t.Add(-time.Duration(i)*time.Second), false)
	}
	q.Note("x", "y", "u", c.t.Add(-2*time.Minute), false) // outside the window
	if err := q.Admit(req("x", "y")); code(err) != RefusedPaused {
		t.Fatalf("after 20 hand-offs elsewhere in the last minute: %v, want paused", err)
	}
}
