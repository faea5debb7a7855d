package telegram_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/platforms/telegram"
	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
)

func TestPrivateMessageIsAnswered(t *testing.T) {
	h := newHarness(t, telegram.Options{}, polling("tg1", tok1))
	in := h.fake.Push(tok1, telegramtest.Private(alice, "hello there"))
	m := h.expect(tok1, alice.ID, "tg1 heard: hello there")
	if m.ReplyTo != in.Message.MessageID {
		t.Errorf("reply to %d, want %d", m.ReplyTo, in.Message.MessageID)
	}
	if h.fake.Calls(tok1, "deleteWebhook") == 0 {
		t.Error("polling started without deleteWebhook")
	}
	h.quiet(tok1)
}

// TestGroupAddressing sends group messages that address tg1 in each way
// Telegram allows, and ones that do not; after each one that must get no
// reply comes an addressed sentinel, whose reply must be the next one
// (a reply to the unaddressed message would come first: same session).
func TestGroupAddressing(t *testing.T) {
	h := newHarness(t, telegram.Options{}, polling("tg1", tok1), polling("tg2", tok2))
	h.ready(tok1, telegram.ModePolling)
	h.ready(tok2, telegram.ModePolling) // so tg1 knows @tg2_bot is tg2
	tg1 := telegramtest.User{ID: 1001, IsBot: true, FirstName: "tg1_bot", Username: "tg1_bot"}

	emoji := "héllo 👋🏽 @tg1_bot what's up"
	textMention := "Tg One, status please"
	caption := "look 🖼️ @tg1_bot"
	addressed := []struct {
		name string
		upd  telegramtest.Update
		want string
	}{
		{"mention after emoji", telegramtest.Group(team, alice, emoji, telegramtest.MentionOf(emoji, "@tg1_bot")), "tg1 heard: héllo 👋🏽 what's up"},
		{"text mention", telegramtest.Group(team, alice, textMention, telegramtest.TextMentionOf(textMention, "Tg One", tg1)), "tg1 heard: status please"},
		{"command", telegramtest.Group(team, alice, "/tg1 build it", telegramtest.Entities("/tg1 build it")...), "tg1 heard: build it"},
		{"command at this bot", telegramtest.Group(team, alice, "/tg1@tg1_bot ship it", telegramtest.Entities("/tg1@tg1_bot ship it")...), "tg1 heard: ship it"},
		{"caption mention", telegramtest.Group(team, alice, caption, telegramtest.MentionOf(caption, "@tg1_bot")).WithCaption(), "tg1 heard: look 🖼️"},
	}
	var last telegramtest.SentMessage
	for _, tt := range addressed {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			h.fake.Push(tok1, tt.upd)
			last = h.expect(tok1, team.ID, tt.want)
		})
	}
	t.Run("reply to the bot's message", func(t *testing.T) {
		h.t = t
		h.recorded(team.ID, last.MessageID)
		h.fake.Push(tok1, telegramtest.Group(team, bob, "and then?").ReplyTo(last))
		h.expect(tok1, team.ID, "tg1 heard: and then?")
	})

	other := "@tg2_bot what about you"
	unaddressed := []struct {
		name string
		upd  telegramtest.Update
	}{
		{"plain", telegramtest.Group(team, alice, "just chatting")},
		{"command at another bot", telegramtest.Group(team, alice, "/tg1@other_bot hi", telegramtest.Entities("/tg1@other_bot hi")...)},
		{"command naming no bot", telegramtest.Group(team, alice, "/start", telegramtest.Entities("/start")...)},
		{"mention of the other bot", telegramtest.Group(team, alice, other, telegramtest.MentionOf(other, "@tg2_bot"))},
		{"the bot's own message", telegramtest.Group(team, tg1, "@tg1_bot talking to myself", telegramtest.Entities("@tg1_bot talking to myself")...)},
		{"edited message", telegramtest.Group(team, alice, "@tg1_bot edited", telegramtest.Entities("@tg1_bot edited")...).Edited(1)},
	}
	for i, tt := range unaddressed {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			h.fake.Push(tok1, tt.upd)
			sentinel := fmt.Sprintf("@tg1_bot sentinel %d", i)
			h.fake.Push(tok1, telegramtest.Group(team, alice, sentinel, telegramtest.Entities(sentinel)...))
			h.expect(tok1, team.ID, fmt.Sprintf("tg1 heard: sentinel %d", i))
		})
	}
	h.t = t
	h.quiet(tok1)

	// Unaddressed messages are group history; the bot's own are not
	// taken in at all.
	msgs, err := h.gw.ChatHistory(context.Background(), "telegram", strconv.FormatInt(team.ID, 10), 100)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Text)
	}
	if !slices.Contains(texts, "just chatting") || slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, "myself") }) {
		t.Fatalf("group history %q", texts)
	}
}

func TestLongReplies(t *testing.T) {
	h := newHarness(t, telegram.Options{}, polling("tg1", tok1))

	// Exactly at the limit, counted in UTF-16 units (🎉 is two): one
	// message, intact.
	text := "long"
	for telegramtest.UTF16Len(text) < telegram.MaxMessageLength-4 {
		text += " x🎉"
	}
	text += strings.Repeat("y", telegram.MaxMessageLength-telegramtest.UTF16Len(text))
	h.fake.Push(tok1, telegramtest.Private(alice, text))
	m := h.expect(tok1, alice.ID, text)
	if n := telegramtest.UTF16Len(m.Text); n != telegram.MaxMessageLength {
		t.Fatalf("reply of %d units", n)
	}

	// Over it: split by the core into parts the fake accepts.
	para := "double" + strings.Repeat(" word🎉", 400) // 2,806 units; the reply is two of them
	h.fake.Push(tok1, telegramtest.Private(alice, para))
	first, second := h.next(tok1), h.next(tok1)
	for _, p := range []telegramtest.SentMessage{first, second} {
		if n := telegramtest.UTF16Len(p.Text); n > telegram.MaxMessageLength {
			t.Fatalf("part of %d units", n)
		}
	}
	if first.Text != para || second.Text != para {
		t.Fatalf("parts %q…, %q…: want the paragraph each", first.Text[:20], second.Text[:20])
	}
	h.quiet(tok1)
}

func TestRedeliveredUpdateAnsweredOnce(t *testing.T) {
	h := newHarness(t, telegram.Options{}, polling("tg1", tok1))
	in := h.fake.Push(tok1, telegramtest.Private(alice, "once"))
	h.expect(tok1, alice.ID, "tg1 heard: once")
	h.fake.Redeliver(tok1, in)
	h.fake.Push(tok1, telegramtest.Private(alice, "after"))
	h.expect(tok1, alice.ID, "tg1 heard: after")
	h.quiet(tok1)
}

// storeFailing is a Host whose first fails deliveries fail as a store
// that is busy or broken would, without reaching the gateway.
type storeFailing struct {
	gateway.Host
	fails atomic.Int32
}

func (h *storeFailing) Deliver(ctx context.Context, ev gateway.Event) (gateway.Receipt, error) {
	if h.fails.Add(-1) >= 0 {
		return gateway.Receipt{}, errors.New("store: database is locked")
	}
	return h.Host.Deliver(ctx, ev)
}

// TestUpdateNotStoredIsNotConfirmed checks the poller against a store
// failure: an update the gateway could not store is not confirmed, so it
// is polled again and answered once the store works, in order with what
// follows it.
func TestUpdateNotStoredIsNotConfirmed(t *testing.T) {
	failing := &storeFailing{}
	failing.fails.Store(2)
	h := newHarnessHost(t, telegram.Options{}, func(g gateway.Host) gateway.Host {
		failing.Host = g
		return failing
	}, polling("tg1", tok1))
	h.fake.Push(tok1, telegramtest.Private(alice, "first"))
	h.fake.Push(tok1, telegramtest.Private(alice, "second"))
	h.expect(tok1, alice.ID, "tg1 heard: first")
	h.expect(tok1, alice.ID, "tg1 heard: second")
	h.quiet(tok1)
	if n := failing.fails.Load(); n >= 0 {
		t.Errorf("%d planned store failures never happened", n+1)
	}
}

func TestBurstKeepsOrder(t *testing.T) {
	h := newHarness(t, telegram.Options{}, polling("tg1", tok1))
	for i := range 20 {
		h.fake.Push(tok1, telegramtest.Private(alice, fmt.Sprintf("m%02d", i)))
	}
	for i := range 20 {
		h.expect(tok1, alice.ID, fmt.Sprintf("tg1 heard: m%02d", i))
	}
	h.quiet(tok1)
}
