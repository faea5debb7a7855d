package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboard-chat/switchboard/identity"
	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
	"github.com/switchboard-chat/switchboard/platforms/web"
)

// screenshot keeps a PNG of the page for people to look at, at desktop
// size and at 390×844, when SWITCHBOARD_SCREENSHOT_DIR names a directory.
func screenshot(t *testing.T, ctx context.Context, name string) {
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
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
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

// texts returns the text of every element that matches selector.
func texts(t *testing.T, ctx context.Context, selector string) []string {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll(`+strconv.Quote(selector)+`)].map((e) => e.textContent.trim())`))
	if err != nil {
		t.Fatalf("texts of %s: %v", selector, err)
	}
	return got
}

// A private chat holds the whole session with its bot, a room exchange
// too: after a reload of the page, what was said in the room shows in the
// private chat labelled with the room, or not at all while the header's
// toggle hides it (remembered across reloads). Another visitor in the
// room is shown by their guest name.
func TestBrowserPrivateChatSaysWhere(t *testing.T) {
	m := startMain(t, configDir(t))
	ctx := browser(t)
	matty := chromedp.CSS(`button.bot[data-bot="mattyatlas"]`)

	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="open"]`)),
		chromedp.Click(matty),
		chromedp.SendKeys(chromedp.CSS(`#composer`), "hello privately"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="messages"]//div[contains(@class,"text")][contains(text(),"Matty Atlas here")]`)),
		chromedp.Click(chromedp.CSS(`#new-room`)),
		chromedp.WaitVisible(chromedp.CSS(`#room-name`)),
		chromedp.SendKeys(chromedp.CSS(`#room-name`), "launch-planning"),
		chromedp.Click(chromedp.CSS(`#room-open`)),
		chromedp.Click(chromedp.CSS(`#room-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`button.room[data-chat="launch-planning"]`)),
		chromedp.SendKeys(chromedp.CSS(`#composer`), "@matty what is the plan?"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="messages"]//div[contains(@class,"text")][contains(text(),"Matty Atlas heard: what is the plan?")]`)),
	)
	if err != nil {
		t.Fatalf("a private chat and a room in the page: %v", err)
	}

	// Another visitor joins the open room and speaks: the page names them
	// as every page does.
	bob := dial(t, m.Addr(), nil)
	bob.send(map[string]any{"type": "join", "chat": "launch-planning"})
	bob.expect("joined")
	bob.send(map[string]any{"type": "send", "chat": "launch-planning", "text": "bob here, hi all", "client_id": "b1"})
	bob.expect("ack")
	guest, _ := identity.GuestName(bob.hello["platform_id"].(string))
	err = chromedp.Do(ctx, chromedp.WaitVisible(chromedp.Search(`//div[@id="messages"]//div[contains(@class,"msg-name")][text()="`+guest+`"]`)))
	if err != nil {
		t.Fatalf("bob as %q in the room: %v", guest, err)
	}
	screenshot(t, ctx, "room-guest")

	// The reload opens the first bot's private chat, from history.
	err = chromedp.Do(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="open"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#messages .msg.msg-elsewhere`)),
	)
	if err != nil {
		t.Fatalf("after the reload: %v", err)
	}
	if name, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#picker-name`))); name != "Matty Atlas" {
		t.Fatalf("open chat after the reload = %q", name)
	}
	waitTexts(t, ctx, `#messages .msg-elsewhere .msg-where`, "in #launch-planning|in #launch-planning")
	waitTexts(t, ctx, `#messages .msg-elsewhere .text`, "@matty what is the plan?|Matty Atlas heard: what is the plan?")
	here := texts(t, ctx, `#messages .msg:not(.msg-elsewhere) .text`)
	if strings.Join(here, "|") != "hello privately|Hi "+guestOfPage(t, ctx)+", Matty Atlas here." {
		t.Errorf("unlabelled messages = %q", here)
	}
	if all := strings.Join(texts(t, ctx, `#messages .text`), "|"); strings.Contains(all, "bob here") {
		t.Errorf("someone else's room message in the private chat: %q", all)
	}
	screenshot(t, ctx, "private-labelled")

	// Hidden by the toggle, and still hidden after a reload.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#elsewhere-toggle`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#messages .msg-elsewhere`)),
		chromedp.WaitVisible(chromedp.CSS(`#messages .elsewhere-note`)),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="open"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#messages .elsewhere-note`)),
	)
	if err != nil {
		t.Fatalf("hiding what was said elsewhere: %v", err)
	}
	if note := texts(t, ctx, `#messages .elsewhere-note span`); len(note) != 1 || note[0] != "2 messages from other chats hidden" {
		t.Errorf("note = %q", note)
	}
	if n := len(texts(t, ctx, `#messages .msg`)); n != 2 {
		t.Errorf("%d messages shown while hidden, want the 2 said here", n)
	}
	if pressed, _ := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`#elsewhere-toggle`), "aria-pressed")); pressed.Value != "false" {
		t.Errorf("toggle aria-pressed = %q while hidden", pressed.Value)
	}
	screenshot(t, ctx, "private-hidden")

	// Shown again; the label opens the room.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#messages .elsewhere-note button`)),
		chromedp.WaitVisible(chromedp.CSS(`#messages .msg-elsewhere .msg-where-link`)),
		chromedp.Click(chromedp.CSS(`#messages .msg-elsewhere .msg-where-link`)),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="picker-name"][text()="launch-planning"]`)),
	)
	if err != nil {
		t.Fatalf("showing again and opening the room: %v", err)
	}
}

// guestOfPage is the guest name of the page's own anonymous identity.
func guestOfPage(t *testing.T, ctx context.Context) string {
	t.Helper()
	pid, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.identity-id`)))
	if err != nil {
		t.Fatal(err)
	}
	name, ok := identity.GuestName(pid)
	if !ok {
		t.Fatalf("the page's identity %q is not anonymous", pid)
	}
	return name
}

// waitTexts waits until the texts of selector, joined by "|", are want.
func waitTexts(t *testing.T, ctx context.Context, selector, want string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = strings.Join(texts(t, ctx, selector), "|"); got == want {
			return
		}
	}
	t.Errorf("texts of %s = %q, want %q", selector, got, want)
}

// telegramWebBots: Matty on the web and on Telegram, for a person known on
// both.
const telegramWebBots = `
gateway:
  listen: 127.0.0.1:0
  database: test.db
  web:
    secret_env: SB_TEST_WEB_SECRET
bots:
  - id: mattyatlas
    name: Matty Atlas
    brain:
      kind: script
      default: 'Matty heard: {{.Text}}'
    platforms:
      web: {}
      telegram: {token_env: SB_MATTY_TG, api_url: TGURL}
`

// What a person said to a bot on Telegram shows in their web chat with
// it, labelled "on Telegram".
func TestBrowserPrivateChatSaysTelegram(t *testing.T) {
	tg := telegramtest.New(t)
	tg.AddBot("matty-token", 9001, "matty_bot")
	t.Setenv("SB_MATTY_TG", "matty-token")
	t.Setenv("SB_TEST_WEB_SECRET", "k")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(strings.Replace(telegramWebBots, "TGURL", tg.URL, 1)), 0o644)
	os.WriteFile(filepath.Join(dir, "users.yaml"), []byte(platformUsers), 0o644)
	m := startMain(t, dir)

	tg.Push("matty-token", telegramtest.Private(ann, "sent from my phone"))
	if _, err := tg.WaitSent("matty-token", 1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	q := url.Values{"user": {"ann"}, "sig": {web.Sign([]byte("k"), "ann")}, "bot": {"mattyatlas"}}
	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/?"+q.Encode()),
		chromedp.WaitVisible(chromedp.CSS(`#messages .msg-elsewhere`)),
		chromedp.SendKeys(chromedp.CSS(`#composer`), "and this from the browser"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="messages"]//div[contains(@class,"text")][text()="Matty heard: and this from the browser"]`)),
	)
	if err != nil {
		t.Fatalf("Ann's web chat: %v", err)
	}
	waitTexts(t, ctx, `#messages .msg-elsewhere .text`, "sent from my phone|Matty heard: sent from my phone")
	waitTexts(t, ctx, `#messages .msg-elsewhere .msg-where`, "on Telegram|on Telegram")
	screenshot(t, ctx, "private-telegram")
}

// rosterBots is testBots with a third bot, which the reload removes.
const rosterBots = testBots + `  - id: slowpoke
    name: Slowpoke
    brain:
      kind: script
      default: 'Slowpoke heard: {{.Text}}'
    platforms:
      web: {}
`

// A reload that removes a bot, renames one and adds one updates an open
// page: the sidebar follows, and the open chat with the removed bot stays
// readable, says so and takes no message; a message sent to it anyway is
// refused by its name.
func TestBrowserRosterReload(t *testing.T) {
	dir := writeConfigDir(t, rosterBots)
	m := startMain(t, dir)
	ctx := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="open"]`)),
		chromedp.Click(chromedp.CSS(`button.bot[data-bot="slowpoke"]`)),
		chromedp.SendKeys(chromedp.CSS(`#composer`), "are you there?"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="messages"]//div[contains(@class,"text")][text()="Slowpoke heard: are you there?"]`)),
	)
	if err != nil {
		t.Fatalf("a chat with Slowpoke: %v", err)
	}

	edited := strings.Replace(testBots, "name: Finn Shipley", "name: Finn the Builder", 1) + `  - id: priest
    name: Priest
    brain:
      kind: script
      default: 'Priest heard: {{.Text}}'
    platforms:
      web: {}
`
	start := time.Now()
	writeInPlace(t, filepath.Join(dir, "bots.yaml"), edited)
	err = chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`button.bot[data-bot="priest"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button.bot.gone[data-bot="slowpoke"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#conv-notice`)),
	)
	if err != nil {
		t.Fatalf("the page after the reload: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the page changed %v after the edit", d)
	}
	waitTexts(t, ctx, `#bot-list .item-name`, "Matty Atlas|Finn the Builder|Priest|Slowpoke")
	if notice, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#conv-notice`))); !strings.Contains(notice, "Slowpoke is no longer available.") {
		t.Errorf("notice = %q", notice)
	}
	disabled, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('composer').disabled && document.getElementById('send').disabled`))
	if err != nil || !disabled {
		t.Errorf("composer disabled = %v, %v", disabled, err)
	}
	screenshot(t, ctx, "roster-removed")

	// Away and back: the conversation is still there to read.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`button.bot[data-bot="mattyatlas"]`)),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="picker-name"][text()="Matty Atlas"]`)),
		chromedp.Click(chromedp.CSS(`button.bot[data-bot="slowpoke"]`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="messages"]//div[contains(@class,"text")][text()="Slowpoke heard: are you there?"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#conv-notice`)),
	)
	if err != nil {
		t.Fatalf("back in Slowpoke's chat: %v", err)
	}

	// A client that missed the change is told why its message is refused.
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "send", "bot": "slowpoke", "text": "hello?", "client_id": "s1"})
	if f := c.expect("error"); f["code"] != "unknown_bot" || f["message"] != "Slowpoke is no longer available on the web" {
		t.Errorf("a send to the removed bot: %v", f)
	}
}
