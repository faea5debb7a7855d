package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/delegation"
)

type quick struct{ instant bool }

func (quick) Reply(context.Context, brains.Turn) (brains.Reply, error) { return brains.Reply{}, nil }
func (q quick) Instant() bool                                          { return q.instant }

type slow struct{}

func (slow) Reply(context.Context, brains.Turn) (brains.Reply, error) { return brains.Reply{}, nil }

func TestInstantBot(t *testing.T) {
	mk := func(id string, b brains.Brain) *Bot {
		return &Bot{ID: id, Name: id, Brain: b, Platforms: []string{"web"}, SessionScope: ScopeUser,
			Triggers: delegation.DefaultTriggers, Allow: []string{"finn"}}
	}
	roster := NewRoster([]*Bot{mk("matty", quick{true}), mk("finn", slow{}), mk("priest", quick{false})})
	private := Event{Platform: "web", Bot: "matty", ChatID: "web-ann:matty", ChatType: ChatPrivate, Sender: Sender{PlatformID: "web-ann"}}
	turn := func(bot, text string) TurnRequest {
		return TurnRequest{Session: SessionKey{Bot: bot, Scope: ScopeUser, ScopeID: "web-ann"}, Text: text}
	}
	group := private
	group.ChatType = ChatGroup
	fromBot := private
	fromBot.Sender.IsBot = true
	tests := []struct {
		name  string
		ev    Event
		turns []TurnRequest
		want  bool
	}{
		{"a private message to an instant brain", private, []TurnRequest{turn("matty", "hi")}, true},
		{"no turn", private, nil, false},
		{"two turns", private, []TurnRequest{turn("matty", "hi"), turn("finn", "hi")}, false},
		{"a group", group, []TurnRequest{turn("matty", "hi")}, false},
		{"a bot's message", fromBot, []TurnRequest{turn("matty", "hi")}, false},
		{"a brain that is not instant", private, []TurnRequest{turn("finn", "hi")}, false},
		{"a brain that says it is not instant now", private, []TurnRequest{turn("priest", "hi")}, false},
		{"an unknown bot", private, []TurnRequest{turn("nobody", "hi")}, false},
		{"a hand-off", private, []TurnRequest{turn("matty", "tell finn to build the roof")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := instantBot(tc.ev, roster, tc.turns); got != tc.want {
				t.Errorf("instantBot = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClaims(t *testing.T) {
	var c claims
	ctx := context.Background()
	a, b := SessionKey{Bot: "matty", ScopeID: "ann"}, SessionKey{Bot: "matty", ScopeID: "bob"}

	// Shared claims coexist; an exclusive one is refused beside them.
	r1, _ := c.shared(ctx, []SessionKey{a})
	r2, _ := c.shared(ctx, []SessionKey{a, b})
	if _, ok := c.exclusive(a); ok {
		t.Fatal("exclusive claim beside shared ones")
	}
	r1()
	r2()
	excl, ok := c.exclusive(a)
	if !ok {
		t.Fatal("exclusive claim refused on a free session")
	}
	if _, ok := c.exclusive(a); ok {
		t.Fatal("two exclusive claims")
	}
	// A shared claim waits for the exclusive one; meanwhile no new
	// exclusive claim is granted ahead of it.
	got := make(chan struct{})
	go func() {
		r, err := c.shared(ctx, []SessionKey{b, a})
		if err == nil {
			r()
		}
		close(got)
	}()
	for {
		c.mu.Lock()
		n := c.waiting[a]
		c.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, ok := c.exclusive(b); ok {
		t.Fatal("exclusive claim granted ahead of a waiting shared one")
	}
	excl()
	<-got
	if r, ok := c.exclusive(a); !ok {
		t.Fatal("exclusive claim refused after the shared one let go")
	} else {
		r()
	}
	// A cancelled wait gives up and leaves nothing behind.
	excl, _ = c.exclusive(b)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.shared(cctx, []SessionKey{b}); err == nil {
		t.Fatal("a cancelled wait claimed")
	}
	excl()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) != 0 || len(c.waiting) != 0 {
		t.Errorf("left behind: %v, %v", c.m, c.waiting)
	}
}
