package gateway_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
)

// fakeClock is a gateway clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// focusRoom is a room lobby with Matty and Finn on a clock the test moves.
func focusRoom(t *testing.T) (*harness, *fakeClock) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	finn := bot("finnshipley", echo)
	finn.Name, finn.Aliases = "Finn Shipley", []string{"shipper"}
	matty := bot("mattyatlas", echo)
	matty.Name = "Matty Atlas"
	h := &harness{t: t, path: t.TempDir() + "/sb.db", plat: newRecorder("web"), now: clock.now}
	h.open(matty, finn)
	h.openRoom("lobby")
	return h, clock
}

// said checks the next reply: bot said text in the lobby.
func said(t *testing.T, h *harness, bot, text string) {
	t.Helper()
	m := h.plat.next(t)
	if m.ChatID != "lobby" || m.Bot != bot || m.Text != text {
		t.Fatalf("%s said %q in %s; want %s to say %q", m.Bot, m.Text, m.ChatID, bot, text)
	}
}

// TestFocusInRoom: /focus BOT sends a person's unaddressed messages to
// BOT (confirmed in one line) and nobody else's; an address still wins;
// /unfocus ends it; /focus alone takes the bot that spoke last.
func TestFocusInRoom(t *testing.T) {
	h, _ := focusRoom(t)
	h.deliver(roomEvent("web-ann", "1", "/focus @Finn"))
	said(t, h, "finnshipley", "Got it, ann: your messages here come to me (Finn Shipley) until you say /unfocus.")
	h.deliver(roomEvent("web-ann", "2", "what now?"))
	said(t, h, "finnshipley", "finnshipley: what now?")
	h.deliver(roomEvent("web-bob", "3", "and me?"))
	quiet(t, h.plat)
	h.deliver(roomEvent("web-ann", "4", "@matty your view?"))
	said(t, h, "mattyatlas", "mattyatlas: your view?")
	h.deliver(roomEvent("web-ann", "5", "/focus Matty Atlas"))
	said(t, h, "mattyatlas", "Got it, ann: your messages here come to me (Matty Atlas) until you say /unfocus.")
	h.deliver(roomEvent("web-ann", "6", "so?"))
	said(t, h, "mattyatlas", "mattyatlas: so?")
	h.deliver(roomEvent("web-ann", "7", "/unfocus"))
	said(t, h, "mattyatlas", "OK ann: your messages here no longer come to me (Matty Atlas); address a bot by name to talk to it.")
	h.deliver(roomEvent("web-ann", "8", "anyone?"))
	h.deliver(roomEvent("web-ann", "9", "/unfocus"))
	quiet(t, h.plat)

	// /focus alone: the bot that spoke last (Matty, above).
	h.deliver(roomEvent("web-ann", "10", "@shipper one more"))
	said(t, h, "finnshipley", "finnshipley: one more")
	h.deliver(roomEvent("web-ann", "11", "/focus"))
	said(t, h, "finnshipley", "Got it, ann: your messages here come to me (Finn Shipley) until you say /unfocus.")

	// A name that is no bot here focuses nobody and is answered by nobody.
	h.deliver(roomEvent("web-bob", "12", "/focus nobody"))
	h.deliver(roomEvent("web-bob", "13", "hello?"))
	quiet(t, h.plat)
}

// TestFocusExpires: a focus lasts while its person speaks in the chat,
// and ends after 24 hours of their silence there.
func TestFocusExpires(t *testing.T) {
	h, clock := focusRoom(t)
	h.deliver(roomEvent("web-ann", "1", "/focus finn"))
	h.plat.next(t)
	clock.advance(20 * time.Hour)
	h.deliver(roomEvent("web-ann", "2", "still there?"))
	said(t, h, "finnshipley", "finnshipley: still there?")
	clock.advance(20 * time.Hour) // 40 h after the focus, 20 h after ann spoke
	h.deliver(roomEvent("web-bob", "3", "others talk meanwhile"))
	h.deliver(roomEvent("web-ann", "4", "and now?"))
	said(t, h, "finnshipley", "finnshipley: and now?")
	clock.advance(24*time.Hour + time.Second)
	h.deliver(roomEvent("web-ann", "5", "hello after a day?"))
	quiet(t, h.plat)
}

// TestFocusPerBotCopies: on a platform where each bot of a group gets
// its own copy of a message, the copy of the bot a command names
// handles it, and a focused message is a turn of that bot's copy only.
func TestFocusPerBotCopies(t *testing.T) {
	h, _ := focusRoom(t)
	tg := newRecorder("telegram")
	h.gw.AddPlatform(tg)
	bots := h.gw.Roster().Bots()
	for i := range bots {
		b := *bots[i]
		b.Platforms = append(b.Platforms, "telegram")
		bots[i] = &b
	}
	h.gw.SetRoster(gateway.NewRoster(bots))
	copies := func(id, text string) {
		for _, b := range []string{"mattyatlas", "finnshipley"} {
			h.deliver(gateway.Event{Platform: "telegram", Bot: b, ChatID: "-100", ChatType: chat.Group, MessageID: id,
				Sender: gateway.Sender{PlatformID: "telegram-7", Name: "Ann"}, Text: text})
		}
	}
	copies("1", "/focus@matty_bot finn")
	if m := tg.next(t); m.Bot != "finnshipley" || !strings.Contains(m.Text, "come to me (Finn Shipley) until you say /unfocus") {
		t.Fatalf("%s: %q", m.Bot, m.Text)
	}
	copies("2", "plain words")
	if m := tg.next(t); m.Bot != "finnshipley" || m.Text != "finnshipley: plain words" {
		t.Fatalf("%s: %q", m.Bot, m.Text)
	}
	copies("3", "/unfocus")
	if m := tg.next(t); m.Bot != "finnshipley" || !strings.Contains(m.Text, "no longer come to me (Finn Shipley)") {
		t.Fatalf("%s: %q", m.Bot, m.Text)
	}
	copies("4", "plain again")
	select {
	case m := <-tg.ch:
		t.Fatalf("unexpected reply from %s: %q", m.Bot, m.Text)
	case <-time.After(150 * time.Millisecond):
	}
}

func FuzzParseFocus(f *testing.F) {
	for _, s := range []string{"/focus", "/focus finn", "/focus @Finn Shipley", "/focus@bot finn", "/unfocus", "/unfocus@x",
		"/focusing", "/focus@", " /focus\tfinn ", "/focus@bot", "/unfocus now", "hello /focus", "/focus-mode", "/foc", "/focus\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cmd, ok := gateway.ParseFocusForTest(text)
		if !ok {
			return
		}
		if !strings.HasPrefix(strings.TrimSpace(text), "/focus") && !strings.HasPrefix(strings.TrimSpace(text), "/unfocus") {
			t.Errorf("%q parsed as a focus command", text)
		}
		if cmd.Unfocus && cmd.Name != "" {
			t.Errorf("%q: unfocus with a name %q", text, cmd.Name)
		}
		if strings.HasPrefix(cmd.Name, "@") || cmd.Name != strings.TrimSpace(cmd.Name) {
			t.Errorf("%q: name %q not cleaned", text, cmd.Name)
		}
	})
}
