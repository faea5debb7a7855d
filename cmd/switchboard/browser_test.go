package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
		chromedp.WaitVisible(chromedp.CSS(`#delegations li.delegation[data-status="done"]`)),
	)
	if err != nil {
		t.Fatalf("hand-off in the browser: %v", err)
	}
	status, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#delegations li.delegation`)))
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
