package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/platforms/discord/discordtest"
	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
)

// Bot-to-bot chains end to end (SPEC §10.6): three bots share a group on
// the web, on Telegram (through its wire fake: Telegram never shows a bot
// another bot's message, so the gateway routes them) and on Discord
// (whose fake shows them, and whose adapter leaves them to the gateway).

// chainBot is one bot of a chain test: its ID, brain (YAML, indented
// for the brain key) and platform names.
type chainBot struct {
	id, name string
	brain    string
	tg, dc   string // Telegram username, Discord user ID
}

// chatty is a script brain that addresses the others in every message
// and says which chain step it is.
func chatty(others string) string {
	return `kind: script
      default: '{{if .Crossbot}}{{if .Crossbot.Closing}}Closing at {{.Crossbot.Length}}, bye ` + others +
		`{{else}}Step {{.Crossbot.Length}}: ` + others + ` go on{{end}}{{else}}` + others + ` what do you think?{{end}}'`
}

// gated is an exec brain that answers text once the file gate exists.
func gated(gate, text string) string {
	return fmt.Sprintf(`kind: exec
      command: [/bin/sh, -c, 'while [ ! -e %s ]; do sleep 0.02; done; echo "%s"']
      timeout: 1m`, gate, text)
}

func chatty3() []chainBot {
	return []chainBot{
		{id: "mattyatlas", name: "Matty Atlas", brain: chatty("@finnshipley @priest"), tg: "matty_bot", dc: "8001"},
		{id: "finnshipley", name: "Finn Shipley", brain: chatty("@mattyatlas @priest"), tg: "finn_bot", dc: "8002"},
		{id: "priest", name: "Priest", brain: chatty("@mattyatlas @finnshipley"), tg: "priest_bot", dc: "8003"},
	}
}

// chainRoom is a group with the bots on one platform, seen by a person.
type chainRoom interface {
	// say is the person's message to bot (an ID) in the group.
	say(t *testing.T, bot, text string)
	// next is the next bot message in the group, "bot: text".
	next(t *testing.T) string
	// quiet checks that no bot says anything for a while.
	quiet(t *testing.T)
}

// botSaid collects bot messages "bot: text" as they come.
type botSaid chan string

func (c botSaid) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(15 * time.Second):
		t.Fatal("no bot message in time")
		return ""
	}
}

func (c botSaid) quiet(t *testing.T) {
	t.Helper()
	select {
	case s := <-c:
		t.Fatalf("unexpected bot message %q", s)
	case <-time.After(400 * time.Millisecond):
	}
}

// chainEnv is a running gateway with the bots on platform, and the room.
type chainEnv struct {
	m    *Main
	dir  string
	room chainRoom
	// ann is the person's user ID in the API.
	ann string
}

// startChains runs the bots with gateway.crossbot set to crossbot, in a
// group on platform (web, telegram or discord).
func startChains(t *testing.T, platform, crossbot string, bots []chainBot) *chainEnv {
	t.Helper()
	dir := t.TempDir()
	var tg *telegramtest.Server
	var dc *discordtest.Server
	var b strings.Builder
	fmt.Fprintf(&b, "gateway:\n  listen: 127.0.0.1:0\n  database: test.db\n  crossbot: %s\nbots:\n", crossbot)
	switch platform {
	case "telegram":
		tg = telegramtest.New(t)
	case "discord":
		dc = discordtest.New(t)
	}
	for i, bot := range bots {
		fmt.Fprintf(&b, "  - id: %s\n    name: %s\n    brain:\n      %s\n    platforms:\n", bot.id, bot.name, bot.brain)
		env := fmt.Sprintf("SB_CHAIN_%d", i)
		switch platform {
		case "web":
			b.WriteString("      web: {}\n")
		case "telegram":
			tg.AddBot(bot.id+"-token", int64(9001+i), bot.tg)
			t.Setenv(env, bot.id+"-token")
			fmt.Fprintf(&b, "      telegram: {token_env: %s, api_url: %s}\n", env, tg.URL)
		case "discord":
			dc.AddBot(bot.id+"-token", bot.dc, bot.id)
			t.Setenv(env, bot.id+"-token")
			fmt.Fprintf(&b, "      discord: {token_env: %s, api_url: %s, gateway_url: %s}\n", env, dc.APIURL(), dc.GatewayURL())
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(onTestStore(t, b.String())), 0o644); err != nil {
		t.Fatal(err)
	}
	users := "users:\n  - id: user-ann\n    name: Ann\n    identities: [telegram-111, discord-222]\n"
	if err := os.WriteFile(filepath.Join(dir, "users.yaml"), []byte(users), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &chainEnv{m: startMain(t, dir), dir: dir, ann: "user-ann"}
	switch platform {
	case "web":
		e.room = webRoom(t, e.m, bots)
		e.ann = e.room.(*webChainRoom).c.hello["platform_id"].(string)
	case "telegram":
		r := &tgChainRoom{srv: tg, bots: bots, seen: map[string]int{}, out: make(botSaid, 100)}
		r.push(telegramtest.Group(chainGroup, ann, "hello all"))
		e.room = r
	case "discord":
		r := &dcChainRoom{srv: dc, bots: bots, out: make(botSaid, 100)}
		go r.listen(t)
		r.srv.DispatchAll(r.srv.GuildMessage("42", chainChannel, discordtest.User{ID: "222", Username: "ann"}, "hello all"))
		e.room = r
	}
	if platform != "web" {
		// A bot takes part in a Telegram group or a Discord channel once
		// it has a message from there: each has Ann's greeting.
		waitEventsIn(t, e.m, len(bots))
	}
	return e
}

// waitEventsIn waits until the gateway has stored n platform messages.
func waitEventsIn(t *testing.T, m *Main, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, body := apiGet(t, m, "/api/v1/health", m.AdminToken); body["messages_in_total"] != nil && body["messages_in_total"].(float64) >= float64(n) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the gateway did not store %d messages", n)
}

// webChainRoom is a web room "lobby" with the bots.
type webChainRoom struct {
	c   *client
	out botSaid
	n   int
}

func webRoom(t *testing.T, m *Main, bots []chainBot) *webChainRoom {
	t.Helper()
	c := dial(t, m.Addr(), nil)
	var ids []string
	for _, b := range bots {
		ids = append(ids, b.id)
	}
	c.send(map[string]any{"type": "join", "chat": "lobby", "bots": ids})
	c.expect("joined")
	r := &webChainRoom{c: c, out: make(botSaid, 100)}
	go func() {
		for {
			var f map[string]any
			if err := c.ws.ReadJSON(&f); err != nil {
				return
			}
			if f["type"] == "message" {
				if from, _ := f["from"].(map[string]any); from["kind"] == "bot" {
					r.out <- fmt.Sprint(f["bot"], ": ", f["text"])
				}
			}
		}
	}()
	return r
}

func (r *webChainRoom) say(t *testing.T, bot, text string) {
	r.n++
	r.c.send(map[string]any{"type": "send", "chat": "lobby", "text": "@" + bot + " " + text, "client_id": fmt.Sprint(r.n)})
}
func (r *webChainRoom) next(t *testing.T) string { t.Helper(); return r.out.next(t) }
func (r *webChainRoom) quiet(t *testing.T)       { t.Helper(); r.out.quiet(t) }

// tgChainRoom is a Telegram group where each bot gets its own copy of
// Ann's messages (privacy mode off), as Telegram does.
type tgChainRoom struct {
	srv  *telegramtest.Server
	bots []chainBot
	mu   sync.Mutex
	seen map[string]int // messages read of each bot
	out  botSaid
}

var chainGroup = telegramtest.GroupChat(-300, "crew")

func (r *tgChainRoom) say(t *testing.T, bot, text string) {
	var username string
	for _, b := range r.bots {
		if b.id == bot {
			username = b.tg
		}
	}
	text = "@" + username + " " + text
	r.push(telegramtest.Group(chainGroup, ann, text, telegramtest.MentionOf(text, "@"+username)))
}

// push gives every bot its copy of one message of the supergroup: the
// same message ID and date, as Telegram does.
func (r *tgChainRoom) push(u telegramtest.Update) {
	for _, b := range r.bots {
		u = r.srv.Push(b.id+"-token", u)
	}
}

func (r *tgChainRoom) poll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bots {
		sent := r.srv.Sent(b.id + "-token")
		for _, m := range sent[r.seen[b.id]:] {
			if m.ChatID == chainGroup.ID {
				r.out <- b.id + ": " + m.Text
			}
		}
		r.seen[b.id] = len(sent)
	}
}

func (r *tgChainRoom) next(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		r.poll()
		select {
		case s := <-r.out:
			return s
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("no bot message in time")
	return ""
}

func (r *tgChainRoom) quiet(t *testing.T) {
	t.Helper()
	time.Sleep(400 * time.Millisecond)
	r.poll()
	r.out.quiet(t)
}

// dcChainRoom is a Discord guild channel with the bots.
type dcChainRoom struct {
	srv  *discordtest.Server
	bots []chainBot
	out  botSaid
}

const chainChannel = "700"

func (r *dcChainRoom) listen(t *testing.T) {
	for m := range r.srv.Messages() {
		for _, b := range r.bots {
			if b.dc == m.Bot && m.ChannelID == chainChannel {
				r.out <- b.id + ": " + m.Content
			}
		}
	}
}

func (r *dcChainRoom) say(t *testing.T, bot, text string) {
	for _, b := range r.bots {
		if b.id == bot {
			text = discordtest.Mention(b.dc) + " " + text
		}
	}
	r.srv.DispatchAll(r.srv.GuildMessage("42", chainChannel, discordtest.User{ID: "222", Username: "ann"}, text))
}
func (r *dcChainRoom) next(t *testing.T) string { t.Helper(); return r.out.next(t) }
func (r *dcChainRoom) quiet(t *testing.T)       { t.Helper(); r.out.quiet(t) }

// collect reads n bot messages, sorted after the first keep of them
// (their order there is the order of independent turns).
func collect(t *testing.T, r chainRoom, n, keep int) []string {
	t.Helper()
	var got []string
	for range n {
		got = append(got, r.next(t))
	}
	slices.Sort(got[keep:])
	return got
}

// chainsOf reads GET /api/v1/chains.
func chainsOf(t *testing.T, m *Main) []map[string]any {
	t.Helper()
	_, body := apiGet(t, m, "/api/v1/chains", m.AdminToken)
	return items(body)
}

var chainPlatforms = []string{"web", "telegram", "discord"}

// With chance 1, three adversarial bots stop at max_chain, the last step
// closing; within the cooldown no new chain starts, while people are
// answered as usual.
func TestChainMaxAndCooldown(t *testing.T) {
	for _, platform := range chainPlatforms {
		t.Run(platform, func(t *testing.T) {
			e := startChains(t, platform, "{max_chain: 3, response_chance: 1.0, cooldown: 1h}", chatty3())
			e.room.say(t, "mattyatlas", "what's the plan?")
			got := collect(t, e.room, 4, 2)
			want := []string{
				"mattyatlas: @finnshipley @priest what do you think?",
				"finnshipley: Step 1: @mattyatlas @priest go on",
				"mattyatlas: Closing at 3, bye @finnshipley @priest", // Matty answers Finn, Priest Matty
				"priest: Step 2: @mattyatlas @finnshipley go on",
			}
			if !slices.Equal(got, want) {
				t.Errorf("chain:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			e.room.quiet(t)

			// Within the cooldown: a person is answered, and nothing more.
			e.room.say(t, "mattyatlas", "again?")
			if got := e.room.next(t); got != "mattyatlas: @finnshipley @priest what do you think?" {
				t.Errorf("Matty's answer = %q", got)
			}
			e.room.quiet(t)
			e.room.say(t, "priest", "and you?")
			if got := e.room.next(t); got != "priest: @mattyatlas @finnshipley what do you think?" {
				t.Errorf("Priest's answer = %q", got)
			}
			e.room.quiet(t)

			list := chainsOf(t, e.m)
			if len(list) != 1 || list[0]["status"] != "ended" || list[0]["steps"] != 3.0 || list[0]["chain"] != 1.0 || list[0]["cooldown_until"] == nil {
				t.Errorf("chains = %v", list)
			}
		})
	}
}

// With chance 0 only a reply and the chain's first message are answered:
// Priest, only mentioned or named, never speaks.
func TestChainChanceZero(t *testing.T) {
	bots := chatty3()
	bots[0].brain = `kind: script
      default: '{{if .Crossbot}}Bye @priest.{{else}}@finnshipley, thoughts?{{end}}'`
	bots[1].brain = `kind: script
      default: "I'd ask @priest, or priest himself."`
	for _, platform := range chainPlatforms {
		t.Run(platform, func(t *testing.T) {
			e := startChains(t, platform, "{max_chain: 2, response_chance: 0, cooldown: 1h}", bots)
			e.room.say(t, "mattyatlas", "plan?")
			got := collect(t, e.room, 3, 3)
			want := []string{"mattyatlas: @finnshipley, thoughts?", "finnshipley: I'd ask @priest, or priest himself.", "mattyatlas: Bye @priest."}
			if !slices.Equal(got, want) {
				t.Errorf("chain = %q, want %q", got, want)
			}
			e.room.quiet(t)
			if list := chainsOf(t, e.m); len(list) != 1 || list[0]["status"] != "closed" || list[0]["steps"] != 2.0 {
				t.Errorf("chains = %v", list)
			}
		})
	}
}

// Two messages of Matty within the burst, both addressing Finn, count as
// one: Finn answers once. The bots wait for gates the test opens, so
// that Matty's two answers follow each other.
func TestChainBurst(t *testing.T) {
	for _, platform := range chainPlatforms {
		t.Run(platform, func(t *testing.T) {
			gates := t.TempDir()
			bots := chatty3()[:2]
			bots[0].brain = gated(filepath.Join(gates, "matty"), "@finnshipley on it")
			bots[1].brain = gated(filepath.Join(gates, "finn"), "Finn answers")
			e := startChains(t, platform, "{max_chain: 2, response_chance: 1.0, cooldown: 1h, burst: 30s}", bots)
			e.room.say(t, "mattyatlas", "part one")
			e.room.say(t, "mattyatlas", "part two")
			waitSessionMessages(t, e.m, "mattyatlas", 2)
			open := func(name string) {
				if err := os.WriteFile(filepath.Join(gates, name), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			open("matty")
			got := collect(t, e.room, 2, 2)
			if got[0] != "mattyatlas: @finnshipley on it" || got[1] != got[0] {
				t.Fatalf("Matty = %q", got)
			}
			open("finn")
			// Finn answers the burst once; Matty answers Finn: the closing
			// step; then nothing.
			got = collect(t, e.room, 2, 2)
			if !slices.Equal(got, []string{"finnshipley: Finn answers", "mattyatlas: @finnshipley on it"}) {
				t.Errorf("after the burst = %q", got)
			}
			e.room.quiet(t)
			if list := chainsOf(t, e.m); len(list) != 1 || list[0]["steps"] != 2.0 || list[0]["status"] != "closed" {
				t.Errorf("chains = %v", list)
			}
		})
	}
}

// waitSessionMessages waits until bot's session with the person holds n
// chat messages: what the person said is stored.
func waitSessionMessages(t *testing.T, m *Main, bot string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, body := apiGet(t, m, "/api/v1/sessions?bot="+bot, m.AdminToken)
		if list := items(body); len(list) == 1 {
			_, body = apiGet(t, m, "/api/v1/sessions/"+list[0]["id"].(string)+"/messages?kind=chat", m.AdminToken)
			if len(items(body)) >= n {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s's session does not hold %d messages", bot, n)
}

// A chain's state is stored: stopped while Finn's step waits, the gateway
// starts again, Finn answers as step 1 and Matty closes at step 2.
func TestChainRestart(t *testing.T) {
	gates := t.TempDir()
	bots := chatty3()[:2]
	bots[0].brain = chatty("@finnshipley")
	bots[1].brain = gated(filepath.Join(gates, "finn"), "Finn is back")
	e := startChains(t, "web", "{max_chain: 2, response_chance: 1.0, cooldown: 1h}", bots)
	r := e.room.(*webChainRoom)
	token := r.c.hello["token"].(string)
	r.say(t, "mattyatlas", "go")
	if got := r.next(t); got != "mattyatlas: @finnshipley what do you think?" {
		t.Fatalf("Matty = %q", got)
	}
	if err := e.m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := os.WriteFile(filepath.Join(gates, "finn"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	m2 := startMain(t, e.dir)
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, body := apiGet(t, m2, "/api/v1/chains", m2.AdminToken)
		if list := items(body); len(list) == 1 && list[0]["status"] == "closed" {
			if list[0]["steps"] != 2.0 {
				t.Errorf("chain after the restart = %v", list[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the chain did not close after the restart")
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := dial(t, m2.Addr(), url.Values{"token": {token}})
	var texts []string
	for range 50 {
		c.send(map[string]any{"type": "history", "chat": "lobby"})
		texts = texts[:0]
		for _, msg := range c.expect("history")["messages"].([]any) {
			texts = append(texts, msg.(map[string]any)["text"].(string))
		}
		if len(texts) == 4 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	want := "@mattyatlas go|@finnshipley what do you think?|Finn is back|Closing at 2, bye @finnshipley"
	if strings.Join(texts, "|") != want {
		t.Errorf("the room after the restart = %q\nwant %q", strings.Join(texts, "|"), want)
	}
}
