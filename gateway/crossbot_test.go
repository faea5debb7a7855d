package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/world/chains"
)

// chatty is an adversarial script: the bot addresses others in every
// message, to a person as in a chain, and says which step it is.
func chatty(t *testing.T, others string) brains.Brain {
	return scripted(t, `{{if .Crossbot}}{{if .Crossbot.Closing}}Closing at {{.Crossbot.Length}}, bye `+others+
		`{{else}}Step {{.Crossbot.Length}}: `+others+` go on{{end}}{{else}}`+others+` what do you think?{{end}}`)
}

// trio is a web room with Matty, Finn and Priest, each chatty, on a
// clock the test moves, with chain settings s.
func trio(t *testing.T, s chains.Settings) (*harness, *fakeClock) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	h := &harness{t: t, path: t.TempDir() + "/sb.db", plat: newRecorder("web"), now: clock.now}
	h.open(
		dbot("mattyatlas", "Matty Atlas", chatty(t, "@finnshipley @priest")),
		dbot("finnshipley", "Finn Shipley", chatty(t, "@mattyatlas @priest")),
		dbot("priest", "Priest", chatty(t, "@mattyatlas @finnshipley")),
	)
	h.gw.SetCrossbot(s)
	h.openRoom("lobby")
	return h, clock
}

func crossbot(chance float64, maxChain int) chains.Settings {
	return chains.Settings{Enabled: true, MaxChain: maxChain, ResponseChance: chance, Cooldown: time.Hour, Burst: 30 * time.Second}
}

// spoken collects n messages, each as "bot: text".
func spoken(t *testing.T, r *recorder, n int) []string {
	t.Helper()
	var out []string
	for range n {
		m := r.next(t)
		out = append(out, m.Bot+": "+m.Text)
	}
	return out
}

// waitJudged waits until the lobby's chain has judged the bot message
// with ID mark or a newer one.
func (h *harness) waitJudged(mark int64) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for chainOf(h.t, h).Mark < mark {
		if time.Now().After(deadline) {
			h.t.Fatalf("chain = %+v, want bot message %d judged", chainOf(h.t, h), mark)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// chainOf returns the stored chain of the lobby.
func chainOf(t testing.TB, h *harness) chains.State {
	t.Helper()
	list, err := h.gw.Chains(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range list {
		if st.Platform == "web" && st.Chat == "lobby" {
			return st.State
		}
	}
	return chains.State{}
}

// With chance 1, three bots that address each other in every message
// stop at max_chain, the last step closing; nobody answers the closing
// message, however it addresses them.
func TestChainStopsAtMaxChain(t *testing.T) {
	h, _ := trio(t, crossbot(1, 3))
	h.deliver(roomEvent("web-ann", "1", "@mattyatlas what's the plan?"))
	got := spoken(t, h.plat, 4)
	want := []string{
		"mattyatlas: @finnshipley @priest what do you think?", // the chain's first message
		"finnshipley: Step 1: @mattyatlas @priest go on",
		// Matty answers Finn while Priest answers Matty's first message:
		// in either order.
		"mattyatlas: Closing at 3, bye @finnshipley @priest", // nobody answers it
		"priest: Step 2: @mattyatlas @finnshipley go on",
	}
	slices.Sort(got[2:])
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	quiet(t, h.plat)
	if st := chainOf(t, h); st.Status != chains.Closed || st.Steps != 3 || st.Chain != 1 {
		t.Errorf("chain = %+v", st)
	}
}

// A second chain inside the cooldown does not start, while people are
// answered as usual; after the cooldown one does.
func TestChainCooldown(t *testing.T) {
	h, clock := trio(t, crossbot(1, 1))
	h.deliver(roomEvent("web-ann", "1", "@mattyatlas hi"))
	spoken(t, h.plat, 2) // Matty, then Finn closing
	quiet(t, h.plat)

	clock.advance(30 * time.Minute)
	h.deliver(roomEvent("web-bob", "2", "@mattyatlas again?"))
	if got := spoken(t, h.plat, 1); got[0] != "mattyatlas: @finnshipley @priest what do you think?" {
		t.Errorf("Matty's answer to Bob = %q", got)
	}
	quiet(t, h.plat) // no chain: the cooldown holds
	// A person addressing a bot is answered whatever the chain.
	h.deliver(roomEvent("web-bob", "3", "@finnshipley and you?"))
	if got := spoken(t, h.plat, 1); got[0] != "finnshipley: @mattyatlas @priest what do you think?" {
		t.Errorf("Finn's answer to Bob = %q", got)
	}
	quiet(t, h.plat)

	clock.advance(31 * time.Minute) // an hour after the first chain's step
	h.deliver(roomEvent("web-bob", "4", "@mattyatlas now?"))
	if got := spoken(t, h.plat, 2); got[1] != "finnshipley: Closing at 1, bye @mattyatlas @priest" {
		t.Errorf("after the cooldown = %q", got)
	}
	quiet(t, h.plat)
	if st := chainOf(t, h); st.Chain != 2 {
		t.Errorf("chains started = %d, want 2", st.Chain)
	}
}

// held is a brain that answers only once released, so a test can order
// what bots say.
type held struct {
	brains.Brain
	release chan struct{}
}

func (b *held) Reply(ctx context.Context, t brains.Turn) (brains.Reply, error) {
	select {
	case <-b.release:
	case <-ctx.Done():
		return brains.Reply{}, ctx.Err()
	}
	return b.Brain.Reply(ctx, t)
}

// Two messages of Matty within the burst, both addressing Finn, count as
// one: Finn answers once. Without a burst window, twice.
func TestChainBurstCountsOnce(t *testing.T) {
	for _, burst := range []time.Duration{30 * time.Second, 0} {
		t.Run(fmt.Sprint("burst ", burst), func(t *testing.T) {
			s := crossbot(1, 2)
			s.Burst = burst
			finn := &held{Brain: scripted(t, "Finn answers: {{.Text}}"), release: make(chan struct{})}
			// Matty answers both of Ann's messages once both are in, so
			// that his two answers follow each other.
			matty := &held{Brain: scripted(t, "@finnshipley {{.Text}}"), release: make(chan struct{})}
			h := newHarness(t, dbot("mattyatlas", "Matty Atlas", matty), dbot("finnshipley", "Finn Shipley", finn))
			h.gw.SetCrossbot(s)
			h.openRoom("lobby")
			h.deliver(roomEvent("web-ann", "1", "@mattyatlas part one"))
			h.deliver(roomEvent("web-ann", "2", "@mattyatlas part two"))
			close(matty.release)
			// Matty twice, Finn still thinking. A bot's message is judged
			// after it is sent: Finn speaks once both of Matty's are, or
			// his first answer could be judged before Matty's second.
			h.plat.next(t)
			h.waitJudged(h.plat.next(t).MessageID)
			close(finn.release)
			answers := 1
			if burst == 0 {
				answers = 2
			}
			got := spoken(t, h.plat, answers)
			for _, m := range got {
				if !strings.HasPrefix(m, "finnshipley: Finn answers: part") {
					t.Errorf("Finn said %q", m)
				}
			}
			// Finn's answers reply to Matty, who has the step left (max 2)
			// only when Finn answered once.
			if burst != 0 {
				if m := h.plat.next(t); m.Bot != "mattyatlas" {
					t.Errorf("after Finn: %s: %q", m.Bot, m.Text)
				}
			}
			quiet(t, h.plat)
			if st := chainOf(t, h); st.Steps != 2 {
				t.Errorf("steps = %d, want 2", st.Steps)
			}
		})
	}
}

// With chance 0 only a reply and the chain's first message are answered:
// a bot only mentioned or named never is, and no draw is taken.
func TestChainChanceZero(t *testing.T) {
	h := newHarness(t,
		dbot("mattyatlas", "Matty Atlas", scripted(t, `{{if .Crossbot}}Bye @priest.{{else}}@finnshipley, thoughts?{{end}}`)),
		dbot("finnshipley", "Finn Shipley", scripted(t, "I'd ask @priest, or priest himself.")),
		dbot("priest", "Priest", scripted(t, "Priest speaks")),
	)
	h.gw.SetCrossbot(crossbot(0, 2))
	h.openRoom("lobby")
	h.deliver(roomEvent("web-ann", "1", "@mattyatlas plan?"))
	got := spoken(t, h.plat, 3)
	want := "mattyatlas: @finnshipley, thoughts?|finnshipley: I'd ask @priest, or priest himself.|mattyatlas: Bye @priest."
	if strings.Join(got, "|") != want {
		t.Errorf("messages = %q, want %q", strings.Join(got, "|"), want)
	}
	quiet(t, h.plat)
	if st := chainOf(t, h); st.Steps != 2 || st.Draws != 0 || st.Status != chains.Closed {
		t.Errorf("chain = %+v", st)
	}
}

// A person's message ends a chain; they are answered, and the bots' talk
// does not go on past them.
func TestPersonEndsChain(t *testing.T) {
	finn := &held{Brain: scripted(t, "@mattyatlas Finn here"), release: make(chan struct{})}
	h := newHarness(t,
		dbot("mattyatlas", "Matty Atlas", scripted(t, "@finnshipley {{.Text}}")),
		dbot("finnshipley", "Finn Shipley", finn),
	)
	h.gw.SetCrossbot(crossbot(1, 5))
	h.openRoom("lobby")
	h.deliver(roomEvent("web-ann", "1", "@mattyatlas go"))
	spoken(t, h.plat, 1)
	// Ann speaks while Finn thinks; Matty answers her.
	h.deliver(roomEvent("web-ann", "2", "@mattyatlas stop it"))
	if got := spoken(t, h.plat, 1); got[0] != "mattyatlas: @finnshipley stop it" {
		t.Errorf("Matty to Ann = %q", got)
	}
	close(finn.release)
	// Finn answers Matty's first message; the chain ended with Ann's,
	// so nobody answers Finn. Matty's answer to Ann starts no chain: the
	// first one had a step and its cooldown holds.
	if got := spoken(t, h.plat, 1); got[0] != "finnshipley: @mattyatlas Finn here" {
		t.Errorf("Finn = %q", got)
	}
	quiet(t, h.plat)
	if st := chainOf(t, h); st.Status != chains.Ended || st.Steps != 1 {
		t.Errorf("chain = %+v", st)
	}
}

// A chain's state is stored: a restart while a step waits keeps its step,
// and the chain goes on from there to its closing turn.
func TestChainSurvivesRestart(t *testing.T) {
	finn := &held{Brain: scripted(t, "x"), release: make(chan struct{})}
	matty := dbot("mattyatlas", "Matty Atlas", chatty(t, "@finnshipley"))
	h := newHarness(t, matty, dbot("finnshipley", "Finn Shipley", finn))
	h.gw.SetCrossbot(crossbot(1, 2))
	h.openRoom("lobby")
	h.deliver(roomEvent("web-ann", "1", "@mattyatlas go"))
	spoken(t, h.plat, 1)
	// Stop while Finn's step waits for its brain.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	h.gw.Drain(ctx)
	cancel()
	h.close()

	seen := &recording{Brain: chatty(t, "@mattyatlas")}
	h.plat = newRecorder("web")
	h.open(matty, dbot("finnshipley", "Finn Shipley", seen))
	h.gw.SetCrossbot(crossbot(1, 2))
	got := spoken(t, h.plat, 2)
	want := "finnshipley: Step 1: @mattyatlas go on|mattyatlas: Closing at 2, bye @finnshipley"
	if strings.Join(got, "|") != want {
		t.Errorf("after the restart: %q, want %q", strings.Join(got, "|"), want)
	}
	quiet(t, h.plat)
	if tn := seen.last(); tn.Crossbot == nil || tn.Crossbot.From != "Matty Atlas" || tn.User.Name != "ann" {
		t.Errorf("Finn's turn after the restart = %+v", tn)
	}
}

// A bot's message with a hand-off trigger in a group is a hand-off, not
// a chain message: the target works on the task; nothing else answers.
func TestBotTriggerInGroupIsAHandOff(t *testing.T) {
	matty := dbot("mattyatlas", "Matty Atlas", scripted(t, "tell finnshipley to size {{.Text}}"), "finnshipley")
	finn := dbot("finnshipley", "Finn Shipley", scripted(t, "{{if .Delegation}}Sized {{.Delegation.Task}}{{else}}chain {{.Text}}{{end}}"))
	h := newHarness(t, matty, finn)
	h.gw.SetCrossbot(crossbot(1, 3))
	h.openRoom("lobby")
	h.deliver(roomEvent("web-ann", "1", "@mattyatlas the roof"))
	got := spoken(t, h.plat, 2)
	if got[0] != "mattyatlas: tell finnshipley to size the roof" || got[1] != "finnshipley: Sized size the roof" {
		t.Errorf("messages = %q", got)
	}
	quiet(t, h.plat)
	list, _ := h.gw.Delegations(context.Background(), "web-ann", delegation.StatusDone)
	if len(list) != 1 {
		t.Errorf("done hand-offs = %+v", list)
	}
	if st := chainOf(t, h); st.Chain != 0 {
		t.Errorf("a hand-off started chain %+v", st)
	}
}

// A mention of a bot in another bot's message starts a chain, never a
// hand-off, and needs no permission to hand work on.
func TestBotMentionInGroupIsAChain(t *testing.T) {
	h := newHarness(t,
		dbot("mattyatlas", "Matty Atlas", scripted(t, "@finnshipley can you size this: {{.Text}}")),
		dbot("finnshipley", "Finn Shipley", scripted(t, "{{if .Delegation}}delegated{{else}}Sized {{.Text}}{{end}}")),
	)
	h.gw.SetCrossbot(crossbot(0.35, 1))
	h.openRoom("lobby")
	h.deliver(roomEvent("web-ann", "1", "@mattyatlas the new roof"))
	got := spoken(t, h.plat, 2)
	if got[1] != "finnshipley: Sized can you size this: the new roof" {
		t.Errorf("Finn's answer = %q", got[1])
	}
	quiet(t, h.plat)
	if list, _ := h.gw.Delegations(context.Background(), "", ""); len(list) != 0 {
		t.Errorf("delegations = %+v, want none", list)
	}
}

// Off, no bot answers another.
func TestChainsDisabled(t *testing.T) {
	s := crossbot(1, 3)
	s.Enabled = false
	h, _ := trio(t, s)
	h.deliver(roomEvent("web-ann", "1", "@mattyatlas hi"))
	spoken(t, h.plat, 1)
	quiet(t, h.plat)
}
