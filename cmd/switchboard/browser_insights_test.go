package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserDashboardInsights: the dashboard lists what bots noticed
// about people, newest first, with the bot, the kind and the confidence,
// for everyone or one person; forgetting one asks for confirmation and
// the admin token (the cookie only reads), refuses a wrong token, and
// keeps the right one for the page's next change.
func TestBrowserDashboardInsights(t *testing.T) {
	m, _ := startInsights(t, "")
	bryan, visitor := signedIn(t, m, "bryan"), dial(t, m.Addr(), nil)
	bryan.ask("elena", "remember epiphany 0.85: Bryan is excited about his new job at a tech company")
	bryan.ask("marcus", "remember observation 0.7: Bryan drinks his coffee black, two cups before standup")
	visitor.ask("elena", "remember dream 0.4: the visitor dreams of trains")
	ctx := browser(t)
	signIn(t, ctx, m)

	waitJS(t, ctx, "three insights", `document.querySelectorAll("#insights tbody tr[data-id]").length === 3`)
	rows := texts(t, ctx, "#insights tbody tr[data-id]")
	if !strings.Contains(rows[0], "the visitor dreams of trains") || !strings.Contains(rows[2], "Elena") ||
		!strings.Contains(rows[2], "Bryan") || !strings.Contains(rows[2], "epiphany") || !strings.Contains(rows[2], "0.85") {
		t.Errorf("rows, newest first = %q", rows)
	}
	if got := text(t, ctx, "#insights-count"); got != "3" {
		t.Errorf("count = %q", got)
	}
	// The picker lists the people users.yaml names and those insights
	// are about.
	people := texts(t, ctx, "#insights-person option")
	anon := visitor.hello["platform_id"].(string)
	if !slices.Contains(people, "everyone") || !slices.Contains(people, "Bryan (user-bryan)") || !slices.Contains(people, anon) {
		t.Errorf("people to pick = %q", people)
	}
	pick := func(id string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const s = document.querySelector("#insights-person");
			s.value = `+strconv.Quote(id)+`; s.dispatchEvent(new Event("change")); return true; })()`)); err != nil {
			t.Fatal(err)
		}
	}
	pick("user-bryan")
	waitJS(t, ctx, "Bryan's two", `document.querySelectorAll("#insights tbody tr[data-id]").length === 2`)
	screenshotInsights(t, ctx, "dashboard-insights")

	// Forget Marcus's insight: confirm, then the token.
	_, body := apiGet(t, m, "/api/v1/insights?bot=marcus", m.AdminToken)
	id := strconv.Quote(strconv.Itoa(int(items(body)[0]["id"].(float64))))
	forget := func() {
		t.Helper()
		waitJS(t, ctx, "the Forget button", `(() => { const b = document.querySelector('#insights tr[data-id=`+id+`] button.forget'); if (b) b.click(); return !!b; })()`)
		waitJS(t, ctx, "the confirmation", `!document.querySelector("#forget-confirm").hidden`)
	}
	submit := func(token string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { document.querySelector("#forget-token").value = `+strconv.Quote(token)+`;
			document.querySelector("#forget-confirm .danger").click(); return true; })()`)); err != nil {
			t.Fatal(err)
		}
	}
	forget()
	if got := text(t, ctx, "#forget-what"); !strings.Contains(got, "Marcus’s insight about Bryan") || !strings.Contains(got, "coffee black") {
		t.Errorf("confirmation = %q", got)
	}
	if hidden, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#forget-token").hidden`)); hidden {
		t.Errorf("the token field is hidden before the token was given")
	}
	submit("")
	waitJS(t, ctx, "the token asked for", `document.querySelector("#forget-why").textContent.includes("needs the admin token")`)
	submit("not-the-token")
	waitJS(t, ctx, "a wrong token refused", `document.querySelector("#forget-why").textContent.includes("not the admin token")`)
	screenshotInsights(t, ctx, "dashboard-insights-forget")
	submit(m.AdminToken)
	waitJS(t, ctx, "the insight gone", `document.querySelectorAll("#insights tbody tr[data-id]").length === 1 && document.querySelector("#forget-confirm").hidden`)
	if got := text(t, ctx, "#insights-note"); got != "Forgotten." {
		t.Errorf("note = %q", got)
	}
	if _, body := apiGet(t, m, "/api/v1/insights?bot=marcus", m.AdminToken); len(items(body)) != 0 {
		t.Errorf("Marcus's insight is still stored: %v", body)
	}

	// The token is kept for the page's next change: no field this time.
	pick("")
	waitJS(t, ctx, "the other two", `document.querySelectorAll("#insights tbody tr[data-id]").length === 2`)
	_, body = apiGet(t, m, "/api/v1/insights?bot=elena&user="+anon, m.AdminToken)
	id = strconv.Quote(strconv.Itoa(int(items(body)[0]["id"].(float64))))
	forget()
	if hidden, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#forget-token").hidden`)); !hidden {
		t.Errorf("the token was asked for again")
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { document.querySelector("#forget-confirm .danger").click(); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "one left", `document.querySelectorAll("#insights tbody tr[data-id]").length === 1`)
	if got := texts(t, ctx, "#insights tbody tr[data-id]"); len(got) != 1 || !strings.Contains(got[0], "new job") {
		t.Errorf("left = %q", got)
	}
}

// screenshotInsights keeps a picture of the Insights card, at desktop
// size and at 390 pixels wide, when SWITCHBOARD_SCREENSHOT_DIR names a
// directory (as screenshot does for whole pages).
func screenshotInsights(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("SWITCHBOARD_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	for _, size := range []struct {
		suffix string
		w, h   int64
	}{{"", 1280, 800}, {"-390", 390, 844}} {
		err := chromedp.Do(ctx,
			chromedp.EmulateViewport(size.w, size.h),
			chromedp.Sleep(300*time.Millisecond), // the layout settles
		)
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#insights-card")))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+size.suffix+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
}
