package world

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Space
		err  string
	}{
		{"user:user-bryan", User("user-bryan"), ""},
		{"user:web-anon-1", User("web-anon-1"), ""},
		{"chat:telegram:-100123", Chat("telegram", "-100123"), ""},
		{"chat:web:lobby", Chat("web", "lobby"), ""},
		{"chat:cli:cli:finnshipley+mattyatlas", Chat("cli", "cli:finnshipley+mattyatlas"), ""},
		{"", Space{}, "empty"},
		{"user:", Space{}, "names no user"},
		{"chat:web", Space{}, "chat:<platform>:<chat id>"},
		{"chat::x", Space{}, "chat:<platform>:<chat id>"},
		{"chat:Web!:x", Space{}, "not a platform name"},
		{"room:x", Space{}, "is neither user:<user id> nor chat:"},
		{"user:a\nb", Space{}, "control character"},
		{"user:" + strings.Repeat("x", MaxSpaceLen), Space{}, "longer than"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.err != "" {
			if err == nil || !errors.Is(err, ErrBadSpace) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Parse(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if got.String() != tt.in {
			t.Errorf("Parse(%q).String() = %q", tt.in, got.String())
		}
	}
}

// FuzzParse: a space name from the API or a frame either parses into a
// space that names itself the same way, or is refused with ErrBadSpace.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"user:user-bryan", "chat:telegram:-100123", "chat:cli:cli:a+b", "chat:web:", "user:", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrBadSpace) {
				t.Fatalf("Parse(%q): error %v does not wrap ErrBadSpace", s, err)
			}
			return
		}
		if sp.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, sp.String())
		}
	})
}
