package discord_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/platforms/discord"
)

// TestLinkStates: a bot reports connecting, then connected; a dropped
// connection reports connecting until it has resumed; a token the
// gateway refuses reports failing with the reason.
func TestLinkStates(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{}
	report := func(bot, state string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			state += ": " + err.Error()
		}
		seen[bot] = append(seen[bot], state)
	}
	last := func(bot string) string {
		mu.Lock()
		defer mu.Unlock()
		if s := seen[bot]; len(s) > 0 {
			return s[len(s)-1]
		}
		return ""
	}
	e := newEnv(t, discord.Options{Report: report}, "matty")
	eventually(t, func() bool { return last("matty") == gateway.LinkConnected }, "matty connected (%q)", last("matty"))
	mu.Lock()
	first := seen["matty"][0]
	mu.Unlock()
	if first != gateway.LinkConnecting {
		t.Errorf("first report = %q, want connecting", first)
	}

	e.srv.DropConnection()
	eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		s := seen["matty"]
		return len(s) >= 4 && s[len(s)-2] == gateway.LinkConnecting && s[len(s)-1] == gateway.LinkConnected
	}, "matty resumed (%q)", last("matty"))

	e.p.Configure(append(e.configs("matty"), discord.BotConfig{BotID: "bad", Token: "tok-unknown", APIURL: e.srv.APIURL()}))
	eventually(t, func() bool {
		return strings.HasPrefix(last("bad"), gateway.LinkFailing+": the gateway refused the bot")
	},
		"bad failing (%q)", last("bad"))
	if strings.Contains(last("bad"), "tok-unknown") {
		t.Errorf("the report shows the token: %q", last("bad"))
	}
}
