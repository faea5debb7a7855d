package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/identity"
)

// historyEcho replies with the texts of the session's history so far.
var historyEcho = brainFunc(func(_ context.Context, t brains.Turn) (brains.Reply, error) {
	var parts []string
	for _, e := range t.History {
		if e.Kind == "human" {
			parts = append(parts, e.Text)
		}
	}
	parts = append(parts, t.Text)
	return brains.Reply{Text: t.User.ID + " said " + strings.Join(parts, ",")}, nil
})

func directory(t *testing.T, users ...identity.User) *identity.Directory {
	t.Helper()
	d, err := identity.NewDirectory(users)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func telegramPrivate(userID, botID, msgID, text string) gateway.Event {
	return gateway.Event{
		Platform: "telegram", Bot: botID, ChatID: userID, ChatType: chat.Private, MessageID: msgID,
		Sender: gateway.Sender{PlatformID: "telegram-" + userID, Name: "Ann T"}, Text: text,
	}
}

func TestOneUserOneSessionAcrossPlatforms(t *testing.T) {
	b := bot("matty", historyEcho)
	b.Platforms = []string{"web", "telegram"}
	h := newHarness(t, b)
	tg := newRecorder("telegram")
	h.gw.AddPlatform(tg)
	h.gw.SetDirectory(directory(t, identity.User{ID: "user-ann", Name: "Ann", Identities: []string{"web-ann", "telegram-111"}}))

	h.deliver(private("web-ann", "matty", "w1", "one"))
	if got := h.plat.next(t); got.Text != "user-ann said one" {
		t.Fatalf("web reply = %q", got.Text)
	}
	h.deliver(telegramPrivate("111", "matty", "t1", "two"))
	got := tg.next(t)
	if got.Text != "user-ann said one,two" {
		t.Errorf("telegram reply = %q; want the history from the web too", got.Text)
	}
	if got.ChatID != "111" {
		t.Errorf("reply went to telegram chat %q, want 111 where Ann last spoke", got.ChatID)
	}
	// The web history of the session holds both platforms' messages.
	msgs, err := h.gw.SessionHistory(context.Background(), "matty", "web-ann", 10)
	if err != nil || len(msgs) != 4 {
		t.Fatalf("session history = %d messages, %v; want 4", len(msgs), err)
	}
	if msgs[2].Platform != "telegram" || msgs[2].Text != "two" {
		t.Errorf("third message = %+v", msgs[2])
	}
}

func TestPublicBotDoesNotMergeIdentities(t *testing.T) {
	b := bot("pub", historyEcho)
	b.Public = true
	b.Platforms = []string{"web", "telegram"}
	h := newHarness(t, b)
	tg := newRecorder("telegram")
	h.gw.AddPlatform(tg)
	h.gw.SetDirectory(directory(t, identity.User{ID: "user-ann", Name: "Ann", Identities: []string{"web-ann", "telegram-111"}}))

	h.deliver(private("web-ann", "pub", "w1", "one"))
	if got := h.plat.next(t).Text; got != "web-ann said one" {
		t.Errorf("web reply = %q; a public bot sees the raw platform ID", got)
	}
	h.deliver(telegramPrivate("111", "pub", "t1", "two"))
	if got := tg.next(t).Text; got != "telegram-111 said two" {
		t.Errorf("telegram reply = %q; want a separate session", got)
	}
}

func TestReplyFollowsUserToLatestChat(t *testing.T) {
	release := make(chan struct{})
	gate := brainFunc(func(ctx context.Context, tr brains.Turn) (brains.Reply, error) {
		if tr.Text == "slow" {
			<-release
		}
		return brains.Reply{Text: "re " + tr.Text}, nil
	})
	b := bot("matty", gate)
	b.Platforms = []string{"web", "telegram"}
	h := newHarness(t, b)
	tg := newRecorder("telegram")
	h.gw.AddPlatform(tg)
	h.gw.SetDirectory(directory(t, identity.User{ID: "user-ann", Identities: []string{"web-ann", "telegram-111"}}))

	h.deliver(private("web-ann", "matty", "w1", "slow"))
	// While Matty thinks, Ann moves to Telegram.
	h.deliver(telegramPrivate("111", "matty", "t1", "now here"))
	close(release)
	if got := tg.next(t); got.Text != "re slow" {
		t.Errorf("first reply on telegram = %q; want the answer to the web message", got.Text)
	}
	if got := tg.next(t); got.Text != "re now here" {
		t.Errorf("second reply = %q", got.Text)
	}
}
