package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/config"
	"github.com/switchboard-chat/switchboard/world/gossip"
)

// gossipBots: bryan tells elena his news; finn and priest answer with
// the memories they have of the person; judge classifies what no
// pattern matches (and chats, knowing nothing); kiosk is public.
const gossipBots = `
gateway:
  listen: 127.0.0.1:0
  database: test.db
  web:
    secret_env: SB_TEST_WEB_SECRET
    max_messages_per_second_per_person: 0
    max_messages_per_second_per_ip: 0
shared:
  gossip:
    min_messages: 2
    classifier: judge
bots:
  - id: elena
    name: Elena
    brain: {kind: script, default: 'Elena: noted.'}
    platforms: {web: {}}
  - id: finn
    name: Finn Shipley
    brain:
      kind: script
      default: '{{range .Memories}}{{.From}} told me: {{.Text}}|{{else}}no news{{end}}'
    platforms: {web: {}}
  - id: priest
    name: Priest
    brain:
      kind: script
      default: '{{range .Memories}}{{.From}} told me: {{.Text}}|{{else}}no news{{end}}'
    platforms: {web: {}}
  - id: judge
    name: Judge
    brain:
      kind: script
      rules:
        - match: '(?i)puppy'
          reply: '{"topic": "pets", "summary": "We adopted a puppy"}'
        - match: '(?i)garbage'
          reply: 'What lovely news! Topic: life.'
      default: none
    platforms: {web: {}}
  - id: kiosk
    name: Kiosk
    public: true
    brain: {kind: script, default: '{{len .Memories}} memories'}
    platforms: {web: {}}
`

const gossipUsers = `
users:
  - id: user-bryan
    name: Bryan
    identities: [web-bryan]
  - id: user-olive
    name: Olive
    identities: [web-olive]
    privacy: {share_with_other_bots: false}
  - id: user-ivy
    name: Ivy
    identities: [web-ivy]
    privacy: {invisible: true}
`

// gossipDir writes gossipBots and gossipUsers to a temp dir, on the
// test's store.
func gossipDir(t *testing.T) string {
	t.Helper()
	t.Setenv("SB_TEST_WEB_SECRET", "k")
	dir := t.TempDir()
	for name, body := range map[string]string{"bots.yaml": onTestStore(t, gossipBots), "users.yaml": gossipUsers} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// gossipItems lists the gossip events the API gives for query.
func gossipItems(t *testing.T, m *Main, query string) []map[string]any {
	t.Helper()
	code, body := apiGet(t, m, "/api/v1/gossip?"+query, m.AdminToken)
	if code != 200 {
		t.Fatalf("GET /api/v1/gossip?%s: %d %v", query, code, body)
	}
	return items(body)
}

// settledEvent waits for the newest event about user to be the one
// whose summary is summary, and settled (not queued).
func settledEvent(t *testing.T, m *Main, user, summary string) map[string]any {
	t.Helper()
	var got map[string]any
	waitUntil(10*time.Second, func() bool {
		its := gossipItems(t, m, "user="+user+"&limit=1")
		if len(its) == 1 && its[0]["summary"] == summary && its[0]["status"] != gossip.StatusQueued {
			got = its[0]
			return true
		}
		return false
	})
	if got == nil {
		t.Fatalf("no settled event %q about %s; events: %v", summary, user, gossipItems(t, m, "user="+user))
	}
	return got
}

// strs lists a JSON list of strings.
func strs(v any) []string {
	out := []string{}
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// memoryNotes lists the system messages of bot's session with user, as
// the admin API shows them.
func memoryNotes(t *testing.T, m *Main, user, bot string) []string {
	t.Helper()
	_, body := apiGet(t, m, "/api/v1/sessions?user="+user+"&bot="+bot, m.AdminToken)
	out := []string{}
	for _, s := range items(body) {
		_, msgs := apiGet(t, m, "/api/v1/sessions/"+s["id"].(string)+"/messages?kind=system", m.AdminToken)
		for _, msg := range items(msgs) {
			if from := msg["from"].(map[string]any); from["name"] == gossip.NoteFrom && from["kind"] == "system" {
				out = append(out, msg["text"].(string))
			}
		}
	}
	return out
}

// News told to one bot reaches the others that know the person, as a
// memory in their sessions and prompts; the reply to the news is not
// kept waiting; every blocking rule stores a blocked event with its
// reason and delivers nothing.
func TestGossipEndToEnd(t *testing.T) {
	m := startMain(t, gossipDir(t))
	bryan := signedIn(t, m, "bryan")
	for _, text := range []string{"hi finn", "how are you?"} {
		if got := bryan.say(map[string]any{"bot": "finn"}, text, "finn"); got != "no news" {
			t.Fatalf("finn said %q", got)
		}
	}
	bryan.say(map[string]any{"bot": "priest"}, "hi priest", "priest")
	bryan.say(map[string]any{"bot": "judge"}, "hi judge", "judge")
	bryan.say(map[string]any{"bot": "judge"}, "bye judge", "judge")

	if got := bryan.say(map[string]any{"bot": "elena"}, "Guess what? I got a new job at a tech company", "elena"); got != "Elena: noted." {
		t.Fatalf("elena said %q", got)
	}
	e := settledEvent(t, m, "user-bryan", "I got a new job at a tech company")
	if e["status"] != gossip.StatusDelivered || e["topic"] != "career" || e["source_bot"] != "elena" || e["user"] != "user-bryan" ||
		e["depth"] != 0.0 || e["reason"] != "" || !slices.Equal(strs(e["recipients"]), []string{"finn", "judge"}) {
		t.Errorf("event = %v; want career from elena, delivered to finn and judge (priest has one message)", e)
	}
	if got := bryan.say(map[string]any{"bot": "finn"}, "anything new?", "finn"); got != "Elena told me: Bryan: I got a new job at a tech company|" {
		t.Errorf("finn said %q", got)
	}
	if got := bryan.say(map[string]any{"bot": "priest"}, "anything new?", "priest"); got != "no news" {
		t.Errorf("priest, who knows bryan too little, said %q", got)
	}
	want := "[Gossip from Elena] Bryan: I got a new job at a tech company"
	if got := memoryNotes(t, m, "user-bryan", "finn"); !slices.Equal(got, []string{want}) {
		t.Errorf("finn's session holds %q, want %q", got, want)
	}
	// The person never sees a memory: the widget's history of finn
	// leaves system messages out.
	bryan.send(map[string]any{"type": "history", "bot": "finn"})
	for _, msg := range bryan.await("history")["messages"].([]any) {
		if strings.Contains(msg.(map[string]any)["text"].(string), "[Gossip from") {
			t.Errorf("the widget showed the memory: %v", msg)
		}
	}

	// The classifier judges what no pattern matches; garbage is none.
	bryan.say(map[string]any{"bot": "elena"}, "We adopted a puppy yesterday!", "elena")
	// priest knows bryan well enough by now.
	if e := settledEvent(t, m, "user-bryan", "We adopted a puppy"); e["topic"] != "pets" || !slices.Equal(strs(e["recipients"]), []string{"finn", "judge", "priest"}) {
		t.Errorf("classified event = %v", e)
	}
	bryan.say(map[string]any{"bot": "elena"}, "this is garbage to the judge", "elena")

	// Every blocking rule, one case each.
	olive, ivy := signedIn(t, m, "olive"), signedIn(t, m, "ivy")
	for _, tc := range []struct {
		name   string
		who    *client
		user   string
		bot    string
		text   string
		reason string
		depth  float64
	}{
		{"sensitive", bryan, "user-bryan", "elena", "I got promoted, and my salary doubled.", `sensitive topic "salary"`, 0},
		{"opted out", olive, "user-olive", "elena", "I got a new job!", "share_with_other_bots: false", 0},
		{"invisible", ivy, "user-ivy", "elena", "I got a new job!", "invisible: true", 0},
		{"depth", bryan, "user-bryan", "elena", "Finn says " + want, "gossip about gossip never travels (depth 1)", 1},
		{"public source", bryan, "web-bryan", "kiosk", "Moving to Lisbon next month.", "public bot kiosk", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // the bots know them well enough
				tc.who.say(map[string]any{"bot": "finn"}, "hello", "finn")
			}
			tc.who.say(map[string]any{"bot": tc.bot}, tc.text, tc.bot)
			var e map[string]any
			waitUntil(10*time.Second, func() bool {
				for _, it := range gossipItems(t, m, "user="+tc.user+"&status=blocked") {
					if strings.Contains(it["reason"].(string), tc.reason) {
						e = it
						return true
					}
				}
				return false
			})
			if e == nil || e["depth"] != tc.depth || len(strs(e["recipients"])) != 0 || len(strs(e["pending"])) != 0 {
				t.Fatalf("blocked event for %s = %v; events: %v", tc.reason, e, gossipItems(t, m, "user="+tc.user))
			}
			if got := tc.who.say(map[string]any{"bot": "finn"}, "anything new?", "finn"); strings.Contains(got, tc.text) ||
				(tc.who != bryan && got != "no news") {
				t.Errorf("finn said %q", got)
			}
		})
	}
	if got := memoryNotes(t, m, "user-bryan", "finn"); len(got) != 2 {
		t.Errorf("finn's memories of bryan after the blocked events: %q", got)
	}
	// A public bot gets no memories in its prompts.
	if got := bryan.say(map[string]any{"bot": "kiosk"}, "anything?", "kiosk"); got != "0 memories" {
		t.Errorf("kiosk said %q", got)
	}

	// No event is deeper than 1; garbage made none.
	all := gossipItems(t, m, "limit=500")
	for _, it := range all {
		if it["depth"].(float64) > 1 {
			t.Errorf("event deeper than 1: %v", it)
		}
		if strings.Contains(it["summary"].(string), "garbage") {
			t.Errorf("garbage made an event: %v", it)
		}
	}
	// The API takes a platform ID for the person and filters by status;
	// a bad status is refused.
	if got := gossipItems(t, m, "user=web-bryan&status=delivered"); len(got) != 2 {
		t.Errorf("bryan's delivered events = %v", got)
	}
	if code, body := apiGet(t, m, "/api/v1/gossip?status=sent", m.AdminToken); code != 400 || !strings.Contains(fmt.Sprint(body), "status must be") {
		t.Errorf("a bad status: %d %v", code, body)
	}
}

// A restart mid-delivery: the first gateway delivers one of three
// memories and stops; the next start delivers the other two, and each
// bot holds its memory once.
func TestGossipRestartMidDelivery(t *testing.T) {
	dir := gossipDir(t)
	var allowed atomic.Int64
	allowed.Store(1)
	first := &Main{ConfigDir: dir, Listen: "127.0.0.1:0", Logger: testLogger(t),
		gossipBefore: func(context.Context, gossip.Delivery) error {
			if allowed.Add(-1) >= 0 {
				return nil
			}
			return errors.New("the gateway goes down before this one")
		}}
	if err := first.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	bryan := signedIn(t, first, "bryan")
	for _, bot := range []string{"finn", "priest", "judge"} {
		for range 2 {
			bryan.say(map[string]any{"bot": bot}, "hello", bot)
		}
	}
	bryan.say(map[string]any{"bot": "elena"}, "I got a new job!", "elena")
	var e map[string]any
	waitUntil(10*time.Second, func() bool {
		its := gossipItems(t, first, "user=user-bryan")
		if len(its) == 1 && len(strs(its[0]["recipients"])) == 1 {
			e = its[0]
			return true
		}
		return false
	})
	if e == nil || e["status"] != gossip.StatusQueued || len(strs(e["pending"])) != 2 {
		t.Fatalf("before the restart: %v", e)
	}
	first.Close()

	second := startMain(t, dir)
	e = settledEvent(t, second, "user-bryan", "I got a new job!")
	if e["status"] != gossip.StatusDelivered || len(strs(e["recipients"])) != 3 {
		t.Errorf("after the restart: %v", e)
	}
	for _, bot := range []string{"finn", "priest", "judge"} {
		if got := memoryNotes(t, second, "user-bryan", bot); len(got) != 1 {
			t.Errorf("%s holds %d memories: %q", bot, len(got), got)
		}
	}
	bryan = signedIn(t, second, "bryan")
	if got := bryan.say(map[string]any{"bot": "priest"}, "news?", "priest"); got != "Elena told me: Bryan: I got a new job!|" {
		t.Errorf("priest said %q", got)
	}
}

// The defaults of shared.gossip in the configuration are the grapevine's.
func TestGossipDefaultsAgree(t *testing.T) {
	d := gossip.DefaultSettings()
	cfg := &config.Config{}
	cfg.Shared.Gossip = config.SharedGossip{Enabled: true, MinMessages: config.DefaultGossipMinMessages,
		Memories: config.DefaultGossipMemories, SensitiveTopics: config.DefaultGossipSensitiveTopics, Patterns: config.DefaultGossipPatterns}
	s := gossipSettings(cfg)
	if s.Enabled != d.Enabled || s.MinMessages != d.MinMessages || s.Memories != d.Memories || !slices.Equal(s.SensitiveTopics, d.SensitiveTopics) {
		t.Errorf("config's defaults %+v, the grapevine's %+v", s, d)
	}
	if len(s.Patterns) != len(d.Patterns) {
		t.Fatalf("%d patterns, want %d", len(s.Patterns), len(d.Patterns))
	}
	for i := range s.Patterns {
		if s.Patterns[i].Match.String() != d.Patterns[i].Match.String() || s.Patterns[i].Topic != d.Patterns[i].Topic {
			t.Errorf("pattern %d: %v, want %v", i, s.Patterns[i], d.Patterns[i])
		}
	}
}
