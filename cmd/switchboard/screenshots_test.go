package main

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboard-chat/switchboard/config"
	"github.com/switchboard-chat/switchboard/platforms/web"
)

// The README's screenshots and their viewports.
var screenshots = []struct {
	name          string
	width, height int64
	mobile        bool
	full          bool // the whole page, taller than the viewport
}{
	{name: "widget.png", width: 1280, height: 800},
	{name: "widget-mobile.png", width: 390, height: 844, mobile: true},
	{name: "room.png", width: 1280, height: 800},
	{name: "dashboard.png", width: 1280, height: 800, full: true},
}

// screenshotSecret signs the screenshots' web users.
const screenshotSecret = "screenshots"

// TestScreenshots runs the gateway on the example configuration (a copy
// of the repository's bots.yaml and users.yaml, no tokens) with a little
// traffic and takes the README's screenshots: the widget as Bryan on a
// desktop and on a phone, his room with the research team, and the
// dashboard. With SCREENSHOTS=DIR (make
// screenshots sets docs/img; a relative DIR is from the repository root)
// it writes them there; without, it checks them and keeps nothing.
func TestScreenshots(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"bots.yaml", "users.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The same picture on every machine: Telegram and Discord skipped,
	// web users signed with a known secret.
	for _, b := range cfg.Bots {
		if p := b.Platforms.Telegram; p != nil && p.TokenEnv != "" {
			t.Setenv(p.TokenEnv, "")
		}
		if p := b.Platforms.Discord; p != nil && p.TokenEnv != "" {
			t.Setenv(p.TokenEnv, "")
		}
	}
	t.Setenv(cfg.Gateway.Web.SecretEnv, screenshotSecret)
	m := startMain(t, dir)
	ctx := browser(t)

	// Another person talks to Priest, and gets a review with a checklist.
	ada := dial(t, m.Addr(), url.Values{"user": {"ada"}, "sig": {web.Sign([]byte(screenshotSecret), "ada")}})
	ada.send(map[string]any{"type": "send", "bot": "priest", "text": "Please review the signup form", "client_id": "1"})
	ada.expect("ack")
	ada.await("message") // (after the finding Priest's review posts)

	// Bryan, in the widget: a greeting, then a hand-off to Finn, who
	// asks Priest for a review.
	widget := "http://" + m.Addr() + "/?bot=mattyatlas&user=bryan&sig=" + web.Sign([]byte(screenshotSecret), "bryan")
	send := func(text string) {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#messages .msg-bot").length`))
		if err != nil {
			t.Fatal(err)
		}
		// The text is set by script rather than typed: chromedp's
		// SendKeys reads the node's attributes while its DOM event loop
		// may change them (a data race in the library, seen under -race
		// when the composer's attributes change as it is typed into).
		set := `(() => { const c = document.querySelector("#composer"); c.value = ` + strconv.Quote(text) +
			`; c.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`
		if err := chromedp.Do(ctx, chromedp.WaitEnabled(chromedp.CSS(`#composer`))); err != nil {
			t.Fatalf("composer: %v", err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](set)); err != nil {
			t.Fatalf("typing %q: %v", text, err)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#send`))); err != nil {
			t.Fatalf("sending %q: %v", text, err)
		}
		waitJS(t, ctx, "a reply to "+text, `document.querySelectorAll("#messages .msg-bot").length > `+strconv.Itoa(n))
	}
	setViewport(t, ctx, screenshots[0].width, screenshots[0].height, false)
	if err := chromedp.Do(ctx, chromedp.Navigate(widget), chromedp.WaitVisible(chromedp.CSS(`#composer`))); err != nil {
		t.Fatalf("widget: %v", err)
	}
	send("Hi Matty! I'd like a login page for the team site.")
	send("Tell Finn to build the login page")
	waitJS(t, ctx, "Finn's result in Matty's chat", `document.querySelector("#messages").innerText.includes("Finn Shipley finished")`)
	waitHandOffsSettled(t, m)

	shots := map[string][]byte{}
	shoot := func(name string, full bool) {
		t.Helper()
		// No focus ring or caret; let transitions (a new message sliding
		// in) finish.
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`document.activeElement && document.activeElement.blur()`)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(400 * time.Millisecond)
		var shot chromedp.Action[[]byte] = chromedp.CaptureScreenshot()
		if full {
			shot = chromedp.FullScreenshot(100)
		}
		b, err := chromedp.Run(ctx, shot)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		shots[name] = b
	}
	shoot("widget.png", false)

	// The same chat on a phone.
	setViewport(t, ctx, screenshots[1].width, screenshots[1].height, true)
	if err := chromedp.Do(ctx, chromedp.Navigate(widget), chromedp.WaitVisible(chromedp.CSS(`#composer`))); err != nil {
		t.Fatalf("widget on a phone: %v", err)
	}
	waitJS(t, ctx, "the chat's history", `document.querySelector("#messages").innerText.includes("Finn Shipley finished")`)
	shoot("widget-mobile.png", false)

	// Bryan's room with the research team: the worked example of
	// bots.yaml, its artifact chain in the room's Context panel.
	// The page keeps its rooms in localStorage: this one is made when the
	// page joins it.
	setViewport(t, ctx, screenshots[2].width, screenshots[2].height, false)
	room := `localStorage.setItem("switchboard.rooms.web-bryan", JSON.stringify([{name: "launch", bots: ["mattyatlas", "researcher", "coder", "auditor"]}])); true`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](room)); err != nil {
		t.Fatalf("the room: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(widget), chromedp.WaitVisible(chromedp.CSS(`#composer`)),
		chromedp.Click(chromedp.CSS(`button.room[data-chat="launch"]`)), chromedp.WaitVisible(chromedp.CSS(`#context-panel .ctx-intro`))); err != nil {
		t.Fatalf("the room: %v", err)
	}
	send("@matty compare our API with CompetitorX")
	waitJS(t, ctx, "the chain's third step", `document.querySelector("#context-panel .ctx-step[data-step='3']")`)
	waitHandOffsSettled(t, m)
	time.Sleep(1600 * time.Millisecond) // the new step's highlight fades
	shoot("room.png", false)

	// The dashboard, with Matty's session with Bryan open.
	setViewport(t, ctx, screenshots[3].width, screenshots[3].height, false)
	signIn(t, ctx, m)
	waitJS(t, ctx, "the hand-offs", `document.querySelectorAll('#delegations li.dlg[data-status="done"]').length >= 2`)
	waitJS(t, ctx, "the brains' latency", `document.querySelectorAll("#h-brains td.p50").length === 6`)
	waitJS(t, ctx, "Matty's session with Bryan", `(() => {
		const tr = [...document.querySelectorAll("#sessions tr.session")].find((tr) => tr.dataset.user === "user-bryan" && tr.querySelector(".who-name").title === "mattyatlas");
		if (tr) tr.click();
		return !!tr;
	})()`)
	waitJS(t, ctx, "the session's messages", `document.querySelector('#messages .msg[data-kind="system"]')`)
	shoot("dashboard.png", true)

	out := os.Getenv("SCREENSHOTS")
	if out != "" && !filepath.IsAbs(out) {
		out = filepath.Join("..", "..", out) // go test runs in cmd/switchboard
	}
	for _, s := range screenshots {
		b := compressPNG(t, s.name, shots[s.name])
		cfg, err := png.DecodeConfig(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if int64(cfg.Width) != s.width || int64(cfg.Height) < s.height || (!s.full && int64(cfg.Height) != s.height) {
			t.Errorf("%s is %dx%d, want %dx%d", s.name, cfg.Width, cfg.Height, s.width, s.height)
		}
		if out == "" {
			continue
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, s.name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%dx%d, %d KB)", filepath.Join(out, s.name), cfg.Width, cfg.Height, len(b)/1024)
	}
}

// setViewport sizes the page at device scale 1, as a phone (mobile
// layout, touch) or a desktop.
func setViewport(t *testing.T, ctx context.Context, w, h int64, mobile bool) {
	t.Helper()
	opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
	if mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h, opts...)); err != nil {
		t.Fatalf("viewport %dx%d: %v", w, h, err)
	}
}

// waitHandOffsSettled waits until no hand-off is queued or running, so
// every screenshot shows the same finished chain.
func waitHandOffsSettled(t *testing.T, m *Main) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := apiGet(t, m, "/api/v1/delegations", m.AdminToken)
		settled := len(items(body)) > 0
		for _, d := range items(body) {
			if s := d["status"]; s == "queued" || s == "running" {
				settled = false
			}
		}
		if settled {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("hand-offs still open: %v", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// compressPNG re-encodes a screenshot at the best compression, which
// makes Chromium's PNGs about a third smaller.
func compressPNG(t *testing.T, name string, b []byte) []byte {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, img); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if buf.Len() > len(b) {
		return b
	}
	return buf.Bytes()
}
