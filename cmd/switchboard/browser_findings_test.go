package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The widget's group room shows the room's findings board, live: what a
// bot posts appears at once; during an isolated stage nothing appears
// until /release shows it all; the gateway's answers to the commands are
// notes between the messages.
func TestBrowserFindingsBoard(t *testing.T) {
	m := startMain(t, writeConfigDir(t, worldBots))
	ctx := browser(t)
	send := func(text string) chromedp.Action[chromedp.Void] {
		return chromedp.Steps(chromedp.SendKeys(chromedp.CSS(`#composer`), text), chromedp.Click(chromedp.CSS(`#send`)))
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="open"]`)),
		chromedp.Click(chromedp.CSS(`#new-room`)),
		chromedp.WaitVisible(chromedp.CSS(`#room-name`)),
		chromedp.SendKeys(chromedp.CSS(`#room-name`), "launch"),
		chromedp.Click(chromedp.CSS(`#room-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`button.room[data-chat="launch"]`)),
		send("@scout found high: The auth module uses JWT with 24h expiry"),
		chromedp.WaitVisible(chromedp.CSS(`#findings-panel li.finding[data-severity="high"]`)),
		send("@scout found critical: The staging database has no backups"),
		chromedp.WaitVisible(chromedp.CSS(`#findings-panel li.finding[data-severity="critical"]`)),
	)
	if err != nil {
		t.Fatalf("findings in the room: %v", err)
	}
	waitTexts(t, ctx, `#findings-panel .finding-text`, "The staging database has no backups|The auth module uses JWT with 24h expiry")
	waitTexts(t, ctx, `#findings-panel .finding-who`, "Scout|Scout")
	waitTexts(t, ctx, `#findings-count`, "2")

	// An isolated stage: the bots' ideas stay off the board until the
	// release shows them at once.
	err = chromedp.Do(ctx,
		send("/stage diverge isolated"),
		chromedp.WaitVisible(chromedp.Search(`//div[contains(@class,"msg-system")][contains(., "Stage diverge started, isolated")]`)),
		send("@alpha idea: a login with passkeys"),
		send("@beta idea: a magic link by mail"),
		send("@alpha what do you see?"),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="messages"]//div[contains(@class,"text")][contains(text(),"alpha sees:")]`)),
	)
	if err != nil {
		t.Fatalf("the isolated stage: %v", err)
	}
	if got := strings.Join(texts(t, ctx, `#findings-panel .finding-text`), "|"); strings.Contains(got, "idea") || strings.Contains(got, "thinks") {
		t.Errorf("hidden findings on the board: %q", got)
	}
	screenshot(t, ctx, "findings-stage")
	err = chromedp.Do(ctx,
		send("/release"),
		chromedp.WaitVisible(chromedp.Search(`//div[contains(@class,"msg-system")][contains(., "Stage diverge ended")]`)),
		chromedp.WaitVisible(chromedp.Search(`//li[contains(@class,"finding")][contains(., "beta thinks a magic link by mail")]`)),
	)
	if err != nil {
		t.Fatalf("the release: %v", err)
	}
	waitTexts(t, ctx, `#findings-panel .finding-stage`, "diverge|diverge")
	screenshot(t, ctx, "findings-board")

	// The board survives a reload, from the gateway.
	err = chromedp.Do(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="open"]`)),
		chromedp.Click(chromedp.CSS(`button.room[data-chat="launch"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#findings-panel li.finding[data-severity="critical"]`)),
	)
	if err != nil {
		t.Fatalf("after a reload: %v", err)
	}
	waitTexts(t, ctx, `#findings-count`, "4")
}

// The dashboard shows the findings board of every space, live, with the
// stages running; a finding hidden in an isolated stage is marked so.
func TestBrowserDashboardFindings(t *testing.T) {
	m := startMain(t, writeConfigDir(t, worldBots))
	ann := dial(t, m.Addr(), nil)
	ann.send(map[string]any{"type": "join", "chat": "launch", "bots": []string{"scout", "alpha"}})
	ann.expect("joined")
	if got := ann.say(map[string]any{"chat": "launch"}, "@scout found critical: The staging database has no backups", "scout"); got != "Posted." {
		t.Fatalf("scout said %q", got)
	}
	if got := ann.say(map[string]any{"bot": "scout"}, "found low: The README is out of date", "scout"); got != "Posted." {
		t.Fatalf("scout said %q", got)
	}
	ctx := browser(t)
	signIn(t, ctx, m)
	waitJS(t, ctx, "the findings", `document.querySelectorAll("#findings tbody tr").length === 2`)

	// An isolated stage begins while the page is open: its finding shows
	// as hidden, the stage above the table.
	if got := ann.say(map[string]any{"chat": "launch"}, "/stage diverge isolated", "system"); !strings.Contains(got, "isolated") {
		t.Fatalf("stage answer %q", got)
	}
	ann.send(map[string]any{"type": "send", "chat": "launch", "text": "@alpha idea: passkeys", "client_id": "i"})
	waitJS(t, ctx, "the hidden finding", `document.querySelector("#findings tr.hidden-finding .hidden-tag")`)
	waitJS(t, ctx, "the stage", `document.querySelector("#stages .stage.isolated")`)
	if got := text(t, ctx, "#stages"); !strings.Contains(got, "diverge") || !strings.Contains(got, "#launch") {
		t.Errorf("stages = %q", got)
	}
	rows := texts(t, ctx, "#findings tbody tr")
	if len(rows) != 3 || !strings.Contains(rows[0], "alpha thinks passkeys") || !strings.Contains(rows[1], "private") || !strings.Contains(rows[2], "critical") {
		t.Errorf("rows = %q", rows)
	}
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(chromedp.CSS(`#findings`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "dashboard-findings")
}
