package prompt

import (
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
)

// numbered is a turn with n history messages "m1" … "mN", each of size
// bytes, alternating human and bot, and a short new message.
func numbered(n, size int) brains.Turn {
	tn := brains.Turn{
		Bot:  brains.Bot{ID: "b", Name: "B", Persona: "p"},
		User: brains.User{Name: "U"},
		Text: "new",
	}
	for i := 1; i <= n; i++ {
		kind, from := "human", "U"
		if i%2 == 0 {
			kind, from = "bot", "B"
		}
		text := "m" + strconv.Itoa(i)
		text += strings.Repeat(".", max(0, size-len(text)))
		tn.History = append(tn.History, brains.Entry{Kind: kind, From: from, Text: text})
	}
	return tn
}

// kept lists the history messages a prompt kept, by their number.
func kept(p Prompt) []string {
	var out []string
	for _, m := range p.Messages[:len(p.Messages)-1] {
		out = append(out, strings.TrimRight(m.Content, "."))
	}
	return out
}

func TestTrimming(t *testing.T) {
	// System of numbered(): "=== PERSONA ===\np\n\n=== CHAT ===\n…"; its
	// size is measured rather than hard-coded.
	sys := EstimateTokens(Build(numbered(0, 0), Options{}).System)
	newMsg := messageOverhead + EstimateTokens("new")
	per := messageOverhead + 10 // a 40-byte message
	tests := []struct {
		name string
		n    int
		opts Options
		want []string
	}{
		{"all kept", 3, Options{}, []string{"m1", "m2", "m3"}},
		{"context messages", 5, Options{ContextMessages: 2}, []string{"m4", "m5"}},
		{"window larger than history", 2, Options{ContextMessages: 10}, []string{"m1", "m2"}},
		{"budget fits all", 3, Options{TokenBudget: sys + newMsg + 3*per}, []string{"m1", "m2", "m3"}},
		{"budget drops oldest", 5, Options{TokenBudget: sys + newMsg + 2*per}, []string{"m4", "m5"}},
		{"budget one short", 5, Options{TokenBudget: sys + newMsg + 2*per - 1}, []string{"m5"}},
		{"window then budget", 6, Options{ContextMessages: 4, TokenBudget: sys + newMsg + 3*per}, []string{"m4", "m5", "m6"}},
		{"budget below system keeps new message", 4, Options{TokenBudget: 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Build(numbered(tt.n, 40), tt.opts)
			if got := kept(p); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
			last := p.Messages[len(p.Messages)-1]
			if last.Role != RoleUser || last.Content != "new" {
				t.Errorf("last message = %+v, want the new message", last)
			}
		})
	}
}

func TestTrimmingKeepsNewestRun(t *testing.T) {
	// One long old message must not let older short ones in behind it.
	tn := numbered(3, 8)
	tn.History[1].Text = strings.Repeat("x", 4000)
	sys := EstimateTokens(Build(numbered(0, 0), Options{}).System)
	p := Build(tn, Options{TokenBudget: sys + 100})
	if got := kept(p); len(got) != 1 || got[0] != "m3" {
		t.Errorf("kept %v, want [m3]", got)
	}
}

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{strings.Repeat("x", 400), 100},
		{"日本語", 3}, // 9 bytes: multi-byte scripts count by bytes
	}
	for _, tt := range tests {
		if got := EstimateTokens(tt.s); got != tt.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}
