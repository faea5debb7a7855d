package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/world/findings"
)

// poster is a brain that posts what it is told as a finding and says
// what it sees.
func poster(seen *[][]brains.Finding, mu *sync.Mutex) brains.Brain {
	return brainFunc(func(ctx context.Context, t brains.Turn) (brains.Reply, error) {
		mu.Lock()
		*seen = append(*seen, append([]brains.Finding(nil), t.Findings...))
		mu.Unlock()
		if t.Actions == nil {
			return brains.Reply{Text: "no actions"}, nil
		}
		args, _ := json.Marshal(map[string]string{"text": t.Text})
		out, err := t.Actions.Call(ctx, "post_finding", args)
		if err != nil {
			return brains.Reply{}, err
		}
		return brains.Reply{Text: out}, nil
	})
}

func boardOf(t *testing.T, h *harness, space string) []string {
	t.Helper()
	fs, err := h.board.List(context.Background(), findings.Query{Space: space, Hidden: true, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, f.Bot+": "+f.Text)
	}
	return out
}

// A delegated turn belongs to the space its hand-off came from: a room's
// hand-off posts to the room's board, a private chat's to the person's.
func TestDelegatedTurnSpace(t *testing.T) {
	var mu sync.Mutex
	var seen [][]brains.Finding
	matty := dbot("mattyatlas", "Matty Atlas", scripted(t, "ok"), "finnshipley")
	finn := dbot("finnshipley", "Finn Shipley", poster(&seen, &mu))
	h := newHarness(t, matty, finn)
	h.openRoom("lobby")
	h.deliver(roomEvent("web-ann", "1", "@matty tell finn to check the roof"))
	h.plat.next(t) // the acknowledgement
	h.plat.next(t) // finn's answer
	if got := boardOf(t, h, "chat:web:lobby"); len(got) != 1 || got[0] != "finnshipley: check the roof" {
		t.Errorf("room's board = %q", got)
	}
	// (Bob: ann's hand-offs to Finn are in their cooldown.)
	h.deliver(private("web-bob", "mattyatlas", "2", "tell finn to check the door"))
	h.plat.next(t)
	h.plat.next(t)
	if got := boardOf(t, h, "user:web-bob"); len(got) != 1 || got[0] != "finnshipley: check the door" {
		t.Errorf("bob's board = %q", got)
	}
	// Finn's second turn, in bob's space, sees nothing of the room's.
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || len(seen[1]) != 0 {
		t.Fatalf("finn saw %+v", seen)
	}
}

// A public bot takes no part in the shared world: no actions, no
// findings.
func TestPublicBotHasNoWorld(t *testing.T) {
	var mu sync.Mutex
	var seen [][]brains.Finding
	kiosk := bot("kiosk", poster(&seen, &mu))
	kiosk.Public = true
	h := newHarness(t, kiosk)
	if _, err := h.board.Post(context.Background(), findings.Post{Space: "user:web-ann", Bot: "scout", Text: "secret"}); err != nil {
		t.Fatal(err)
	}
	h.deliver(private("web-ann", "kiosk", "1", "hello"))
	if got := h.plat.next(t).Text; got != "no actions" {
		t.Errorf("public bot said %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || len(seen[0]) != 0 {
		t.Errorf("public bot saw findings %+v", seen)
	}
}

// A group's stage command reaches every bot of the group (Telegram and
// Discord give each bot its copy): it is carried out and answered once.
func TestStageCommandOnce(t *testing.T) {
	h := newHarness(t, bot("a", echo), bot("b", echo))
	copyFor := func(b, id, text string) gateway.Event {
		return gateway.Event{Platform: "web", Bot: b, ChatID: "-100", ChatType: chat.Group, MessageID: id,
			Sender: gateway.Sender{PlatformID: "web-ann", Name: "Ann"}, Text: text}
	}
	h.deliver(copyFor("a", "7", "/stage@a_bot diverge isolated"))
	h.deliver(copyFor("b", "7", "/stage@a_bot diverge isolated"))
	m := h.plat.next(t)
	if m.From.Kind != chat.System || m.Bot != "a" || !strings.Contains(m.Text, "Stage diverge started, isolated") {
		t.Errorf("answer = %+v", m)
	}
	quiet(t, h.plat)
	if _, err := h.board.Post(context.Background(), findings.Post{Space: "chat:web:-100", Bot: "a", Text: "idea"}); err != nil {
		t.Fatal(err)
	}
	h.deliver(copyFor("b", "8", "/release"))
	h.deliver(copyFor("a", "8", "/release"))
	if m := h.plat.next(t); m.Bot != "b" || m.Text != "Stage diverge ended: its 1 hidden finding is now shared with every bot." {
		t.Errorf("release answer = %+v", m)
	}
	quiet(t, h.plat)
	// The commands are in the group's history (each bot's copy), with
	// one answer each; no bot was asked to answer them.
	msgs, err := h.store.ChatMessages(context.Background(), "web", "-100", 10)
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, m := range msgs {
		switch m.From.Kind {
		case chat.System:
			answers = append(answers, m.Text)
		case chat.Bot:
			t.Errorf("a bot answered a command: %q", m.Text)
		}
	}
	if len(answers) != 2 {
		t.Errorf("answers in the group's history = %q", answers)
	}
}
