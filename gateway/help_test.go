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
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/identity"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world/actions"
	"github.com/switchboard-chat/switchboard/world/findings"
)

// helpBrain asks ask (bot, question) for help on every turn that is
// neither a help request nor its follow-up, and answers the rest with
// answer; it keeps the turns it saw and the results of its requests.
type helpBrain struct {
	ask    func(t brains.Turn) (bot, question string)
	answer func(t brains.Turn) string

	mu      sync.Mutex
	turns   []brains.Turn
	results []string
}

func (b *helpBrain) Reply(ctx context.Context, t brains.Turn) (brains.Reply, error) {
	b.mu.Lock()
	b.turns = append(b.turns, kept(t))
	b.mu.Unlock()
	if t.Help == nil && b.ask != nil && t.Actions != nil {
		bot, q := b.ask(t)
		args, _ := json.Marshal(map[string]string{"bot": bot, "question": q})
		res, err := t.Actions.Call(ctx, "request_help", args)
		if err != nil {
			res = "error: " + err.Error()
		}
		b.mu.Lock()
		b.results = append(b.results, res)
		b.mu.Unlock()
		return brains.Reply{Text: "Let me ask around."}, nil
	}
	return brains.Reply{Text: b.answer(t)}, nil
}

func (b *helpBrain) seen() []brains.Turn {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]brains.Turn(nil), b.turns...)
}

func (b *helpBrain) result(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		if len(b.results) > 0 {
			r := b.results[0]
			b.results = b.results[1:]
			b.mu.Unlock()
			return r
		}
		b.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the brain made no request")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// secret is the helper's answer: it must reach no person.
const secret = "JWT with a 24h expiry, signed by kms-7"

func helpTeam(t *testing.T, allow ...string) (*harness, *helpBrain, *helpBrain) {
	matty := &helpBrain{
		ask: func(t brains.Turn) (string, string) { return "@Finn", "what's the auth pattern?" },
		answer: func(t brains.Turn) string {
			if t.Help.Answered() {
				return "Finn says: " + strings.ToUpper(t.Help.Answer)
			}
			return "matty: " + t.Text
		},
	}
	finn := &helpBrain{answer: func(t brains.Turn) string { return secret }}
	h := newHarness(t,
		dbot("mattyatlas", "Matty Atlas", matty, allow...),
		dbot("finnshipley", "Finn Shipley", finn, "mattyatlas"),
	)
	h.gw.SetDirectory(directory(t, identity.User{ID: "user-ann", Name: "Ann", Identities: []string{"web-ann"}}))
	return h, matty, finn
}

// TestHelpRequest: the asking bot's turn is not held up; the helper gets
// the wrapper and answers into its own session only; the asking bot's
// session gets the answer and one new turn whose reply goes to the chat
// the request came from. No person sees the answer.
func TestHelpRequest(t *testing.T) {
	h, matty, finn := helpTeam(t, "finnshipley")
	seen := watch(h)
	h.deliver(private("web-ann", "mattyatlas", "1", "how do we log people in?"))

	chatID := gateway.PrivateChatID("web-ann", "mattyatlas")
	first := h.plat.next(t)
	if first.ChatID != chatID || first.Text != "Let me ask around." {
		t.Fatalf("first reply %s: %q", first.ChatID, first.Text)
	}
	if r := matty.result(t); !strings.HasPrefix(r, "Asked Finn Shipley (@finnshipley) for help.") {
		t.Errorf("request_help said %q", r)
	}
	follow := h.plat.next(t)
	if follow.ChatID != chatID || follow.Bot != "mattyatlas" || follow.Text != "Finn says: "+strings.ToUpper(secret) {
		t.Errorf("follow-up %s from %s: %q", follow.ChatID, follow.Bot, follow.Text)
	}
	quiet(t, h.plat)
	for _, e := range h.plat.all() {
		if strings.Contains(e.Text, secret) || e.Bot == "finnshipley" {
			t.Errorf("a person was sent the answer: %+v", e)
		}
	}

	d := seen.until(t, delegation.StatusDone)
	if d.Kind != delegation.KindHelp || d.From != "mattyatlas" || d.To != "finnshipley" || d.Task != "what's the auth pattern?" ||
		d.Depth != 1 || d.Result != secret || d.Origin.ID != chatID {
		t.Errorf("record %+v", d)
	}
	if got := seen.of(d.ID); strings.Join(got, ",") != "queued,running,done" {
		t.Errorf("statuses %v", got)
	}

	// The helper's turn: the question, with who asks.
	ft := finn.seen()
	if len(ft) != 1 || ft[0].Text != "what's the auth pattern?" || ft[0].Help == nil || ft[0].Help.From != "Matty Atlas" ||
		ft[0].Help.FromID != "mattyatlas" || ft[0].Help.Answer != "" || ft[0].Delegation != nil || ft[0].User.Name != "Ann" {
		t.Errorf("helper's turns: %+v", ft)
	}
	if !strings.HasPrefix(ft[0].Help.Wrapper, "HELP REQUEST FROM MATTY ATLAS\nUser: Ann\nQuestion: what's the auth pattern?") {
		t.Errorf("wrapper %q", ft[0].Help.Wrapper)
	}
	// The follow-up: the answer, from whom.
	mt := matty.seen()
	if len(mt) != 2 {
		t.Fatalf("matty had %d turns, want 2", len(mt))
	}
	if f := mt[1]; f.Text != secret || !f.Help.Answered() || f.Help.From != "Finn Shipley" || f.Help.FromID != "finnshipley" ||
		f.Help.Question != "what's the auth pattern?" || f.Platform != "web" {
		t.Errorf("follow-up turn %+v", f)
	}

	// The sessions: the helper's holds the wrapper and its answer as a
	// system message; the asker's the callback note.
	ctx := context.Background()
	fm, _ := sessions.History(ctx, h.store, sessions.Key{Bot: "finnshipley", Scope: sessions.ScopeUser, ScopeID: "user-ann"}, "", 10)
	if len(fm) != 2 || fm[0].Kind != chat.KindWrapper || fm[1].Kind != chat.KindSystem || fm[1].Text != secret || fm[1].From.ID != "finnshipley" {
		t.Errorf("helper's session: %+v", fm)
	}
	mm, _ := sessions.History(ctx, h.store, sessions.Key{Bot: "mattyatlas", Scope: sessions.ScopeUser, ScopeID: "user-ann"}, chat.KindSystem, 10)
	want := "[Bot @finnshipley answered] Question: what's the auth pattern? Answer: " + secret
	if len(mm) != 1 || mm[0].Text != want {
		t.Errorf("asker's system messages: %+v, want %q", mm, want)
	}
}

// TestHelpFromRoom: a request made in a group room is answered there,
// and both its turns (the helper's and the follow-up) work in the
// room's space: they see its board.
func TestHelpFromRoom(t *testing.T) {
	h, matty, finn := helpTeam(t, "finnshipley")
	h.openRoom("lab")
	if _, err := h.board.Post(context.Background(), findings.Post{Space: "chat:web:lab", Bot: "scout", Text: "the lab's"}); err != nil {
		t.Fatal(err)
	}
	ev := gateway.Event{Platform: "web", ChatID: "lab", ChatType: chat.Group, MessageID: "r1",
		Sender: gateway.Sender{PlatformID: "web-ann", Name: "Ann"}, Text: "@matty how do we log in?",
		Mentions: gateway.ParseMentions("@matty how do we log in?")}
	h.deliver(ev)
	for _, want := range []string{"Let me ask around.", "Finn says: " + strings.ToUpper(secret)} {
		if got := h.plat.next(t); got.ChatID != "lab" || got.Text != want {
			t.Errorf("in %s: %q, want %q in lab", got.ChatID, got.Text, want)
		}
	}
	turns := append(finn.seen(), matty.seen()...)
	if len(turns) != 3 {
		t.Fatalf("%d turns, want finn's and matty's two", len(turns))
	}
	for i, turn := range turns {
		if len(turn.Findings) != 1 || turn.Findings[0].Text != "the lab's" {
			t.Errorf("turn %d (%s, help %v) saw findings %+v, want the lab's", i, turn.Bot.ID, turn.Help != nil, turn.Findings)
		}
	}
}

// TestHelpLimits: a help request obeys the limits of a hand-off (allow,
// loop, depth, public, an unknown bot) and a refusal is stored, named to
// the caller and shown to nobody.
func TestHelpLimits(t *testing.T) {
	t.Run("allow", func(t *testing.T) {
		h, matty, _ := helpTeam(t) // matty may ask nobody
		seen := watch(h)
		h.deliver(private("web-ann", "mattyatlas", "1", "hi"))
		r := matty.result(t)
		if r != `error: bot "Finn": action refused: I'm not allowed to ask Finn Shipley for help.` {
			t.Errorf("result %q", r)
		}
		if d := seen.until(t, delegation.StatusRefused); d.Kind != delegation.KindHelp || d.To != "finnshipley" {
			t.Errorf("record %+v", d)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		h, matty, _ := helpTeam(t, "*")
		matty.ask = func(brains.Turn) (string, string) { return "fin", "q" }
		h.deliver(private("web-ann", "mattyatlas", "1", "hi"))
		if r := matty.result(t); !strings.Contains(r, "action refused: I don't know a bot called fin — did you mean Finn Shipley?") {
			t.Errorf("result %q", r)
		}
	})
	t.Run("loop", func(t *testing.T) {
		// Finn, answering Matty, asks Matty back.
		h, _, finn := helpTeam(t, "finnshipley")
		finn.ask = func(brains.Turn) (string, string) { return "mattyatlas", "and you?" }
		finn.answer = func(t brains.Turn) string {
			if t.Help.Answered() {
				return "never"
			}
			args, _ := json.Marshal(map[string]string{"bot": "mattyatlas", "question": "and you?"})
			_, err := t.Actions.Call(context.Background(), "request_help", args)
			return fmt.Sprint(err)
		}
		seen := watch(h)
		h.deliver(private("web-ann", "mattyatlas", "1", "hi"))
		d := seen.until(t, delegation.StatusDone)
		if d.Result != `bot "mattyatlas": action refused: I won't ask Matty Atlas for help: that would loop back (mattyatlas → finnshipley → mattyatlas).` {
			t.Errorf("helper's answer (its request's error) %q", d.Result)
		}
	})
	t.Run("depth", func(t *testing.T) {
		h, _, finn := helpTeam(t, "finnshipley")
		priest := &helpBrain{answer: func(brains.Turn) string { return "amen" }}
		roster := h.gw.Roster().Bots()
		h.gw.SetRoster(gateway.NewRoster(append(roster, dbot("priest", "Priest", priest))))
		settings := gateway.DelegationSettings{Limits: delegation.DefaultLimits, ContextMessages: 3, Timeout: time.Minute}
		settings.Limits.MaxDepth = 1
		h.gw.SetDelegation(settings)
		finn.answer = func(t brains.Turn) string {
			args, _ := json.Marshal(map[string]string{"bot": "priest", "question": "bless?"})
			_, err := t.Actions.Call(context.Background(), "request_help", args)
			return fmt.Sprint(err)
		}
		// Finn may ask priest (finn's allow is mattyatlas only): allow all.
		bots := h.gw.Roster().Bots()
		for i, b := range bots {
			if b.ID == "finnshipley" {
				nb := *b
				nb.Allow = []string{"*"}
				bots[i] = &nb
			}
		}
		h.gw.SetRoster(gateway.NewRoster(bots))
		seen := watch(h)
		h.deliver(private("web-ann", "mattyatlas", "1", "hi"))
		d := seen.until(t, delegation.StatusDone)
		if !strings.Contains(d.Result, "I can't ask Priest for help: the chain of requests would be 2 deep and the limit is 1.") {
			t.Errorf("helper's answer (its request's error) %q", d.Result)
		}
		if len(priest.seen()) != 0 {
			t.Error("priest was asked")
		}
	})
	t.Run("public", func(t *testing.T) {
		h, _, _ := helpTeam(t, "finnshipley")
		a := actions.Caller{Bot: "mattyatlas", User: "user-ann", UserName: "Ann"}
		bots := h.gw.Roster().Bots()
		nb := *bots[1]
		nb.Public = true
		h.gw.SetRoster(gateway.NewRoster([]*gateway.Bot{bots[0], &nb}))
		_, err := h.gw.RequestHelp(context.Background(), a, "finnshipley", "q")
		if !errors.Is(err, brains.ErrActionRefused) || !strings.Contains(err.Error(), "Help requests are not available with public bots.") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("arguments", func(t *testing.T) {
		h, _, _ := helpTeam(t, "finnshipley")
		a := actions.Caller{Bot: "mattyatlas", User: "user-ann", UserName: "Ann"}
		for _, tc := range []struct{ bot, question, want string }{
			{"", "q", "request_help: bot: missing"},
			{"finn", " ", "request_help: question: missing"},
			{"finn", strings.Repeat("x", gateway.MaxQuestion+1), "request_help: question: longer than 4000 characters"},
		} {
			_, err := h.gw.RequestHelp(context.Background(), a, tc.bot, tc.question)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || errors.Is(err, brains.ErrActionRefused) {
				t.Errorf("RequestHelp(%q, %.10q) = %v, want %q", tc.bot, tc.question, err, tc.want)
			}
		}
		list, _ := h.gw.Delegations(context.Background(), "user-ann", "")
		if len(list) != 0 {
			t.Errorf("malformed requests were stored: %+v", list)
		}
	})
}

// TestHelpFailure: a helper that fails leaves the asking bot a note and
// no turn; the chat it asked from is told.
func TestHelpFailure(t *testing.T) {
	h, matty, finn := helpTeam(t, "finnshipley")
	finn.answer = func(brains.Turn) string { return "" }
	h.deliver(private("web-ann", "mattyatlas", "1", "hi"))
	// The notice and the asking turn's reply run at once: either may
	// come first.
	texts := []string{h.plat.next(t).Text, h.plat.next(t).Text}
	slices.Sort(texts)
	if texts[0] != `Finn Shipley couldn't answer "what's the auth pattern?": it produced an empty answer.` || texts[1] != "Let me ask around." {
		t.Errorf("replies %q", texts)
	}
	quiet(t, h.plat)
	if n := len(matty.seen()); n != 1 {
		t.Errorf("matty had %d turns, want 1", n)
	}
}
