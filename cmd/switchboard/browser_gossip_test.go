package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The dashboard's Gossip card lists events newest first: what was told
// to which bot, who heard it, or (in red) why nobody did; the filter
// keeps one status.
func TestBrowserDashboardGossip(t *testing.T) {
	m := startMain(t, gossipDir(t))
	bryan, olive := signedIn(t, m, "bryan"), signedIn(t, m, "olive")
	for _, bot := range []string{"finn", "priest"} {
		for range 2 {
			bryan.say(map[string]any{"bot": bot}, "hello", bot)
		}
	}
	bryan.say(map[string]any{"bot": "elena"}, "Guess what? I got a new job at a tech company", "elena")
	settledEvent(t, m, "user-bryan", "I got a new job at a tech company")
	bryan.say(map[string]any{"bot": "elena"}, "We are moving to Lisbon, but don't tell anyone yet.", "elena")
	olive.say(map[string]any{"bot": "elena"}, "I graduated today!", "elena")
	waitUntil(10*time.Second, func() bool { return len(gossipItems(t, m, "status=blocked")) == 2 })

	ctx := browser(t)
	signIn(t, ctx, m)
	waitJS(t, ctx, "the gossip", `document.querySelectorAll("#gossip tbody tr").length === 3`)
	rows := texts(t, ctx, "#gossip tbody tr")
	if !strings.Contains(rows[0], "I graduated today!") || !strings.Contains(rows[0], "blocked") || !strings.Contains(rows[0], "share_with_other_bots: false") {
		t.Errorf("newest row = %q", rows[0])
	}
	if !strings.Contains(rows[1], "Lisbon") || !strings.Contains(rows[1], `sensitive topic "don't tell"`) {
		t.Errorf("second row = %q", rows[1])
	}
	if !strings.Contains(rows[2], "delivered") || !strings.Contains(rows[2], "Finn Shipley") || !strings.Contains(rows[2], "Priest") ||
		!strings.Contains(rows[2], "Elena") || !strings.Contains(rows[2], "Bryan") || !strings.Contains(rows[2], "career") {
		t.Errorf("delivered row = %q", rows[2])
	}
	if got := text(t, ctx, "#gossip-count"); got != "3" {
		t.Errorf("count = %q", got)
	}
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(chromedp.CSS(`#gossip`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "dashboard-gossip")

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#gossip-filter button[data-status="blocked"]`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the blocked events alone", `document.querySelectorAll("#gossip tbody tr").length === 2 &&
		document.querySelectorAll("#gossip .reason.blocked").length === 2`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#gossip-filter button[data-status="queued"]`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "no queued events", `document.querySelector("#gossip tbody td.empty") &&
		document.querySelector("#gossip tbody td.empty").textContent === "No queued gossip."`)
}
