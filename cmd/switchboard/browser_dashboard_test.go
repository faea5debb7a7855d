package main

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboard-chat/switchboard/platforms/web"
)

// waitJS waits until the JavaScript expression js is truthy in the page.
func waitJS(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[any](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		t.Fatalf("waiting for %s: %v\npage:\n%s", what, err, page)
	}
}

// text is the text of the first element sel matches ("" for none).
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const e = document.querySelector(`+strconv.Quote(sel)+`); return e ? e.innerText : ""; })()`))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// attr is attribute name of the first element sel matches ("" for none).
func attr(t *testing.T, ctx context.Context, sel, name string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const e = document.querySelector(`+strconv.Quote(sel)+`); return e ? (e.getAttribute(`+strconv.Quote(name)+`) || "") : ""; })()`))
	if err != nil {
		t.Fatalf("%s of %s: %v", name, sel, err)
	}
	return s
}

// signIn opens the dashboard with ?token= as the URL start-up prints.
func signIn(t *testing.T, ctx context.Context, m *Main) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/dashboard?token="+url.QueryEscape(m.AdminToken)),
		chromedp.WaitVisible(chromedp.CSS(`#health`)),
	); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
}

// TestBrowserDashboard signs in to the dashboard with ?token= as an
// operator would and reads it through its session cookie: names with
// their IDs on hover, a session's messages with their kinds, the
// hand-off tree. The page cannot see the cookie, and a change sent with
// it alone is refused.
func TestBrowserDashboard(t *testing.T) {
	t.Setenv("SB_TEST_WEB_SECRET", "k")
	m := startMain(t, artifactConfigDir(t))
	bryan := dial(t, m.Addr(), url.Values{"user": {"bryan"}, "sig": {web.Sign([]byte("k"), "bryan")}})
	bryan.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "the checklist, please", "client_id": "0"})
	bryan.expect("ack")
	bryan.expect("message")
	bryan.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "Tell Finn to build the login page", "client_id": "1"})
	bryan.expect("ack")
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "hello from the widget", "client_id": "1"})
	c.expect("ack")
	c.expect("message")
	ctx := browser(t)
	signIn(t, ctx, m)

	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || loc != "http://"+m.Addr()+"/dashboard" {
		t.Errorf("address after sign-in = %q, %v; want the URL without the token", loc, err)
	}
	waitJS(t, ctx, "the hand-off done", `document.querySelector('#delegations li.dlg[data-status="done"]')`)
	waitJS(t, ctx, "the sessions", `document.querySelectorAll("#sessions tr.session").length >= 3`)

	// Display names, with the IDs on hover.
	if got := text(t, ctx, `#bots tr[data-bot="mattyatlas"] .who-name`); got != "Matty Atlas" {
		t.Errorf("bot name = %q", got)
	}
	if got := attr(t, ctx, `#bots tr[data-bot="mattyatlas"] .who-name`, "title"); got != "mattyatlas" {
		t.Errorf("bot name's title = %q, want its ID", got)
	}
	if got := attr(t, ctx, `#users .who-name`, "title"); got != "user-bryan" || text(t, ctx, `#users .who-name`) != "Bryan" {
		t.Errorf("person = %q (title %q)", text(t, ctx, `#users .who-name`), got)
	}
	tree := text(t, ctx, "#delegations")
	if !strings.Contains(tree, "Matty Atlas") || !strings.Contains(tree, "Finn Shipley") || !strings.Contains(tree, "build the login page") || !strings.Contains(tree, "Bryan") {
		t.Errorf("hand-off tree = %q", tree)
	}
	if got := attr(t, ctx, `#delegations li.dlg .dlg-route span[title]`, "title"); got != "mattyatlas" {
		t.Errorf("hand-off's bot title = %q", got)
	}

	// Finn's session with Bryan holds the hand-off's wrapper; Matty's the
	// result callback (a system message) after the chat.
	open := func(bot, user string) {
		t.Helper()
		js := `(() => {
			const tr = [...document.querySelectorAll("#sessions tr.session")].find((tr) => tr.dataset.user === ` + strconv.Quote(user) + ` && tr.querySelector(".who-name").title === ` + strconv.Quote(bot) + `);
			if (tr) tr.click();
			return !!tr;
		})()`
		waitJS(t, ctx, bot+"'s session with "+user, js)
	}
	open("finnshipley", "user-bryan")
	waitJS(t, ctx, "the wrapper", `document.querySelector('#messages .msg[data-kind="wrapper"] .kind-wrapper')`)
	if got := text(t, ctx, `#messages .msg[data-kind="wrapper"] .msg-text`); !strings.HasPrefix(got, "DELEGATED TASK FROM MATTY ATLAS") {
		t.Errorf("wrapper text = %q", got)
	}
	if got := text(t, ctx, "#messages-title"); got != "Finn Shipley · Bryan" {
		t.Errorf("messages title = %q", got)
	}
	open("mattyatlas", "user-bryan")
	waitJS(t, ctx, "the callback", `document.querySelector('#messages .msg[data-kind="system"] .kind-system')`)
	kinds, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#messages .msg")].map((m) => m.dataset.kind).join(",")`))
	if err != nil || !strings.HasPrefix(kinds, "chat,chat") || !strings.HasSuffix(kinds, "system") {
		t.Errorf("kinds in Matty's session = %q, %v", kinds, err)
	}
	if got := attr(t, ctx, `#messages .msg[data-kind="chat"] .msg-name`, "title"); got != "web-bryan → user-bryan" {
		t.Errorf("Bryan's message title = %q", got)
	}
	// Matty's checklist shows as links to the admin's artifact
	// endpoint, which the cookie reads.
	if got := text(t, ctx, `#messages .msg-file`); !strings.HasPrefix(got, "launch-checklist.md · ") {
		t.Errorf("file link = %q", got)
	}
	body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.querySelector("#messages .msg-file").href, {credentials: "same-origin"}).then(r => r.text())`,
		chromedp.EvalAwaitPromise))
	if err != nil || !strings.HasPrefix(body, "# Launch checklist") {
		t.Errorf("the checklist through its link = %q, %v", body, err)
	}
	// The kind filter keeps one kind.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#kind-filter button[data-kind="system"]`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "only system messages", `(() => { const ms = [...document.querySelectorAll("#messages .msg")]; return ms.length > 0 && ms.every((m) => m.dataset.kind === "system"); })()`)

	// The anonymous visitor's session shows their platform ID.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#kind-filter button[data-kind=""]`))); err != nil {
		t.Fatal(err)
	}
	open("mattyatlas", c.hello["platform_id"].(string))
	waitJS(t, ctx, "the visitor's message", `document.querySelector("#messages").innerText.includes("hello from the widget")`)
	if got := text(t, ctx, "#when"); !strings.HasPrefix(got, "updated") {
		t.Errorf("status line = %q", got)
	}

	// The cookie is HttpOnly, and a change with it alone is refused even
	// from the dashboard's own origin.
	if cookie, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie`)); err != nil || cookie != "" {
		t.Errorf("document.cookie = %q, %v; want the session cookie hidden", cookie, err)
	}
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch("/api/v1/delegations", {method: "POST", credentials: "same-origin",
		headers: {"Content-Type": "application/json"},
		body: JSON.stringify({from_bot: "mattyatlas", to_bot: "finnshipley", user: "user-bryan", task: "forged"})}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if err != nil || status != 401 {
		t.Errorf("POST from the page with the cookie: %d, %v; want 401", status, err)
	}
}

// The sign-in page: without a session /dashboard is a form; a wrong
// token says so; the right one opens the dashboard at its clean URL.
func TestBrowserDashboardSignIn(t *testing.T) {
	m := startMain(t, configDir(t))
	ctx := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/dashboard"),
		chromedp.WaitVisible(chromedp.CSS(`form#login input#token[type="password"]`)),
	)
	if err != nil {
		t.Fatalf("sign-in page: %v", err)
	}
	if got := text(t, ctx, "body"); strings.Contains(got, `"error"`) || !strings.Contains(got, "Sign in") {
		t.Errorf("page = %q; want the sign-in form, not JSON", got)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#token`), "not-the-token"),
		chromedp.Click(chromedp.CSS(`#sign-in`)),
		chromedp.WaitVisible(chromedp.CSS(`#login-error`)),
	)
	if err != nil {
		t.Fatalf("wrong token: %v", err)
	}
	if got := text(t, ctx, "#login-error"); !strings.Contains(got, "not the admin token") {
		t.Errorf("error = %q", got)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#token`), m.AdminToken),
		chromedp.Click(chromedp.CSS(`#sign-in`)),
		chromedp.WaitVisible(chromedp.CSS(`#health`)),
	)
	if err != nil {
		t.Fatalf("right token: %v", err)
	}
	waitJS(t, ctx, "the first refresh", `document.querySelector("#when").innerText.startsWith("updated")`)
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || loc != "http://"+m.Addr()+"/dashboard" {
		t.Errorf("address = %q, %v; want the URL without the token", loc, err)
	}
}

// The health strip after traffic over /ws: messages in and out a minute,
// and the bot's brain p50 and p95.
func TestBrowserDashboardHealth(t *testing.T) {
	m := startMain(t, configDir(t))
	c := dial(t, m.Addr(), nil)
	for i := range 3 {
		c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": fmt.Sprint("message ", i), "client_id": fmt.Sprint(i)})
		c.expect("ack")
		c.expect("message")
	}
	ctx := browser(t)
	signIn(t, ctx, m)
	// The last delivery is counted just after its frame went out: the
	// page refreshes every 3 s until it shows.
	waitJS(t, ctx, "3 out", `document.querySelector("#h-out .stat-value").innerText === "3/min"`)
	if got := text(t, ctx, "#h-in .stat-value"); got != "3/min" {
		t.Errorf("messages in = %q", got)
	}
	if got := text(t, ctx, "#h-in .stat-sub"); got != "3 since start" {
		t.Errorf("messages in, total = %q", got)
	}
	waitJS(t, ctx, "an empty queue", `document.querySelector("#h-queue .stat-value").innerText === "0"`)
	if got := text(t, ctx, "#h-outbox .stat-value"); got != "0" {
		t.Errorf("outbox = %q", got)
	}
	if got := text(t, ctx, "#h-uptime .stat-value"); !strings.HasSuffix(got, "s") {
		t.Errorf("uptime = %q", got)
	}
	row := `#h-brains tr[data-bot="mattyatlas"]`
	p50, p95 := text(t, ctx, row+" .p50"), text(t, ctx, row+" .p95")
	if !strings.HasSuffix(p50, " ms") || !strings.HasSuffix(p95, " ms") {
		t.Errorf("mattyatlas latency p50 %q, p95 %q", p50, p95)
	}
	if got := text(t, ctx, row+" td:last-child"); got != "3" {
		t.Errorf("turns = %q", got)
	}
	if got := text(t, ctx, `#h-brains tr[data-bot="finnshipley"]`); !strings.Contains(got, "no turns yet") {
		t.Errorf("finn's latency = %q", got)
	}
}

// A bot whose Telegram token variable is unset shows Telegram skipped,
// with the variable; its web link is connected.
func TestBrowserDashboardSkippedPlatform(t *testing.T) {
	t.Setenv("SB_FINN_TELEGRAM_TOKEN", "")
	// Finn, the last bot of testBots, gets a Telegram section.
	web := "    platforms:\n      web: {}\n"
	i := strings.LastIndex(testBots, web) + len(web)
	bots := testBots[:i] + "      telegram: {token_env: SB_FINN_TELEGRAM_TOKEN}\n" + testBots[i:]
	m := startMain(t, writeConfigDir(t, bots))
	ctx := browser(t)
	signIn(t, ctx, m)
	cell := `#bots tr[data-bot="finnshipley"] td[data-platform="telegram"]`
	waitJS(t, ctx, "finn's telegram link", `document.querySelector('`+cell+` .link[data-state="skipped"]')`)
	if got := text(t, ctx, cell); !strings.Contains(got, "skipped") || !strings.Contains(got, "SB_FINN_TELEGRAM_TOKEN is unset") {
		t.Errorf("finn's telegram = %q", got)
	}
	if got := attr(t, ctx, `#bots tr[data-bot="finnshipley"] td[data-platform="web"] .link`, "data-state"); got != "connected" {
		t.Errorf("finn's web = %q", got)
	}
	if got := text(t, ctx, `#bots tr[data-bot="mattyatlas"] td[data-platform="telegram"]`); got != "—" {
		t.Errorf("matty's telegram = %q, want none", got)
	}
}
