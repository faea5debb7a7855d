package telegram_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/platforms/telegram"
	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
)

// links records what a platform reports through Options.Report.
type links struct {
	mu   sync.Mutex
	last map[string]string // bot → "state: error"
	seen map[string][]string
}

func newLinks() *links { return &links{last: map[string]string{}, seen: map[string][]string{}} }

func (l *links) report(bot, state string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := state
	if err != nil {
		s += ": " + err.Error()
	}
	l.last[bot] = s
	l.seen[bot] = append(l.seen[bot], s)
}

// wait returns bot's last report once it starts with prefix.
func (l *links) wait(t *testing.T, bot, prefix string) string {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		l.mu.Lock()
		s := l.last[bot]
		l.mu.Unlock()
		if strings.HasPrefix(s, prefix) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s reported %q, want %q…", bot, s, prefix)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLinkStates: a polling and a webhook bot report connecting, then
// connected; a bot whose token the Bot API refuses reports failing with
// the call and the error, never the token.
func TestLinkStates(t *testing.T) {
	l := newLinks()
	const badToken = "1009:AAunknown-token"
	h := newHarness(t, telegram.Options{Report: l.report},
		polling("tg1", tok1), webhook("tg2", tok2), polling("bad", badToken))
	l.wait(t, "tg1", gateway.LinkConnected)
	l.wait(t, "tg2", gateway.LinkConnected)
	failing := l.wait(t, "bad", gateway.LinkFailing+": getMe:")
	if strings.Contains(failing, badToken) {
		t.Errorf("the report shows the token: %q", failing)
	}
	l.mu.Lock()
	first := l.seen["tg1"][0]
	l.mu.Unlock()
	if first != gateway.LinkConnecting {
		t.Errorf("tg1's first report = %q, want connecting", first)
	}

	// A poll that fails turns a connected bot to failing, and the next
	// good one back. (The running long poll ends with an update; the
	// fault hits the one after it.)
	h.fake.Fail("getUpdates", 1, 500, 0)
	h.fake.Push(tok1, telegramtest.Private(alice, "one"))
	h.expect(tok1, alice.ID, "tg1 heard: one")
	l.wait(t, "tg1", gateway.LinkFailing+": getUpdates")
	h.fake.Push(tok1, telegramtest.Private(alice, "two"))
	h.expect(tok1, alice.ID, "tg1 heard: two")
	l.wait(t, "tg1", gateway.LinkConnected)

	// Two bots with one token: the second is refused at Configure.
	h.configure(polling("tg1", tok1), polling("twin", tok1))
	if got := l.wait(t, "twin", gateway.LinkFailing); !strings.Contains(got, "same token as bot tg1") {
		t.Errorf("twin = %q", got)
	}
}
