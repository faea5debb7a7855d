package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// handoffBots has Matty hand work to Finn and Finn to Priest. Finn's
// result has several lines; Priest's exec brain fails its first turn
// (exit 1) and answers after, by a marker file (MARKER).
const handoffBots = `
gateway:
  listen: 127.0.0.1:0
  database: test.db
bots:
  - id: mattyatlas
    name: Matty Atlas
    brain:
      kind: script
      default: '{{.Bot.Name}} heard: {{.Text}}'
    platforms:
      web: {}
    delegation:
      allow: [finnshipley]
  - id: finnshipley
    name: Finn Shipley
    brain:
      kind: script
      default: "{{if .Delegation}}Built {{.Text}}:\n- a sign-in form\n- a password check\n- a session cookie\n- a logout link\n- tests for each{{else}}Finn got {{.Text}}{{end}}"
    platforms:
      web: {}
    delegation:
      allow: [priest]
  - id: priest
    name: Priest
    brain:
      kind: exec
      command: [/bin/sh, -c, 'if [ -e MARKER ]; then echo "Priest looked: all good"; else touch MARKER; exit 1; fi']
      timeout: 20s
    platforms:
      web: {}
`

// handoffConfig writes handoffBots with the marker in a temp dir; unless
// priestFails, the marker is there already.
func handoffConfig(t *testing.T, priestFails bool) string {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "priest-failed-once")
	if !priestFails {
		if err := os.WriteFile(marker, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return writeConfigDir(t, strings.Replace(handoffBots, "MARKER", marker, 2))
}

// openBot opens the private chat with bot from the sidebar.
func openBot(bot string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.WaitVisible(chromedp.CSS(`button.bot[data-bot="`+bot+`"]`)),
		chromedp.Click(chromedp.CSS(`button.bot[data-bot="`+bot+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#composer`)),
	)
}

// say sends text from the composer.
func say(text string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.SendKeys(chromedp.CSS(`#composer`), text),
		chromedp.Click(chromedp.CSS(`#send`)),
	)
}

// A failed brain turn is shown as a failure, and its Retry sends the
// person's message again as a new message, which is answered; after a
// reload the failure is still marked, and already sent again.
func TestBrowserFailedTurnRetry(t *testing.T) {
	m := startMain(t, handoffConfig(t, true))
	ctx := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/"),
		openBot("priest"),
		say("review the login page"),
		chromedp.WaitVisible(chromedp.CSS(`#messages .msg.msg-turn-failed .turn-retry`)),
	)
	if err != nil {
		t.Fatalf("the failed turn in the page: %v", err)
	}
	failed, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => {
		const msg = document.querySelector("#messages .msg.msg-turn-failed");
		const bubble = msg.querySelector(".bubble");
		const style = getComputedStyle(bubble);
		return {
			text: msg.querySelector(".text").textContent,
			icon: !!bubble.querySelector(".turn-failed-icon"),
			shadow: style.boxShadow,
			background: style.backgroundColor,
			label: msg.querySelector(".turn-failed").textContent,
			plain: getComputedStyle(document.querySelector("#messages .msg-self .bubble")).backgroundColor,
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(failed["text"].(string), "Priest couldn't answer") || failed["icon"] != true ||
		failed["shadow"] == "none" || !strings.Contains(failed["label"].(string), "Retry") {
		t.Errorf("failed turn in the page = %v", failed)
	}
	screenshot(t, ctx, "failed-turn")

	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#messages .turn-retry`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="messages"]//div[contains(@class,"text") and contains(text(),"Priest looked: all good")]`)),
	)
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	after, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => {
		const mine = [...document.querySelectorAll("#messages .msg-self")];
		const retry = document.querySelector("#messages .turn-retry");
		return {
			mine: mine.map((m) => m.querySelector(".text").textContent),
			acked: mine.filter((m) => m.dataset.id).length,
			retry: retry.textContent, disabled: retry.disabled,
			failed: document.querySelectorAll("#messages .msg-turn-failed").length,
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after["mine"]) != "[review the login page review the login page]" || after["acked"] != 2.0 ||
		after["retry"] != "Sent again" || after["disabled"] != true || after["failed"] != 1.0 {
		t.Errorf("after retry: %v", after)
	}
	screenshot(t, ctx, "failed-turn-retried")

	// A reload reads the mark from the history.
	err = chromedp.Do(ctx,
		chromedp.Reload(),
		openBot("priest"),
		chromedp.WaitVisible(chromedp.CSS(`#messages .msg.msg-turn-failed .turn-retry`)),
	)
	if err != nil {
		t.Fatalf("after a reload: %v", err)
	}
	retry, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#messages .turn-retry").textContent`))
	if err != nil || retry != "Sent again" {
		t.Errorf("retry after a reload = %q, %v; want it sent again already", retry, err)
	}
}

// A hand-off's result notice keeps its lines and folds after four with
// Show more; its tag links to the target's chat; the tags stay on their
// messages across chat switches; each chat's panel shows its own
// hand-offs, finished ones folded away.
func TestBrowserHandoffNotice(t *testing.T) {
	m := startMain(t, handoffConfig(t, false))
	ctx := browser(t)
	notice := `//div[@id="messages"]//div[contains(@class,"text") and starts-with(text(),"Finn Shipley finished:")]`
	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/"),
		openBot("mattyatlas"),
		say("Tell Finn Shipley to build the login page"),
		chromedp.WaitVisible(chromedp.Search(notice)),
		chromedp.WaitVisible(chromedp.CSS(`#messages .fold-toggle`)),
		chromedp.WaitVisible(chromedp.CSS(`#deleg-finished summary`)),
	)
	if err != nil {
		t.Fatalf("the hand-off in the page: %v", err)
	}
	folded, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => {
		const text = [...document.querySelectorAll("#messages .text")].find((e) => e.textContent.startsWith("Finn Shipley finished:"));
		return {lines: text.textContent.split("\n").length, folded: text.classList.contains("folded"),
			clipped: text.scrollHeight > text.clientHeight, height: text.clientHeight,
			lineHeight: parseFloat(getComputedStyle(text).lineHeight)};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if folded["lines"] != 6.0 || folded["folded"] != true || folded["clipped"] != true ||
		folded["height"].(float64) > 4.5*folded["lineHeight"].(float64) {
		t.Errorf("the folded notice = %v; want 6 lines shown as 4", folded)
	}
	screenshot(t, ctx, "handoff-folded")

	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#messages .fold-toggle`)),
		chromedp.WaitVisible(chromedp.Search(`//button[contains(@class,"fold-toggle") and text()="Show less"]`)),
	)
	if err != nil {
		t.Fatalf("show more: %v", err)
	}
	open, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const text = document.querySelector("#messages .fold-toggle").parentElement.querySelector(".text");
		return !text.classList.contains("folded") && text.scrollHeight <= text.clientHeight + 1;
	})()`))
	if err != nil || !open {
		t.Errorf("the notice after Show more is whole: %v, %v", open, err)
	}
	screenshot(t, ctx, "handoff-unfolded")

	panel := func() map[string]any {
		t.Helper()
		p, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => ({
			active: [...document.querySelectorAll("#delegations li")].map((li) => li.textContent),
			finished: [...document.querySelectorAll("#deleg-done li")].map((li) => li.textContent),
			summary: document.querySelector("#deleg-finished summary").textContent,
			open: document.querySelector("#deleg-finished").open,
			hidden: document.querySelector("#delegation-panel").hidden,
		}))()`))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := panel(); fmt.Sprint(p["active"]) != "[]" || fmt.Sprint(p["finished"]) != "[Matty Atlas → Finn Shipley: build the login page · done]" ||
		p["summary"] != "Finished (1)" || p["open"] != false || p["hidden"] != false {
		t.Errorf("Matty's panel = %v", p)
	}

	links, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#messages .deleg-open")].map((a) =>
		a.closest(".msg").querySelector(".text").textContent.split("\n")[0])`))
	if err != nil || fmt.Sprint(links) != "[Finn Shipley finished: Built build the login page:]" {
		t.Errorf("links to Finn's chat under %q, %v; want one, under the notice", links, err)
	}

	// The notice's link opens Finn's chat, whose reply carries the tag too;
	// there Finn hands on to Priest.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#messages .deleg-open[data-bot="finnshipley"]`)),
		chromedp.WaitVisible(chromedp.Search(`//*[@id="picker-name" and text()="Finn Shipley"]`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="messages"]//div[contains(@class,"text") and starts-with(text(),"Built build the login page")]`)),
		chromedp.WaitVisible(chromedp.CSS(`#messages .deleg-tag[data-status="done"]`)),
		say("ask Priest to review the login page"),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="messages"]//div[contains(@class,"text") and starts-with(text(),"Priest finished: Priest looked")]`)),
	)
	if err != nil {
		t.Fatalf("Finn's chat: %v", err)
	}
	if p := panel(); fmt.Sprint(p["finished"]) != "[Finn Shipley → Priest: review the login page · done Matty Atlas → Finn Shipley: build the login page · done]" {
		t.Errorf("Finn's panel = %v; want both hand-offs, newest first", p)
	}

	// Back in Matty's chat the tags are still on their messages, and the
	// panel has only Matty's hand-off.
	err = chromedp.Do(ctx,
		openBot("mattyatlas"),
		chromedp.WaitVisible(chromedp.Search(notice)),
	)
	if err != nil {
		t.Fatalf("back to Matty: %v", err)
	}
	tags, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#messages .deleg-tag")].map((t) => t.textContent)`))
	if err != nil || fmt.Sprint(tags) != "[Matty Atlas → Finn Shipley · done Matty Atlas → Finn Shipley · done]" {
		t.Errorf("tags in Matty's chat after switching = %q, %v; want the acknowledgement's and the notice's", tags, err)
	}
	if p := panel(); fmt.Sprint(p["finished"]) != "[Matty Atlas → Finn Shipley: build the login page · done]" {
		t.Errorf("Matty's panel after switching = %v", p)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#deleg-finished summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#deleg-done li.delegation[data-status="done"]`)),
	)
	if err != nil {
		t.Fatalf("unfolding the finished hand-offs: %v", err)
	}
	screenshot(t, ctx, "handoff-panel")

	// Priest's chat shows only Finn's hand-off to Priest.
	err = chromedp.Do(ctx, openBot("priest"), chromedp.WaitVisible(chromedp.CSS(`#messages .msg`)))
	if err != nil {
		t.Fatalf("Priest's chat: %v", err)
	}
	if p := panel(); fmt.Sprint(p["finished"]) != "[Finn Shipley → Priest: review the login page · done]" {
		t.Errorf("Priest's panel = %v", p)
	}
}
