package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/sessions"
)

func roomEvent(sender, id, text string) gateway.Event {
	return gateway.Event{
		Platform: "web", ChatID: "lobby", ChatType: chat.Group, MessageID: sender + id,
		Sender: gateway.Sender{PlatformID: sender, Name: strings.TrimPrefix(sender, "web-")}, Text: text,
		Mentions: gateway.ParseMentions(text),
	}
}

// quiet asserts that nothing more is sent for a moment.
func quiet(t *testing.T, r *recorder) {
	t.Helper()
	select {
	case m := <-r.ch:
		t.Fatalf("unexpected reply from %s: %q", m.Bot, m.Text)
	case <-time.After(150 * time.Millisecond):
	}
}

func TestGroupAddressForms(t *testing.T) {
	finn := bot("finnshipley", echo)
	finn.Name, finn.Aliases = "Finn Shipley", []string{"shipper"}
	matty := bot("mattyatlas", echo)
	matty.Name = "Matty Atlas"
	h := newHarness(t, matty, finn)
	h.openRoom("lobby")

	// Give Finn a message of his own to reply to.
	h.deliver(roomEvent("web-ann", "seed", "@finn hello"))
	seed := h.plat.next(t)

	tests := []struct {
		name, text, replyTo string
		wantBot, wantText   string
	}{
		{"no address", "lovely weather", "", "", ""},
		{"mention by id", "@finnshipley build it", "", "finnshipley", "build it"},
		{"mention by first name", "hey @Finn, build it", "", "finnshipley", "hey build it"},
		{"mention by alias", "@shipper: ship it", "", "finnshipley", "ship it"},
		{"command", "/finnshipley run the tests", "", "finnshipley", "run the tests"},
		{"command with username", "/finnshipley@FinnBot run them", "", "finnshipley", "run them"},
		{"command by alias", "/shipper go", "", "finnshipley", "go"},
		{"reply to the bot", "and the docs too", fmt.Sprint(seed.MessageID), "finnshipley", "and the docs too"},
		{"mention of an unknown name", "@nobody hi", "", "", ""},
		{"email is no mention", "mail ann@finn.example", "", "", ""},
		{"non-ASCII around a mention", "Grüße @finn — baue es", "", "finnshipley", "Grüße — baue es"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := roomEvent("web-ann", fmt.Sprint(i), tc.text)
			ev.ReplyTo = tc.replyTo
			h.deliver(ev)
			if tc.wantBot == "" {
				quiet(t, h.plat)
				return
			}
			got := h.plat.next(t)
			if got.Bot != tc.wantBot || got.Text != tc.wantBot+": "+tc.wantText {
				t.Errorf("reply from %s: %q; want %s: %q", got.Bot, got.Text, tc.wantBot, tc.wantText)
			}
			quiet(t, h.plat)
		})
	}
}

func TestGroupHistoryIsLabelled(t *testing.T) {
	var seen brains.Turn
	done := make(chan struct{}, 1)
	look := brainFunc(func(_ context.Context, tr brains.Turn) (brains.Reply, error) {
		seen = kept(tr)
		done <- struct{}{}
		return brains.Reply{Text: "ok"}, nil
	})
	h := newHarness(t, bot("matty", look))
	h.openRoom("lobby")
	h.deliver(roomEvent("web-ann", "1", "unaddressed chatter"))
	h.deliver(roomEvent("web-bob", "2", "@matty what did Ann say?"))
	<-done
	h.plat.next(t)
	if !seen.Group || len(seen.GroupHistory) != 1 {
		t.Fatalf("group=%v group history=%+v", seen.Group, seen.GroupHistory)
	}
	if e := seen.GroupHistory[0]; e.Kind != "human" || e.From != "ann" || e.Text != "unaddressed chatter" {
		t.Errorf("group history entry = %+v", e)
	}
}

func TestSessionScope(t *testing.T) {
	tests := []struct {
		scope string
		want  string // what the second user's turn sees of history
	}{
		{sessions.ScopeUser, "web-bob said second"},
		{sessions.ScopeGroup, "web-bob said @matty first,second"}, // history keeps the message as written
	}
	for _, tc := range tests {
		t.Run(tc.scope, func(t *testing.T) {
			b := bot("matty", historyEcho)
			b.SessionScope = tc.scope
			h := newHarness(t, b)
			h.openRoom("lobby")
			h.deliver(roomEvent("web-ann", "1", "@matty first"))
			h.plat.next(t)
			h.deliver(roomEvent("web-bob", "2", "@matty second"))
			if got := h.plat.next(t).Text; got != tc.want {
				t.Errorf("reply = %q, want %q", got, tc.want)
			}
		})
	}
}
