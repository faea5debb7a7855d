package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/gateway"
)

func TestValidCLIName(t *testing.T) {
	for id, want := range map[string]bool{
		"cli-bryan": true, "cli-ann.lee": true, "cli-a_b-c@x": true, "cli-7": true,
		"cli-": false, "cli": false, "web-bryan": false, "cli-a:b": false, "cli-a b": false,
		"cli-.x": false, "cli-" + strings.Repeat("a", 64): true, "cli-" + strings.Repeat("a", 65): false,
		"CLI-bryan": false, "cli-bryan\n": false,
	} {
		if got := ValidCLIName(id); got != want {
			t.Errorf("ValidCLIName(%q) = %v", id, got)
		}
	}
}

// FuzzValidCLIName: a name ?as= accepts is a cli platform ID whose
// private chats split back into it and their bot, and no room name can
// shadow them.
func FuzzValidCLIName(f *testing.F) {
	for _, s := range []string{"cli-bryan", "cli-a:b", "cli-", "web-x", "cli-ä", "cli-a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if !ValidCLIName(id) {
			return
		}
		chat := gateway.PrivateChatID(id, "finn")
		pid, bot, ok := gateway.SplitPrivateChatID(chat)
		if !ok || pid != id || bot != "finn" {
			t.Fatalf("%q: chat %q splits into %q, %q, %v", id, chat, pid, bot, ok)
		}
		if owner, ok := gateway.PrivateChatOwner(chat); !ok || owner != id {
			t.Fatalf("%q: owner of %q = %q, %v", id, chat, owner, ok)
		}
	})
}

func TestIdentifyCLI(t *testing.T) {
	a := New(Options{})
	req := func(auth, query string) *http.Request {
		r := httptest.NewRequest("GET", "/ws?"+query, nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		return r
	}
	if _, status, err := a.identifyCLI(req("Bearer x", "as=cli-bryan")); status != http.StatusUnauthorized || err == nil {
		t.Errorf("no admin token set: %d, %v", status, err)
	}
	a.SetAdminToken("s3cret")
	for _, tt := range []struct {
		auth, query string
		status      int
	}{
		{"", "as=cli-bryan", 401},
		{"Bearer nope", "as=cli-bryan", 401},
		{"Bearer s3cret", "as=cli-bryan&user=bryan&sig=x", 400},
		{"Bearer s3cret", "as=cli-bryan&token=x", 400},
		{"Bearer s3cret", "as=bryan", 400},
		{"Bearer s3cret", "", 400},
	} {
		if _, status, err := a.identifyCLI(req(tt.auth, tt.query)); status != tt.status || err == nil {
			t.Errorf("%q %q: %d, %v; want %d", tt.auth, tt.query, status, err, tt.status)
		}
	}
	v, _, err := a.identifyCLI(req("BEARER  s3cret ", "as=cli-bryan"))
	if err != nil || v.platformID != "cli-bryan" || v.platform != gateway.PlatformCLI || !v.verified {
		t.Errorf("good dial: %+v, %v", v, err)
	}
}
