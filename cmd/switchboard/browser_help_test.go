package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// helpPageBots are helpBots with a slow bot, whose queue the page shows.
func helpPageBots(agent string) string {
	return helpBots(agent) + `  - id: slowpoke
    name: Slowpoke
    brain:
      kind: exec
      command: [/bin/sh, -c, 'sleep 1.5; echo done']
    platforms:
      web: {}
`
}

// TestBrowserHelpQueueFocus drives the widget as a person would: Matty's
// agent asks Finn for help, and the page shows the request's status and
// Matty's follow-up, never Finn's answer; a message sent while a bot is
// busy is marked queued until its reply; in a room, /focus makes Finn
// answer plain messages, and /unfocus ends it.
func TestBrowserHelpQueueFocus(t *testing.T) {
	agent := buildFakeAgent(t)
	t.Setenv("FAKE_AGENT_LOG", filepath.Join(t.TempDir(), "agent.jsonl"))
	t.Setenv("FAKE_AGENT_ASK", "finnshipley")
	t.Setenv("FAKE_AGENT_QUESTION", "what's the auth pattern?")
	m := startMain(t, writeConfigDir(t, helpPageBots(agent)))
	ctx := browser(t)

	// A help request: its status in the panel, Matty's follow-up in the chat.
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/"),
		openBot("mattyatlas"),
		say("how do we log people in?"),
	); err != nil {
		t.Fatalf("asking Matty: %v", err)
	}
	waitJS(t, ctx, "Matty's follow-up", `[...document.querySelectorAll("#messages .msg-bot .text")].some((e) => e.textContent.includes("Finn Shipley says:"))`)
	waitJS(t, ctx, "the help request done in the panel", `!!document.querySelector('#deleg-done li.delegation[data-status="done"]')`)
	if row := strings.Join(texts(t, ctx, `#deleg-done li.delegation`), "\n"); !strings.Contains(row, "Matty Atlas asked Finn Shipley: what's the auth pattern?") {
		t.Errorf("panel row %q", row)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#deleg-finished summary`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "help-request")
	if page := text(t, ctx, "body"); strings.Contains(page, finnSecret) {
		t.Errorf("the page shows Finn's answer:\n%s", page)
	}
	// Finn's chat shows the request, not its answer.
	if err := chromedp.Do(ctx, openBot("finnshipley")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the request in Finn's panel", `!!document.querySelector('#deleg-done li.delegation')`)
	if n := len(texts(t, ctx, "#messages .msg")); n != 0 {
		t.Errorf("Finn's chat shows %d messages, want none", n)
	}

	// A queued message: marked until its reply.
	if err := chromedp.Do(ctx, openBot("slowpoke"), say("first job"), say("second job")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the queued mark", `[...document.querySelectorAll("#messages .msg-queued")].some((e) => e.textContent === "Queued · 1 ahead")`)
	screenshot(t, ctx, "queued")
	waitJS(t, ctx, "both replies", `document.querySelectorAll("#messages .msg-bot").length === 2`)
	waitJS(t, ctx, "the mark gone", `!document.querySelector("#messages .msg-queued")`)

	// Focus in a room.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#new-room`)),
		chromedp.WaitVisible(chromedp.CSS(`#room-name`)),
		chromedp.SendKeys(chromedp.CSS(`#room-name`), "lab"),
		chromedp.Click(chromedp.CSS(`#room-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`button.room[data-chat="lab"]`)),
		say("/focus finn"),
	); err != nil {
		t.Fatalf("focus in a room: %v", err)
	}
	botSaid := func(n int, what string) {
		t.Helper()
		waitJS(t, ctx, what, `document.querySelectorAll("#messages .msg-bot").length >= `+strconv.Itoa(n))
	}
	botSaid(1, "Finn's confirmation")
	if err := chromedp.Do(ctx, say("and the login page?")); err != nil {
		t.Fatal(err)
	}
	botSaid(2, "Finn's answer to a plain message")
	got := texts(t, ctx, "#messages .msg-bot .text")
	if len(got) != 2 || !strings.Contains(got[0], "your messages here come to me (Finn Shipley) until you say /unfocus") || got[1] != "Finn here" {
		t.Errorf("room replies %q", got)
	}
	screenshot(t, ctx, "focus")
}
