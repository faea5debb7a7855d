package main

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/cliclient"
	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
)

// TestFocusInWebRoom: in a web room, /focus finn sends a person's
// unaddressed messages to Finn, who confirms in one line; another
// member's unaddressed messages stay unanswered; /unfocus ends it.
func TestFocusInWebRoom(t *testing.T) {
	// Two anonymous people on one address: without the per-address
	// message limit.
	m := startMain(t, loadConfigDir(t))
	a := dial(t, m.Addr(), nil)
	b := dial(t, m.Addr(), nil)
	a.send(map[string]any{"type": "join", "chat": "lobby", "bots": []string{"mattyatlas", "finnshipley"}, "open": true})
	a.expect("joined")
	b.send(map[string]any{"type": "join", "chat": "lobby"})
	b.expect("joined")

	say := func(c *client, id, text string) {
		t.Helper()
		c.send(map[string]any{"type": "send", "chat": "lobby", "text": text, "client_id": id})
		for {
			f := c.read()
			if f["type"] == "error" {
				t.Fatalf("send %q refused: %v", text, f)
			}
			if f["type"] == "ack" {
				return
			}
		}
	}
	reply := func(c *client) map[string]any {
		t.Helper()
		for {
			f := c.expectAfter("message")
			if f["from"].(map[string]any)["kind"] == "bot" {
				return f
			}
		}
	}
	say(a, "1", "/focus finn")
	if f := reply(a); f["bot"] != "finnshipley" || !strings.Contains(f["text"].(string), "your messages here come to me (Finn Shipley) until you say /unfocus") {
		t.Fatalf("confirmation %v", f)
	}
	say(a, "2", "what should we ship?")
	if f := reply(a); f["bot"] != "finnshipley" || f["text"] != "Finn got what should we ship? (2 before)" {
		t.Fatalf("focused reply %v", f)
	}
	say(b, "3", "I'm not focused")
	say(a, "4", "/unfocus")
	if f := reply(a); f["bot"] != "finnshipley" || !strings.Contains(f["text"].(string), "no longer come to me (Finn Shipley)") {
		t.Fatalf("unfocus confirmation %v", f)
	}
	say(a, "5", "anyone?")
	// Nothing answers b's or a's last message: the next bot message is
	// Matty's answer to an address.
	say(a, "6", "@matty last one")
	if f := reply(a); f["bot"] != "mattyatlas" || f["text"] != "Matty Atlas heard: last one" {
		t.Fatalf("after unfocus %v", f)
	}
}

// TestFocusInTelegramGroup: two bots in a Telegram group each get their
// own copy of a message; /focus finn makes Ann's plain messages Finn's
// alone until /unfocus.
func TestFocusInTelegramGroup(t *testing.T) {
	_, tg, _ := startPlatforms(t, true)
	group := telegramtest.GroupChat(-200, "team")
	push := func(text string) {
		tg.Push("matty-token", telegramtest.Group(group, ann, text))
		tg.Push("finn-tg-token", telegramtest.Group(group, ann, text))
	}
	push("/focus@finn_bot Finn")
	finn, err := tg.WaitSent("finn-tg-token", 1, 10*time.Second)
	if err != nil || finn[0].ChatID != -200 || !strings.Contains(finn[0].Text, "Got it, Ann: your messages here come to me (Finn Shipley)") {
		t.Fatalf("Finn = %+v, %v", finn, err)
	}
	push("how is the roof?")
	finn, err = tg.WaitSent("finn-tg-token", 2, 10*time.Second)
	if err != nil || finn[1].Text != "Finn here: how is the roof?" {
		t.Fatalf("Finn = %+v, %v", finn, err)
	}
	push("/unfocus")
	finn, err = tg.WaitSent("finn-tg-token", 3, 10*time.Second)
	if err != nil || !strings.Contains(finn[2].Text, "no longer come to me (Finn Shipley)") {
		t.Fatalf("Finn = %+v, %v", finn, err)
	}
	push("and the walls?")
	time.Sleep(300 * time.Millisecond)
	if n := len(tg.Sent("finn-tg-token")); n != 3 {
		t.Errorf("Finn said %d messages, want 3", n)
	}
	if n := len(tg.Sent("matty-token")); n != 0 {
		t.Errorf("Matty said %d messages, want none: %+v", n, tg.Sent("matty-token"))
	}
}

// TestAckQueued: the ack of a message that starts a turn says how many
// turns of its session are ahead of it, the running one included; a
// message that starts none carries no queued.
func TestAckQueued(t *testing.T) {
	bots := testBots + `  - id: slowpoke
    name: Slowpoke
    brain:
      kind: exec
      command: [/bin/sh, -c, 'sleep 0.5; echo done']
    platforms:
      web: {}
`
	m := startMain(t, writeConfigDir(t, bots))
	c := dial(t, m.Addr(), nil)
	for i, id := range []string{"a", "b", "c"} {
		c.send(map[string]any{"type": "send", "bot": "slowpoke", "text": "job " + id, "client_id": id})
		ack := c.expectAfter("ack")
		if ack["client_id"] != id || ack["queued"] != float64(i) {
			t.Errorf("ack %v, want queued %d", ack, i)
		}
	}
	for range 3 {
		c.expectAfter("message")
	}
	c.send(map[string]any{"type": "join", "chat": "quiet", "bots": []string{"mattyatlas"}})
	c.expectAfter("joined")
	c.send(map[string]any{"type": "send", "chat": "quiet", "text": "nobody addressed", "client_id": "d"})
	if ack := c.expectAfter("ack"); ack["client_id"] != "d" || ack["queued"] != nil {
		t.Errorf("ack of an unaddressed message %v, want no queued", ack)
	}
	c.send(map[string]any{"type": "send", "bot": "slowpoke", "text": "again", "client_id": "e"})
	if ack := c.expectAfter("ack"); ack["queued"] != float64(0) {
		t.Errorf("ack once the queue is empty %v, want queued 0", ack)
	}
}

// TestChatLineOfHelpRequest: the terminal names a help request's status
// change as one, a hand-off's as a hand-off.
func TestChatLineOfHelpRequest(t *testing.T) {
	conn := &cliclient.Conn{Hello: cliclient.Frame{Bots: []cliclient.Bot{{ID: "finnshipley", Name: "Finn Shipley"}}}}
	for kind, want := range map[string]string{
		"help":    "[help request → Finn Shipley: done]",
		"handoff": "[hand-off → Finn Shipley: done]",
		"":        "[hand-off → Finn Shipley: done]",
	} {
		f := cliclient.Frame{Type: "delegation", Delegation: &cliclient.Delegation{Kind: kind, To: "finnshipley", Status: "done"}}
		if got := chatLine(conn, f, "cli-ann"); got != want {
			t.Errorf("kind %q: %q, want %q", kind, got, want)
		}
	}
}
