package gateway_test

import (
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/gateway"
)

func TestNamedIn(t *testing.T) {
	finn := []string{"finn", "finn shipley", "finnshipley", "shipper"}
	tests := []struct {
		text string
		want bool
	}{
		{"Finn, what do you think?", true},
		{"ask finn.", true},
		{"@finn look", true},
		{"Finn Shipley would know", true},
		{"the shipper's view", true},
		{"FINN!", true},
		{"(finn)", true},
		{"finnish design", false},
		{"griffinn", false},
		{"finn_2 is another", false},
		{"nobody here", false},
		{"", false},
		{"ünfinn", false},
		{"é finn é", true},
	}
	for _, tt := range tests {
		if got := gateway.NamedIn(tt.text, finn); got != tt.want {
			t.Errorf("NamedIn(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
	if gateway.NamedIn("anything", []string{""}) {
		t.Error("an empty name is named in every text")
	}
}

// FuzzNamedIn: any text, any name: no panic, and a name is only found
// where the lower-cased text holds it.
func FuzzNamedIn(f *testing.F) {
	for _, s := range []string{"Finn, hi", "finnish", "@finn", "ß finn ß", "\xff finn", "İfinn"} {
		f.Add(s, "finn")
	}
	f.Fuzz(func(t *testing.T, text, name string) {
		name = strings.ToLower(name)
		if gateway.NamedIn(text, []string{name}) && !strings.Contains(strings.ToLower(text), name) {
			t.Errorf("NamedIn(%q, %q) without the name in the text", text, name)
		}
	})
}
