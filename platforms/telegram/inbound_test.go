package telegram

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/go-telegram/bot/models"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
)

// The bot under test is tg1 (@tg1_bot, user 1001); tg2 (@tg2_bot, 1002)
// is another bot the platform serves.
var (
	me  = &models.User{ID: 1001, IsBot: true, FirstName: "Tg One", Username: "tg1_bot"}
	dir = directory{
		byName: map[string]string{"tg1_bot": "tg1", "tg2_bot": "tg2"},
		byID:   map[int64]string{1001: "tg1", 1002: "tg2"},
	}
	alice = telegramtest.User{ID: 5001, FirstName: "Alice", LastName: "Liddell", Username: "alice"}
	team  = telegramtest.GroupChat(-100200, "Team")
)

// decode runs a fake update through JSON into the client library's type,
// as both the poller and the webhook handler receive it.
func decode(t testing.TB, u telegramtest.Update) *models.Update {
	t.Helper()
	if u.Message != nil && u.Message.MessageID == 0 {
		m := *u.Message
		m.MessageID, m.Date = 7, 1700000000
		u.Message = &m
	}
	raw, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	var upd models.Update
	if err := json.Unmarshal(raw, &upd); err != nil {
		t.Fatal(err)
	}
	return &upd
}

func TestToEvent(t *testing.T) {
	emoji := "héllo 👋🏽 @tg1_bot what's up"
	textMention := "Tg One, status please"
	other := "@tg2_bot and @tg1_bot"
	tests := []struct {
		name     string
		upd      telegramtest.Update
		skip     bool
		typ      chat.Type
		mentions []gateway.Mention
	}{
		{name: "private", upd: telegramtest.Private(alice, "hello"), typ: chat.Private},
		{name: "group plain", upd: telegramtest.Group(team, alice, "just chatting"), typ: chat.Group},
		{name: "mention after emoji", upd: telegramtest.Group(team, alice, emoji, telegramtest.MentionOf(emoji, "@tg1_bot")), typ: chat.Group,
			mentions: []gateway.Mention{{Start: 16, End: 24, Name: "tg1_bot", Bot: "tg1"}}},
		{name: "mentions of two bots", upd: telegramtest.Group(team, alice, other, telegramtest.Entities(other)...), typ: chat.Group,
			mentions: []gateway.Mention{{Start: 0, End: 8, Name: "tg2_bot", Bot: "tg2"}, {Start: 13, End: 21, Name: "tg1_bot", Bot: "tg1"}}},
		{name: "mention of a person", upd: telegramtest.Group(team, alice, "@someone hi", telegramtest.MentionOf("@someone hi", "@someone")), typ: chat.Group,
			mentions: []gateway.Mention{{Start: 0, End: 8, Name: "someone"}}},
		{name: "text mention", upd: telegramtest.Group(team, alice, textMention, telegramtest.TextMentionOf(textMention, "Tg One", telegramtest.User{ID: 1001, IsBot: true, FirstName: "Tg One"})), typ: chat.Group,
			mentions: []gateway.Mention{{Start: 0, End: 6, Bot: "tg1"}}},
		{name: "text mention of a person without username", upd: telegramtest.Group(team, alice, textMention, telegramtest.TextMentionOf(textMention, "Tg One", telegramtest.User{ID: 9, FirstName: "Tg One"})), typ: chat.Group},
		{name: "entity off the text", upd: telegramtest.Group(team, alice, "hi", telegramtest.Entity{Type: "mention", Offset: 1, Length: 9}), typ: chat.Group},
		{name: "entity inside a surrogate pair", upd: telegramtest.Group(team, alice, "🎉@tg1_bot", telegramtest.Entity{Type: "mention", Offset: 1, Length: 3}), typ: chat.Group},
		{name: "command for this bot", upd: telegramtest.Group(team, alice, "/tg1@tg1_bot go"), typ: chat.Group},
		{name: "command for this bot, other case", upd: telegramtest.Group(team, alice, "/tg1@TG1_Bot go"), typ: chat.Group},
		{name: "command for another bot", upd: telegramtest.Group(team, alice, "/tg1@tg2_bot go"), skip: true},
		{name: "command for another bot in private", upd: telegramtest.Private(alice, "/start@other_bot"), skip: true},
		{name: "caption", upd: telegramtest.Group(team, alice, "@tg1_bot look", telegramtest.MentionOf("@tg1_bot look", "@tg1_bot")).WithCaption(), typ: chat.Group,
			mentions: []gateway.Mention{{Start: 0, End: 8, Name: "tg1_bot", Bot: "tg1"}}},
		{name: "own message", upd: telegramtest.Group(team, telegramtest.User{ID: 1001, IsBot: true, FirstName: "Tg One"}, "@tg1_bot hi"), skip: true},
		{name: "edited", upd: telegramtest.Private(alice, "hello").Edited(3), skip: true},
		{name: "no text", upd: telegramtest.Private(alice, ""), skip: true},
		{name: "blank text", upd: telegramtest.Private(alice, " \n "), skip: true},
		{name: "channel", upd: telegramtest.Text(telegramtest.Chat{ID: -100900, Type: "channel", Title: "News"}, alice, "post"), skip: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, ok := toEvent("tg1", me, dir, decode(t, tt.upd))
			if ok == tt.skip {
				t.Fatalf("ok = %v, want %v (event %+v)", ok, !tt.skip, ev)
			}
			if !ok {
				return
			}
			if err := ev.Validate(); err != nil {
				t.Fatal(err)
			}
			if ev.Platform != "telegram" || ev.Bot != "tg1" || ev.ChatType != tt.typ || ev.MessageID != "7" || ev.Time.Unix() != 1700000000 {
				t.Errorf("event = %+v", ev)
			}
			if ev.Sender != (gateway.Sender{PlatformID: "telegram-5001", Name: "Alice Liddell"}) {
				t.Errorf("sender = %+v", ev.Sender)
			}
			if len(ev.Mentions) != len(tt.mentions) {
				t.Fatalf("mentions = %+v, want %+v", ev.Mentions, tt.mentions)
			}
			for i, m := range ev.Mentions {
				if m != tt.mentions[i] {
					t.Errorf("mention %d = %+v, want %+v (%q)", i, m, tt.mentions[i], ev.Text[m.Start:m.End])
				}
			}
		})
	}
}

func TestToEventFields(t *testing.T) {
	u := telegramtest.Group(team, telegramtest.User{ID: 6, Username: "bob"}, "re").ReplyTo(telegramtest.SentMessage{MessageID: 41})
	ev, ok := toEvent("tg1", me, dir, decode(t, u))
	if !ok {
		t.Fatal("skipped")
	}
	if ev.ChatID != "-100200" || ev.ChatName != "Team" || ev.ReplyTo != "41" || ev.Sender.Name != "bob" || ev.Sender.PlatformID != "telegram-6" {
		t.Errorf("event = %+v", ev)
	}
}

// FuzzUpdate feeds arbitrary JSON as an update: the conversion never
// panics, and what it produces is a valid event whose mentions are spans
// of its text on character boundaries.
func FuzzUpdate(f *testing.F) {
	for _, u := range []telegramtest.Update{
		telegramtest.Private(alice, "hello"),
		telegramtest.Group(team, alice, "héllo 👋🏽 @tg1_bot", telegramtest.MentionOf("héllo 👋🏽 @tg1_bot", "@tg1_bot")),
		telegramtest.Group(team, alice, "Tg One hi", telegramtest.TextMentionOf("Tg One hi", "Tg One", telegramtest.User{ID: 1002})),
		telegramtest.Group(team, alice, "/tg1@tg1_bot go"),
	} {
		raw, _ := json.Marshal(decode(f, u))
		f.Add(raw)
	}
	f.Add([]byte(`{"update_id":1,"message":{"message_id":1,"from":{"id":2},"chat":{"id":3,"type":"group"},"text":"🎉x","entities":[{"type":"mention","offset":-1,"length":3},{"type":"text_mention","offset":0,"length":2,"user":{"id":1002}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var upd models.Update
		if json.Unmarshal(data, &upd) != nil {
			return
		}
		ev, ok := toEvent("tg1", me, dir, &upd)
		if !ok {
			return
		}
		if err := ev.Validate(); err != nil {
			t.Fatalf("invalid event: %v: %+v", err, ev)
		}
		for _, m := range ev.Mentions {
			if m.Start < 0 || m.End > len(ev.Text) || m.Start >= m.End {
				t.Fatalf("mention %+v outside %q", m, ev.Text)
			}
			if !utf8.RuneStart(ev.Text[m.Start]) || (m.End < len(ev.Text) && !utf8.RuneStart(ev.Text[m.End])) {
				t.Fatalf("mention %+v splits a character of %q", m, ev.Text)
			}
		}
	})
}
