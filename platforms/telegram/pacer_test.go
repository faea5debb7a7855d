package telegram

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// clock is a fake clock the tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// step is one reserve call of a pacer test, after moving the clock.
type step struct {
	advance time.Duration
	bot     string
	chat    string
	group   bool
	wait    time.Duration // what reserve must answer
}

func TestPacer(t *testing.T) {
	unlimited := Rate{N: -1}
	tests := []struct {
		name   string
		limits Limits
		steps  []step
	}{
		{
			name:   "one per second per chat",
			limits: DefaultLimits,
			steps: []step{
				{bot: "a", chat: "1"},
				{bot: "a", chat: "1", wait: time.Second},
				{bot: "a", chat: "2"}, // another chat is not held up
				{bot: "b", chat: "1"}, // nor another bot in the same chat
				{advance: 400 * time.Millisecond, bot: "a", chat: "1", wait: 600 * time.Millisecond},
				{advance: 600 * time.Millisecond, bot: "a", chat: "1"},
			},
		},
		{
			name:   "twenty per minute per group",
			limits: Limits{PerChat: unlimited, PerGroup: DefaultLimits.PerGroup, PerBot: unlimited},
			steps: append(repeat(20, step{bot: "a", chat: "-1", group: true}),
				step{bot: "a", chat: "-1", group: true, wait: 3 * time.Second},
				step{bot: "a", chat: "-2", group: true}, // another group has its own budget
				step{bot: "a", chat: "1"},               // and a private chat has none
				step{advance: 3 * time.Second, bot: "a", chat: "-1", group: true},
				step{bot: "a", chat: "-1", group: true, wait: 3 * time.Second},
			),
		},
		{
			name:   "thirty per second per bot",
			limits: Limits{PerChat: unlimited, PerGroup: unlimited, PerBot: DefaultLimits.PerBot},
			steps: append(repeatChats(30, "a"),
				step{bot: "a", chat: "x", wait: time.Second / 30},
				step{bot: "b", chat: "x"},
				step{advance: time.Second / 30, bot: "a", chat: "x"},
			),
		},
		{
			name:   "a send that must wait takes no token",
			limits: Limits{PerChat: DefaultLimits.PerChat, PerGroup: unlimited, PerBot: Rate{N: 2, Per: time.Second}},
			steps: []step{
				{bot: "a", chat: "1"},
				{bot: "a", chat: "1", wait: time.Second},
				{bot: "a", chat: "1", wait: time.Second}, // asking again took nothing either
				{bot: "a", chat: "2"},                    // the bot's second token is still there
				{bot: "a", chat: "3", wait: 500 * time.Millisecond},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
			p := newPacer(tt.limits.withDefaults(), c.now)
			for i, s := range tt.steps {
				c.advance(s.advance)
				got := p.reserve(s.bot, s.chat, s.group)
				if d := got - s.wait; d < -time.Millisecond || d > time.Millisecond {
					t.Fatalf("step %d (%+v): wait %s, want %s", i, s, got, s.wait)
				}
			}
		})
	}
}

func repeat[T any](n int, v T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// repeatChats is n steps of bot sending to n different private chats.
func repeatChats(n int, bot string) []step {
	out := make([]step, n)
	for i := range out {
		out[i].bot, out[i].chat = bot, fmt.Sprint(i)
	}
	return out
}

func TestPacerWaitEndsWithContext(t *testing.T) {
	c := &clock{t: time.Now()}
	p := newPacer(DefaultLimits, c.now) // the fake clock never moves
	if err := p.wait(context.Background(), "a", "1", false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := p.wait(ctx, "a", "1", false); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait = %v, want the context's error", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("wait overstayed its context")
	}
}

func TestPacerPrunesFullBuckets(t *testing.T) {
	c := &clock{t: time.Now()}
	p := newPacer(DefaultLimits, c.now)
	for i := range 2000 {
		p.reserve("a", fmt.Sprint(i), false)
		c.advance(time.Second)
	}
	if n := len(p.chats); n > 1100 {
		t.Fatalf("%d chat buckets kept", n)
	}
}
