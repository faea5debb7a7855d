package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestConvRoundTrip: conv new, join (refused, then after an invite),
// a message in the conversation, show and list, as two terminal people.
func TestConvRoundTrip(t *testing.T) {
	m, bryan := startTerm(t)
	ann := []string{"--server", "http://" + m.Addr(), "--token", "admin-secret", "--as", "ann"}
	conv := func(who []string, args ...string) (int, string, string) {
		return runCLI(append(append([]string{"conv"}, args...), who...)...)
	}

	code, out, errOut := conv(bryan, "new", "standup", "--with", "mattyatlas,finnshipley")
	if code != 0 || out != "created standup with mattyatlas,finnshipley (closed: members invite others)\n" {
		t.Fatalf("new: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := conv(bryan, "new", "standup", "--with", "mattyatlas"); code != 1 || !strings.Contains(errOut, "conv join standup") {
		t.Errorf("new again: exit %d, %q", code, errOut)
	}
	if code, _, errOut := conv(ann, "join", "standup"); code != 1 || !strings.Contains(errOut, "not_allowed") {
		t.Errorf("join a closed room: exit %d, %q", code, errOut)
	}
	if code, _, errOut := conv(ann, "join", "nowhere"); code != 1 || !strings.Contains(errOut, "conv new nowhere") {
		t.Errorf("join no room: exit %d, %q", code, errOut)
	}
	if code, out, errOut := conv(ann, "invite", "standup", "cli-cat"); code != 1 || out != "" || !strings.Contains(errOut, "not_allowed") {
		t.Errorf("invite by a non-member: exit %d, %q %q", code, out, errOut)
	}
	if code, out, _ := conv(bryan, "invite", "standup", "cli-ann"); code != 0 || out != "invited cli-ann to standup\n" {
		t.Errorf("invite: exit %d, %q", code, out)
	}
	if code, out, _ := conv(ann, "join", "standup"); code != 0 || out != "joined standup with mattyatlas,finnshipley\n" {
		t.Errorf("join after invite: exit %d, %q", code, out)
	}

	// A message into the room, through chat without a terminal.
	withStdin(t, "@matty what's on today?\n")
	code, out, errOut = runCLI(append([]string{"chat", "--conv", "standup", "--timeout", "10s"}, ann...)...)
	if code != 0 || !strings.Contains(out, "Matty Atlas: Matty Atlas heard: what's on today?") {
		t.Fatalf("chat --conv: exit %d, %q %q", code, out, errOut)
	}
	code, out, _ = conv(bryan, "show", "standup", "--limit", "5")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	timeRE := `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +`
	if code != 0 || len(lines) != 2 ||
		!regexp.MustCompile(timeRE+`ann: +@matty what's on today\?$`).MatchString(lines[0]) ||
		!regexp.MustCompile(timeRE+`Matty Atlas: +Matty Atlas heard: what's on today\?$`).MatchString(lines[1]) {
		t.Fatalf("show: exit %d:\n%s", code, out)
	}
	if code, out, _ := conv(bryan, "--limit", "1", "show", "standup"); code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, "Matty Atlas heard") {
		t.Errorf("show --limit 1 (flag first): exit %d, %q", code, out)
	}

	// Bryan also has a private chat from the terminal.
	if code, _, _ := runCLI(append([]string{"send", "finnshipley", "hi"}, bryan...)...); code != 0 {
		t.Fatal("send failed")
	}
	code, out, errOut = conv(bryan, "list")
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") ||
		!regexp.MustCompile(`^cli-bryan:finnshipley +finnshipley +\d{4}-`).MatchString(lines[1]) ||
		!regexp.MustCompile(`^standup +mattyatlas,finnshipley +\d{4}-`).MatchString(lines[2]) {
		t.Fatalf("list: exit %d, %q:\n%s", code, errOut, out)
	}
	// The columns line up.
	col := strings.Index(lines[0], "BOTS")
	for _, l := range lines[1:] {
		if l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("BOTS column misaligned at %d in %q", col, l)
		}
	}

	t.Run("the admin endpoint", func(t *testing.T) {
		if status, _ := apiGet(t, m, "/api/v1/conversations?user=cli-bryan&platform=cli", "wrong"); status != 401 {
			t.Errorf("wrong token: %d", status)
		}
		if status, _ := apiGet(t, m, "/api/v1/conversations?user=cli-bryan", m.AdminToken); status != 400 {
			t.Errorf("no platform: %d", status)
		}
		// users.yaml makes web-bryan the same person: his terminal
		// conversations are listed for either ID.
		status, body := apiGet(t, m, "/api/v1/conversations?user=web-bryan&platform=cli", m.AdminToken)
		items, _ := body["items"].([]any)
		var standup map[string]any
		for _, it := range items {
			if c := it.(map[string]any); c["id"] == "standup" {
				standup = c
			}
		}
		if status != 200 || len(items) != 2 || standup == nil || standup["kind"] != "group" || standup["platform"] != "cli" ||
			fmt.Sprint(standup["bots"]) != "[mattyatlas finnshipley]" || standup["open"] != false || standup["last_message_at"] == nil {
			t.Errorf("list: %d %v", status, body)
		}
	})
	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{{"conv"}, {"conv", "frob"}, {"conv", "new", "x"}, {"conv", "list", "--with", "a"}, {"conv", "show"}, {"conv", "show", "x", "--limit", "0"}} {
			if code, out, _ := runCLI(args...); code != 2 || out != "" {
				t.Errorf("%v: exit %d, %q", args, code, out)
			}
		}
	})
}
