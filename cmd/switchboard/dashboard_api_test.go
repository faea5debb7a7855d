package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
)

// platformStates is GET /api/v1/platforms as "bot/platform" → "state:
// reason".
func platformStates(t *testing.T, m *Main) map[string]string {
	t.Helper()
	status, body := apiGet(t, m, "/api/v1/platforms", m.AdminToken)
	if status != 200 {
		t.Fatalf("platforms: %d %v", status, body)
	}
	out := map[string]string{}
	for _, it := range items(body) {
		s := it["state"].(string)
		if r := it["reason"].(string); r != "" {
			s += ": " + r
		}
		out[it["bot"].(string)+"/"+it["platform"].(string)] = s
	}
	return out
}

// waitPlatforms polls GET /api/v1/platforms until every entry of want
// holds.
func waitPlatforms(t *testing.T, m *Main, want map[string]string) {
	t.Helper()
	var got map[string]string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = platformStates(t, m)
		ok := true
		for k, v := range want {
			if !strings.HasPrefix(got[k], v) {
				ok = false
			}
		}
		if ok {
			return
		}
	}
	t.Fatalf("platforms = %v, want %v", got, want)
}

// Every bot's platforms with their state: connected ones, a Telegram
// section whose token variable is unset (skipped, with the variable), and
// a token Telegram refuses (failing, with the error).
func TestPlatformsEndpoint(t *testing.T) {
	m, _, _ := startPlatforms(t, false)
	waitPlatforms(t, m, map[string]string{
		"mattyatlas/web":       "connected",
		"mattyatlas/telegram":  "connected",
		"finnshipley/discord":  "connected",
		"finnshipley/telegram": "skipped: SB_FINN_TG is unset",
	})
	if got := platformStates(t, m); len(got) != 4 {
		t.Errorf("platforms = %v, want exactly 4", got)
	}

	tg := telegramtest.New(t)
	t.Setenv("SB_BAD_TG", "1:refused-token")
	dir := writeConfigDir(t, fmt.Sprintf(`
gateway:
  listen: 127.0.0.1:0
  database: test.db
bots:
  - id: mattyatlas
    name: Matty Atlas
    brain: {kind: script, default: hi}
    platforms:
      telegram: {token_env: SB_BAD_TG, api_url: %s}
`, tg.URL))
	bad := startMain(t, dir)
	waitPlatforms(t, bad, map[string]string{"mattyatlas/telegram": "failing: getMe: "})
	if got := platformStates(t, bad)["mattyatlas/telegram"]; strings.Contains(got, "refused-token") {
		t.Errorf("the error shows the token: %q", got)
	}

	// An edit that sets the token variable's name to an unset one skips
	// the bot, live.
	bots, _ := os.ReadFile(filepath.Join(dir, "bots.yaml"))
	edited := strings.Replace(string(bots), "SB_BAD_TG", "SB_UNSET_TG", 1)
	if err := os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	waitPlatforms(t, bad, map[string]string{"mattyatlas/telegram": "skipped: SB_UNSET_TG is unset"})
}

// The health summary after traffic over /ws: messages in and out, the
// brain's latency, empty queues.
func TestHealthEndpoint(t *testing.T) {
	m := startMain(t, configDir(t))
	c := dial(t, m.Addr(), nil)
	for i := range 3 {
		c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": fmt.Sprint("hello ", i), "client_id": fmt.Sprint(i)})
		c.expect("ack")
		c.expect("message")
	}
	var h map[string]any
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var status int
		status, h = apiGet(t, m, "/api/v1/health", m.AdminToken)
		if status != 200 {
			t.Fatalf("health: %d %v", status, h)
		}
		// The last delivery is counted just after its frame was handed
		// over; the queue empties just after the reply.
		if h["messages_out_total"] == 3.0 && h["session_queue_depth"] == 0.0 && h["outbox_pending"] == 0.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health = %v", h)
		}
	}
	for k, want := range map[string]float64{"messages_in_total": 3, "messages_in_per_minute": 3, "messages_out_per_minute": 3} {
		if h[k] != want {
			t.Errorf("%s = %v, want %v", k, h[k], want)
		}
	}
	if up, ok := h["uptime_seconds"].(float64); !ok || up < 0 || up > 60 {
		t.Errorf("uptime_seconds = %v", h["uptime_seconds"])
	}
	brains, _ := h["brains"].([]any)
	if len(brains) != 1 {
		t.Fatalf("brains = %v", h["brains"])
	}
	b := brains[0].(map[string]any)
	if b["bot"] != "mattyatlas" || b["kind"] != "script" || b["turns"] != 3.0 || b["p50_seconds"].(float64) <= 0 || b["p95_seconds"].(float64) < b["p50_seconds"].(float64) {
		t.Errorf("brain = %v", b)
	}
}
