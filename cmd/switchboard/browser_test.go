package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath finds Debian's chromium. make test installs it
// (scripts/ensure-chromium.sh); a missing browser fails the test, so a
// browser test never passes by not running.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium found: run scripts/ensure-chromium.sh (apt-get install chromium)")
	return ""
}

// browser starts a headless chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

func TestBrowserChatWithMatty(t *testing.T) {
	m := startMain(t, configDir(t))
	ctx := browser(t)
	url := "http://" + m.Addr() + "/"

	err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(`button.bot[data-bot="mattyatlas"]`)),
		chromedp.Click(chromedp.CSS(`button.bot[data-bot="mattyatlas"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#composer`)),
		chromedp.SendKeys(chromedp.CSS(`#composer`), "hello from the browser"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.CSS(`#messages .msg.msg-bot .text`)),
	)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	reply, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#messages .msg.msg-bot .text`)))
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	if !strings.Contains(reply, "Matty Atlas here") {
		t.Errorf("reply in the page = %q", reply)
	}

	// A hand-off shows its live status in the page.
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#composer`), "Tell Finn Shipley to build the login page"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitReady(chromedp.CSS(`#deleg-done li.delegation[data-status="done"]`)),
	)
	if err != nil {
		t.Fatalf("hand-off in the browser: %v", err)
	}
	status, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`#deleg-done li.delegation`)))
	if err != nil || !strings.Contains(status, "Finn Shipley") {
		t.Errorf("delegation status in the page = %q, %v", status, err)
	}

	// Keep a screenshot for people to look at (SWITCHBOARD_SCREENSHOT=path).
	if path := os.Getenv("SWITCHBOARD_SCREENSHOT"); path != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Clean(path), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBrowserDashboard signs in to the dashboard with ?token= as an
// operator would and reads it through its session cookie; the page
// cannot see the cookie, and a change sent with it alone is refused.
func TestBrowserDashboard(t *testing.T) {
	m := startMain(t, configDir(t))
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "hello from the widget", "client_id": "1"})
	c.expect("ack")
	c.expect("message")
	if status, body := apiPost(t, m, "/api/v1/delegations",
		`{"from_bot":"mattyatlas","to_bot":"finnshipley","user":"user-bryan","task":"build the login page"}`); status != 202 {
		t.Fatalf("delegation: %d %v", status, body)
	}
	ctx := browser(t)

	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/dashboard?token="+m.AdminToken),
		chromedp.WaitVisible(chromedp.CSS(`#sessions tbody tr.session`)),
		chromedp.WaitVisible(chromedp.CSS(`#delegations li .st-done`)),
	)
	if err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	// Open the widget visitor's session.
	visitor := c.hello["platform_id"].(string)
	if found, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const tr = [...document.querySelectorAll("#sessions tr.session")].find((tr) => tr.textContent.includes(`+strconv.Quote(visitor)+`));
		if (tr) tr.click();
		return !!tr;
	})()`)); err != nil || !found {
		t.Fatalf("the visitor's session: listed %v, %v", found, err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#messages .msg`))); err != nil {
		t.Fatalf("messages: %v", err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || loc != "http://"+m.Addr()+"/dashboard" {
		t.Errorf("address after sign-in = %q, %v; want the URL without the token", loc, err)
	}
	bots, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#bots tbody`)))
	if err != nil || !strings.Contains(bots, "Matty Atlas") || !strings.Contains(bots, "Finn Shipley") {
		t.Errorf("bots table = %q, %v", bots, err)
	}
	tree, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#delegations`)))
	if err != nil || !strings.Contains(tree, "build the login page") {
		t.Errorf("delegation tree = %q, %v", tree, err)
	}
	msgs, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#messages`)))
	if err != nil || !strings.Contains(msgs, "hello from the widget") {
		t.Errorf("messages = %q, %v", msgs, err)
	}
	when, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#when`)))
	if err != nil || !strings.HasPrefix(when, "updated") {
		t.Errorf("status line = %q, %v", when, err)
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

	// Keep a screenshot (SWITCHBOARD_DASHBOARD_SCREENSHOT=path).
	if path := os.Getenv("SWITCHBOARD_DASHBOARD_SCREENSHOT"); path != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Clean(path), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A room made in the page is closed: another visitor is refused until
// the page's Invite adds them, and a closed room the page may not enter
// leaves its sidebar with the reason.
func TestBrowserRoomInvite(t *testing.T) {
	m := startMain(t, configDir(t))
	ctx := browser(t)
	bob := dial(t, m.Addr(), nil)
	bobID := bob.hello["platform_id"].(string)

	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="open"]`)),
		chromedp.Click(chromedp.CSS(`#new-room`)),
		chromedp.WaitVisible(chromedp.CSS(`#room-name`)),
		chromedp.SendKeys(chromedp.CSS(`#room-name`), "den"),
		chromedp.Click(chromedp.CSS(`#room-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`button.room[data-chat="den"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#invite-room`)),
	)
	if err != nil {
		t.Fatalf("making a room in the page: %v", err)
	}
	// The room exists once the gateway has the page's join (history,
	// unlike a join, never makes a room); until Bob is invited he may
	// neither read nor join it.
	for deadline := time.Now().Add(30 * time.Second); ; {
		bob.send(map[string]any{"type": "history", "chat": "den", "client_id": "h1"})
		f := bob.expect("error")
		if f["code"] == "not_allowed" {
			break
		}
		if f["code"] != "unknown_chat" || time.Now().After(deadline) {
			t.Fatalf("bob's history = %v", f)
		}
		time.Sleep(20 * time.Millisecond)
	}
	bob.send(map[string]any{"type": "join", "chat": "den", "client_id": "j1"})
	bob.refusedWith("not_allowed", "j1")

	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#invite-room`)),
		chromedp.WaitVisible(chromedp.CSS(`#invite-user`)),
		chromedp.SendKeys(chromedp.CSS(`#invite-user`), bobID),
		chromedp.Click(chromedp.CSS(`#invite-submit`)),
		chromedp.WaitVisible(chromedp.Search(`//div[contains(@class,"toast")]//span[contains(text(),"Invited `+bobID+`")]`)),
	)
	if err != nil {
		t.Fatalf("inviting in the page: %v", err)
	}
	bob.send(map[string]any{"type": "join", "chat": "den"})
	bob.expect("joined")
	bob.send(map[string]any{"type": "send", "chat": "den", "text": "hello from bob", "client_id": "s1"})
	bob.expect("ack")
	err = chromedp.Do(ctx, chromedp.WaitVisible(chromedp.Search(`//div[@id="messages"]//*[contains(text(),"hello from bob")]`)))
	if err != nil {
		t.Fatalf("bob's message in the page: %v", err)
	}

	// Bob's closed room refuses the page: the room leaves the sidebar.
	bob.send(map[string]any{"type": "join", "chat": "vault"})
	bob.expect("joined")
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#new-room`)),
		chromedp.WaitVisible(chromedp.CSS(`#room-name`)),
		chromedp.SendKeys(chromedp.CSS(`#room-name`), "vault"),
		chromedp.Click(chromedp.CSS(`#room-submit`)),
		chromedp.WaitVisible(chromedp.Search(`//div[contains(@class,"toast-error")]//span[contains(text(),"Couldn't join")]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`button.room[data-chat="vault"]`)),
	)
	if err != nil {
		t.Fatalf("refused join in the page: %v", err)
	}
}
