package identity

import (
	"regexp"
	"testing"
)

func TestGuestName(t *testing.T) {
	form := regexp.MustCompile(`^Guest [0-9A-F]{4}$`)
	a, ok := GuestName("web-anon-0123456789abcdef01234567")
	if !ok || !form.MatchString(a) {
		t.Fatalf("GuestName = %q, %v; want Guest and four hex digits", a, ok)
	}
	if again, _ := GuestName("web-anon-0123456789abcdef01234567"); again != a {
		t.Errorf("the same ID got %q, then %q", a, again)
	}
	if b, _ := GuestName("web-anon-0123456789abcdef01234568"); b == a {
		t.Errorf("IDs one digit apart share the name %q", a)
	}
	for _, id := range []string{"web-bryan", "web-anon-", "telegram-1", "cli-ann", "", "anon-1"} {
		if name, ok := GuestName(id); ok || name != "" {
			t.Errorf("GuestName(%q) = %q, %v; want none", id, name, ok)
		}
	}
}

// A few names are spread over the space: a fixed sample of visitors does
// not collapse onto one name.
func TestGuestNamesDiffer(t *testing.T) {
	seen := map[string]bool{}
	for i := range 50 {
		name, _ := GuestName("web-anon-" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
		seen[name] = true
	}
	if len(seen) < 48 {
		t.Errorf("50 visitors got only %d names", len(seen))
	}
}
