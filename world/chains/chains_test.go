package chains

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// chat replays messages through Judge as the gateway does, keeping the
// State between them.
type chat struct {
	t  *testing.T
	s  Settings
	st State
	id int64
	// person is the ID of the newest person's message.
	person int64
}

func newChat(t *testing.T, s Settings) *chat {
	return &chat{t: t, s: s, st: State{Platform: "web", Chat: "lobby"}}
}

// says is a person's message.
func (c *chat) says() { c.id++; c.person = c.id }

// bot judges a message of bot at minute min (seconds as fractions) that
// addresses addrs ("finn", "@finn", "^finn" for name, mention, reply),
// and returns who answers as "bot:step" ("bot:step!" when closing).
func (c *chat) bot(bot string, at time.Duration, addrs ...string) string {
	c.t.Helper()
	c.id++
	m := Message{ID: c.id, Bot: bot, At: t0.Add(at), PersonBefore: c.person}
	for _, a := range addrs {
		switch {
		case strings.HasPrefix(a, "@"):
			m.Addresses = append(m.Addresses, Address{Bot: a[1:], Kind: Mention})
		case strings.HasPrefix(a, "^"):
			m.Addresses = append(m.Addresses, Address{Bot: a[1:], Kind: Reply})
		default:
			m.Addresses = append(m.Addresses, Address{Bot: a, Kind: Name})
		}
	}
	v := Judge(c.s, c.st, m)
	if v.State.Steps > c.s.MaxChain {
		c.t.Fatalf("steps %d over max_chain %d", v.State.Steps, c.s.MaxChain)
	}
	c.st = v.State
	var out []string
	for _, a := range v.Answers {
		s := fmt.Sprintf("%s:%d", a.Bot, a.Step)
		if a.Closing {
			s += "!"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func settings(chance float64) Settings {
	return Settings{Enabled: true, MaxChain: 3, ResponseChance: chance, Cooldown: 6 * time.Hour, Burst: 30 * time.Second}
}

func TestChainRunsToMaxWithAClosingTurn(t *testing.T) {
	c := newChat(t, settings(1))
	c.says()
	steps := []struct {
		bot   string
		addrs []string
		want  string
	}{
		{"matty", []string{"@finn"}, "finn:1"}, // the chain's first message
		{"finn", []string{"^matty", "@priest"}, "matty:2 priest:3!"},
		{"matty", []string{"^finn"}, ""}, // closed: nobody more
		{"priest", []string{"^finn", "@matty"}, ""},
	}
	for i, s := range steps {
		if got := c.bot(s.bot, time.Duration(i)*time.Minute, s.addrs...); got != s.want {
			t.Errorf("message %d of %s: answers %q, want %q", i, s.bot, got, s.want)
		}
	}
	if c.st.Status != Closed || c.st.Steps != 3 || c.st.Chain != 1 {
		t.Errorf("state = %+v", c.st)
	}
}

func TestChanceZeroAnswersOnlyRepliesAndChainStarts(t *testing.T) {
	c := newChat(t, settings(0))
	c.says()
	if got := c.bot("matty", 0, "finn"); got != "finn:1" {
		t.Errorf("chain start by name = %q, want finn:1", got)
	}
	if got := c.bot("finn", time.Minute, "@priest"); got != "" {
		t.Errorf("a mention with chance 0 = %q, want nobody", got)
	}
	if got := c.bot("priest", 2*time.Minute, "matty"); got != "" {
		t.Errorf("a name with chance 0 = %q, want nobody", got)
	}
	if got := c.bot("finn", 3*time.Minute, "^matty", "@priest"); got != "matty:2" {
		t.Errorf("a reply with chance 0 = %q, want matty:2", got)
	}
	if c.st.Draws != 0 {
		t.Errorf("draws = %d: a chance of 0 takes none", c.st.Draws)
	}
}

func TestPersonEndsTheChainAndCooldownHolds(t *testing.T) {
	c := newChat(t, settings(1))
	c.says()
	c.bot("matty", 0, "@finn")
	c.says()
	if got := c.bot("finn", time.Minute, "^matty"); got != "" {
		t.Errorf("after a person spoke, a reply woke %q", got)
	}
	if c.st.Status != Ended {
		t.Errorf("status = %q, want ended", c.st.Status)
	}
	// Within the cooldown no chain starts, however addressed.
	c.says()
	if got := c.bot("matty", time.Hour, "@finn"); got != "" {
		t.Errorf("a chain started inside the cooldown: %q", got)
	}
	c.says()
	if got := c.bot("matty", 6*time.Hour+time.Minute, "@finn"); got != "finn:1" {
		t.Errorf("after the cooldown = %q, want finn:1", got)
	}
	if c.st.Chain != 2 {
		t.Errorf("chain = %d, want 2", c.st.Chain)
	}
}

func TestChainWithoutStepsLeavesNoCooldown(t *testing.T) {
	s := settings(1)
	s.MaxChain = 0
	c := newChat(t, s)
	c.says()
	if got := c.bot("matty", 0, "@finn"); got != "" {
		t.Errorf("max_chain 0 woke %q", got)
	}
	s.MaxChain = 3
	c.s = s
	c.says()
	if got := c.bot("matty", time.Minute, "@finn"); got != "finn:1" {
		t.Errorf("after a chain of no steps = %q, want finn:1", got)
	}
}

func TestBurstCountsOnce(t *testing.T) {
	c := newChat(t, settings(1))
	c.says()
	if got := c.bot("matty", 0, "@finn"); got != "finn:1" {
		t.Fatalf("first = %q", got)
	}
	// The rest of Matty's burst: Finn is woken once; a bot first named
	// later in the burst is still the chain's first message's.
	if got := c.bot("matty", 10*time.Second, "@finn"); got != "" {
		t.Errorf("second part woke %q", got)
	}
	if got := c.bot("matty", 35*time.Second, "@finn", "priest"); got != "priest:2" {
		t.Errorf("third part (within 30 s of the second) = %q, want priest:2", got)
	}
	// Out of the burst: a mention draws again.
	if got := c.bot("matty", 2*time.Minute, "@finn"); got != "finn:3!" {
		t.Errorf("after the burst = %q, want finn:3!", got)
	}
	// Another bot in between breaks a burst.
	c2 := newChat(t, settings(1))
	c2.says()
	c2.bot("matty", 0, "@finn")
	c2.bot("finn", time.Second)
	if got := c2.bot("matty", 2*time.Second, "@finn"); got != "finn:2" {
		t.Errorf("after Finn spoke = %q, want finn:2", got)
	}
}

func TestBurstStartsAChainLate(t *testing.T) {
	c := newChat(t, settings(0))
	c.says()
	c.bot("matty", 0) // addresses nobody
	if got := c.bot("matty", 5*time.Second, "priest"); got != "priest:1" {
		t.Errorf("the burst's second part = %q, want priest:1 (the chain's first message)", got)
	}
}

func TestNeverAnswersItself(t *testing.T) {
	c := newChat(t, settings(1))
	c.says()
	if got := c.bot("matty", 0, "@matty", "^matty", "matty"); got != "" {
		t.Errorf("Matty answers Matty: %q", got)
	}
	if c.st.Status != None {
		t.Errorf("status = %q: a message addressing only its author starts nothing", c.st.Status)
	}
}

func TestStrongestAddressWins(t *testing.T) {
	c := newChat(t, settings(0))
	c.says()
	c.bot("matty", 0, "@finn")
	// Named and replied to: a reply, so for sure.
	if got := c.bot("finn", time.Minute, "matty", "^matty"); got != "matty:2" {
		t.Errorf("name then reply = %q, want matty:2", got)
	}
}

func TestDisabledChangesNothing(t *testing.T) {
	s := settings(1)
	s.Enabled = false
	c := newChat(t, s)
	c.says()
	if got := c.bot("matty", 0, "@finn"); got != "" || c.st.Mark != 0 {
		t.Errorf("disabled: answers %q, state %+v", got, c.st)
	}
}

// An adversarial pair that names each other in every message never
// exceeds max_chain, and after the cooldown only one chain runs per
// person's message.
func TestAdversarialBotsStayBounded(t *testing.T) {
	for _, chance := range []float64{0, 0.35, 1} {
		s := settings(chance)
		s.Seeded, s.Seed = true, 7
		c := newChat(t, s)
		total := 0
		at := time.Duration(0)
		for round := 0; round < 50; round++ {
			c.says()
			// Each bot answers whatever woke it, addressing the other.
			queue := []string{"matty"}
			for len(queue) > 0 && total < 10_000 {
				b := queue[0]
				queue = queue[1:]
				other := map[string]string{"matty": "finn", "finn": "matty"}[b]
				at += time.Minute
				for _, a := range strings.Fields(c.bot(b, at, "^"+other, "@"+other, other)) {
					queue = append(queue, strings.Split(a, ":")[0])
					total++
				}
			}
		}
		// 50 rounds a minute or so apart: all within one cooldown.
		if total > s.MaxChain {
			t.Errorf("chance %v: %d answers in one cooldown, want at most %d", chance, total, s.MaxChain)
		}
	}
}

func TestSeededDrawsRepeat(t *testing.T) {
	run := func(seed int64) []string {
		s := settings(0.5)
		s.Seeded, s.Seed = true, seed
		s.MaxChain, s.Burst = 100, 0
		c := newChat(t, s)
		c.says()
		var got []string
		for i := range 40 {
			got = append(got, c.bot("matty", time.Duration(i)*time.Second, "@finn", "priest"))
		}
		return got
	}
	a, b := run(42), run(42)
	if !slices.Equal(a, b) {
		t.Errorf("the same seed drew differently:\n%q\n%q", a, b)
	}
	if slices.Equal(a, run(43)) {
		t.Errorf("seeds 42 and 43 drew alike: %q", a)
	}
}

func TestUniformIsUniformEnough(t *testing.T) {
	s := Settings{Seeded: true, Seed: 1}
	const n = 20_000
	var sum float64
	below := 0
	for i := range int64(n) {
		u := Uniform(s, "web", "lobby", i)
		if u < 0 || u >= 1 {
			t.Fatalf("draw %d = %v, outside [0,1)", i, u)
		}
		sum += u
		if u < 0.35 {
			below++
		}
	}
	if mean := sum / n; math.Abs(mean-0.5) > 0.02 {
		t.Errorf("mean = %v", mean)
	}
	if p := float64(below) / n; math.Abs(p-0.35) > 0.02 {
		t.Errorf("P(u < 0.35) = %v", p)
	}
	if Uniform(s, "web", "a", 0) == Uniform(s, "web", "b", 0) {
		t.Error("two chats draw alike")
	}
}

func TestJudgeKeepsTheCallersState(t *testing.T) {
	st := State{Status: Active, Steps: 1, Burst: Burst{Bot: "matty", At: t0, Woke: make([]string, 1, 8)}}
	st.Burst.Woke[0] = "finn"
	Judge(settings(1), st, Message{ID: 5, Bot: "matty", At: t0, Addresses: []Address{{Bot: "priest", Kind: Mention}}})
	if got := st.Burst.Woke[:2]; got[1] != "" {
		t.Errorf("Judge wrote into the caller's slice: %q", got)
	}
}

// A mention answers with the response chance, a name with 0.3 times it.
func TestNameIsAThirdAsLikely(t *testing.T) {
	s := Settings{Enabled: true, MaxChain: 1, ResponseChance: 0.8, Seeded: true, Seed: 3}
	rate := func(k Kind) float64 {
		answered := 0
		const n = 5000
		for i := range n {
			st := State{Platform: "web", Chat: fmt.Sprint("room", i), Status: Active, Mark: 1}
			v := Judge(s, st, Message{ID: 2, Bot: "matty", At: t0, PersonBefore: 1, Addresses: []Address{{Bot: "finn", Kind: k}}})
			answered += len(v.Answers)
		}
		return float64(answered) / n
	}
	if got := rate(Mention); math.Abs(got-0.8) > 0.03 {
		t.Errorf("mention answered %v of the time, want 0.8", got)
	}
	if got := rate(Name); math.Abs(got-0.24) > 0.03 {
		t.Errorf("name answered %v of the time, want 0.24", got)
	}
}
