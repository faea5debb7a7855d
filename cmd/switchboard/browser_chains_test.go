package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserDashboardChains: the dashboard lists each group chat's
// bot-to-bot chain (SPEC §10.6) with its steps out of max_chain, its
// state and its cooldown, as an operator reads it.
func TestBrowserDashboardChains(t *testing.T) {
	e := startChains(t, "web", "{max_chain: 3, response_chance: 1.0, cooldown: 6h}", chatty3())
	// In the lobby a chain runs to its closing turn, then Ann speaks:
	// it has ended.
	e.room.say(t, "mattyatlas", "what's the plan?")
	collect(t, e.room, 4, 0)
	e.room.say(t, "finnshipley", "thanks, all")
	e.room.next(t)
	// In the standup room a chain closes and nobody speaks after it.
	c := dial(t, e.m.Addr(), nil)
	c.send(map[string]any{"type": "join", "chat": "standup", "bots": []string{"mattyatlas", "finnshipley", "priest"}})
	c.expect("joined")
	c.send(map[string]any{"type": "send", "chat": "standup", "text": "@priest status?", "client_id": "1"})
	c.expect("ack")
	for range 4 {
		c.expect("message")
	}

	ctx := browser(t)
	signIn(t, ctx, e.m)
	waitJS(t, ctx, "both chains", `document.querySelectorAll("#chains tbody tr[data-chat]").length === 2`)
	row := func(chat string) string {
		t.Helper()
		return text(t, ctx, `#chains tr[data-chat="`+chat+`"]`)
	}
	lobby, standup := strings.ToLower(row("web:lobby")), strings.ToLower(row("web:standup"))
	for _, want := range []string{"lobby", "web room", "#1", "3 / 3", "ended", "cooldown until"} {
		if !strings.Contains(lobby, want) {
			t.Errorf("lobby row %q lacks %q", lobby, want)
		}
	}
	for _, want := range []string{"standup", "3 / 3", "closed", "cooldown until"} {
		if !strings.Contains(standup, want) {
			t.Errorf("standup row %q lacks %q", standup, want)
		}
	}
	if got := attr(t, ctx, `#chains tr[data-chat="web:lobby"] .status`, "title"); got != "a person spoke after it" {
		t.Errorf("the ended state's explanation = %q", got)
	}
	if got := text(t, ctx, "#chains-count"); got != "2" {
		t.Errorf("count = %q", got)
	}
	// Pictures of the card, on a desktop and on a phone, for people to
	// look at.
	dir := os.Getenv("SWITCHBOARD_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	for _, size := range []struct {
		name string
		w, h int64
	}{{"dashboard-chains.png", 1280, 800}, {"dashboard-chains-390.png", 390, 844}} {
		err := chromedp.Do(ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Sleep(300*time.Millisecond))
		if err == nil {
			_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector("#chains").closest("section").scrollIntoView({block: "center"}), true)`))
		}
		var png []byte
		if err == nil {
			png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, size.name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
