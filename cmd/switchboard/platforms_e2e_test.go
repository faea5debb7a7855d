package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/platforms/discord/discordtest"
	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
)

// platformBots: Matty on Telegram and the web, Finn on Discord only.
func platformBots(tgURL, dcAPI, dcGateway string) string {
	return fmt.Sprintf(`
gateway:
  listen: 127.0.0.1:0
  database: test.db
bots:
  - id: mattyatlas
    name: Matty Atlas
    aliases: [matty]
    brain:
      kind: script
      rules:
        - match: '(?i)opinion'
          reply: '@finnshipley what do you think of {{.Text}}'
      default: 'Matty heard: {{.Text}}'
    platforms:
      web: {}
      telegram: {token_env: SB_MATTY_TG, api_url: %[1]s}
    delegation:
      allow: [finnshipley]
  - id: finnshipley
    name: Finn Shipley
    aliases: [finn]
    brain:
      kind: script
      default: '{{if .Delegation}}Finn did: {{.Delegation.Task}} for {{.User.Name}}{{else}}Finn here: {{.Text}}{{end}}'
    platforms:
      discord: {token_env: SB_FINN_DC, api_url: %[2]s, gateway_url: %[3]s}
      telegram: {token_env: SB_FINN_TG, api_url: %[1]s}
`, tgURL, dcAPI, dcGateway)
}

const platformUsers = `
users:
  - id: user-ann
    name: Ann
    identities: [telegram-111, discord-222, web-ann]
`

func startPlatforms(t *testing.T, withFinnOnTelegram bool) (*Main, *telegramtest.Server, *discordtest.Server) {
	t.Helper()
	tg := telegramtest.New(t)
	tg.AddBot("matty-token", 9001, "matty_bot")
	dc := discordtest.New(t)
	dc.AddBot("finn-token", "8002", "finn")
	t.Setenv("SB_MATTY_TG", "matty-token")
	t.Setenv("SB_FINN_DC", "finn-token")
	if withFinnOnTelegram {
		tg.AddBot("finn-tg-token", 9002, "finn_bot")
		t.Setenv("SB_FINN_TG", "finn-tg-token")
	} else {
		t.Setenv("SB_FINN_TG", "")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(onTestStore(t, platformBots(tg.URL, dc.APIURL(), dc.GatewayURL()))), 0o644)
	os.WriteFile(filepath.Join(dir, "users.yaml"), []byte(platformUsers), 0o644)
	return startMain(t, dir), tg, dc
}

var ann = telegramtest.User{ID: 111, FirstName: "Ann"}

// A user known on Telegram and Discord asks Matty on Telegram to hand work
// to Finn, who is only on Discord: Finn answers in her Discord DM, in the
// one session she has with Finn.
func TestCrossPlatformHandOff(t *testing.T) {
	m, tg, dc := startPlatforms(t, false)
	tg.Push("matty-token", telegramtest.Private(ann, "Tell Finn Shipley to write the tests"))

	sent, err := tg.WaitSent("matty-token", 1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sent[0].Text, "Handing this to Finn Shipley: write the tests") || sent[0].ChatID != 111 {
		t.Errorf("Matty's acknowledgement on Telegram = %+v", sent[0])
	}
	var finn discordtest.SentMessage
	select {
	case finn = <-dc.Messages():
	case <-time.After(10 * time.Second):
		t.Fatal("Finn said nothing on Discord")
	}
	if finn.Content != "Finn did: write the tests for Ann" || finn.ChannelID != dc.DMChannel("finn-token", "222") {
		t.Errorf("Finn on Discord = %+v (DM channel %s)", finn, dc.DMChannel("finn-token", "222"))
	}
	notice, err := tg.WaitSent("matty-token", 2, 10*time.Second)
	if err != nil || !strings.HasPrefix(notice[1].Text, "Finn Shipley finished: Finn did: write the tests") {
		t.Errorf("Matty's notice on Telegram = %+v, %v", notice, err)
	}

	// Ann's one session with Finn holds the Discord reply; a DM from her on
	// Discord continues it.
	_, body := apiGet(t, m, "/api/v1/sessions?user=web-ann&bot=finnshipley", m.AdminToken)
	sessions := items(body)
	if len(sessions) != 1 {
		t.Fatalf("Ann's sessions with Finn = %v", sessions)
	}
	dc.Dispatch("finn-token", dc.DM("finn-token", discordtest.User{ID: "222", Username: "ann"}, "thanks!"))
	select {
	case r := <-dc.Messages():
		if r.Content != "Finn here: thanks!" {
			t.Errorf("Finn's DM reply = %q", r.Content)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reply to Ann's DM")
	}
	_, body = apiGet(t, m, "/api/v1/sessions/"+sessions[0]["id"].(string)+"/messages?kind=chat", m.AdminToken)
	var texts []string
	for _, msg := range items(body) {
		texts = append(texts, msg["platform"].(string)+":"+msg["text"].(string))
	}
	if got := strings.Join(texts, "|"); got != "discord:Finn did: write the tests for Ann|discord:thanks!|discord:Finn here: thanks!" {
		t.Errorf("Finn's session = %s", got)
	}
	_, body = apiGet(t, m, "/api/v1/sessions?user=discord-222&bot=finnshipley", m.AdminToken)
	if s := items(body); len(s) != 1 || s[0]["id"] != sessions[0]["id"] {
		t.Errorf("the Discord identity resolves to another session: %v", s)
	}
}

// Two bots in one Telegram group: Telegram never shows one bot's message to
// the other, so the gateway routes Matty's question to Finn itself, as a
// bot-to-bot chain (SPEC §10.6): Finn answers in the group, Matty answers
// him, and the chain stops at max_chain (3 by default), Finn closing it.
func TestTwoBotsInOneTelegramGroup(t *testing.T) {
	_, tg, _ := startPlatforms(t, true)
	group := telegramtest.GroupChat(-100, "team")
	// Each bot gets its copy of a message: the same message ID and date.
	push := func(u telegramtest.Update) {
		u = tg.Push("matty-token", u)
		tg.Push("finn-tg-token", u)
	}
	push(telegramtest.Group(group, ann, "hello everyone"))
	// Both bots have now seen the group; neither was addressed.
	time.Sleep(300 * time.Millisecond)
	if n := len(tg.Sent("matty-token")) + len(tg.Sent("finn-tg-token")); n != 0 {
		t.Fatalf("%d replies to an unaddressed message", n)
	}

	text := "@matty_bot your opinion on the roof"
	push(telegramtest.Group(group, ann, text, telegramtest.MentionOf(text, "@matty_bot")))
	matty, err := tg.WaitSent("matty-token", 2, 10*time.Second)
	if err != nil || !strings.HasPrefix(matty[0].Text, "@finnshipley what do you think of") {
		t.Fatalf("Matty = %+v, %v", matty, err)
	}
	finn, err := tg.WaitSent("finn-tg-token", 2, 10*time.Second)
	if err != nil || finn[0].ChatID != -100 || finn[0].Text != "Finn here: what do you think of your opinion on the roof" {
		t.Fatalf("Finn = %+v, %v", finn, err)
	}
	time.Sleep(300 * time.Millisecond)
	if n, m := len(tg.Sent("finn-tg-token")), len(tg.Sent("matty-token")); n != 2 || m != 2 {
		t.Errorf("Finn said %d messages and Matty %d, want 2 each: the chain's 3 steps after Matty's first", n, m)
	}
}
