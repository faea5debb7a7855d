package gateway

import (
	"strings"
	"testing"
)

func TestParseStageCommand(t *testing.T) {
	tests := []struct {
		text string
		ok   bool
		want stageCommand
	}{
		{"/stage diverge isolated", true, stageCommand{name: "diverge", isolated: true}},
		{"  /stage   diverge   ISOLATED ", true, stageCommand{name: "diverge", isolated: true}},
		{"/stage converge", true, stageCommand{name: "converge"}},
		{"/Stage@matty_bot review", true, stageCommand{name: "review"}},
		{"/release", true, stageCommand{release: true}},
		{"/release@matty_bot", true, stageCommand{release: true}},
		{"/stage", true, stageCommand{usage: stageUsage}},
		{"/stage a b", true, stageCommand{usage: stageUsage}},
		{"/stage a isolated now", true, stageCommand{usage: stageUsage}},
		{"/release it all", true, stageCommand{release: true, usage: stageUsage}},
		{"/stages x", false, stageCommand{}},
		{"/staged", false, stageCommand{}},
		{"stage x", false, stageCommand{}},
		{"/matty /stage x", false, stageCommand{}},
		{"", false, stageCommand{}},
	}
	for _, tt := range tests {
		got, ok := parseStageCommand(tt.text)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseStageCommand(%q) = %+v, %v; want %+v, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
	long, ok := parseStageCommand("/stage " + strings.Repeat("x", 65))
	if !ok || !strings.Contains(long.usage, "not a stage name") {
		t.Errorf("a name too long = %+v", long)
	}
}

// FuzzStageCommand: any text is an ordinary message or a command with a
// usable stage name, or a command answered with its usage.
func FuzzStageCommand(f *testing.F) {
	for _, s := range []string{"/stage a isolated", "/release", "/stage", "/stage@x a", "/release x", "hello", "/stage \u00a0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cmd, ok := parseStageCommand(text)
		if !ok || cmd.usage != "" || cmd.release {
			return
		}
		if cmd.name == "" || strings.ContainsFunc(cmd.name, func(r rune) bool { return r == ' ' || r == '\n' || r == '\t' }) {
			t.Fatalf("parseStageCommand(%q) = %+v: a name that is no name", text, cmd)
		}
	})
}
