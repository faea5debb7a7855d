package identity

import (
	"slices"
	"testing"
)

func TestResolve(t *testing.T) {
	d, err := NewDirectory([]User{
		{ID: "user-bryan", Name: "Bryan", Identities: []string{"telegram-123456", "discord-789012", "web-bryan"}},
		{ID: "user-ann", Name: "Ann", Identities: []string{"cli-ann"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		platformID string
		wantID     string
		wantListed bool
	}{
		{"telegram-123456", "user-bryan", true},
		{"discord-789012", "user-bryan", true},
		{"web-bryan", "user-bryan", true},
		{"cli-ann", "user-ann", true},
		{"telegram-999", "telegram-999", false},
		{"web-anon-1f2e", "web-anon-1f2e", false},
		{"", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.platformID, func(t *testing.T) {
			u, listed := d.Resolve(tc.platformID)
			if u.ID != tc.wantID || listed != tc.wantListed {
				t.Errorf("Resolve(%q) = %q, %v; want %q, %v", tc.platformID, u.ID, listed, tc.wantID, tc.wantListed)
			}
		})
	}
	if u, ok := d.User("user-bryan"); !ok || u.Name != "Bryan" || len(u.Identities) != 3 {
		t.Errorf("User(user-bryan) = %+v, %v", u, ok)
	}
	var empty *Directory
	if u, ok := empty.Resolve("web-x"); ok || u.ID != "web-x" {
		t.Errorf("nil directory resolved to %+v", u)
	}
}

func TestIdentityClaimedTwiceIsAnError(t *testing.T) {
	_, err := NewDirectory([]User{
		{ID: "user-a", Identities: []string{"telegram-1"}},
		{ID: "user-b", Identities: []string{"telegram-1"}},
	})
	if err == nil {
		t.Fatal("want an error for telegram-1 claimed by two users")
	}
	if _, err := NewDirectory([]User{{ID: "user-a"}, {ID: "user-a"}}); err == nil {
		t.Fatal("want an error for a repeated user ID")
	}
}

func TestPlatform(t *testing.T) {
	for in, want := range map[string]string{
		"telegram-1": "telegram", "discord-2": "discord", "web-anon-x": "web", "cli-ann": "cli",
		"web-": "", "slack-1": "", "": "",
	} {
		if got := Platform(in); got != want {
			t.Errorf("Platform(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUserIDs(t *testing.T) {
	for _, tc := range []struct {
		u    User
		want []string
	}{
		{User{ID: "user-bryan", Identities: []string{"telegram-1", "web-bryan"}}, []string{"user-bryan", "telegram-1", "web-bryan"}},
		{User{ID: "web-ann", Identities: []string{"web-ann"}}, []string{"web-ann"}}, // a stranger
	} {
		if got := tc.u.IDs(); !slices.Equal(got, tc.want) {
			t.Errorf("%+v.IDs() = %q, want %q", tc.u, got, tc.want)
		}
	}
}
