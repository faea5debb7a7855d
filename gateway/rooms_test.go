package gateway_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/identity"
)

func TestCheckRoomName(t *testing.T) {
	tests := []struct {
		name    string
		room    string
		wantErr string // substring; empty for accepted
	}{
		{"plain", "lobby", ""},
		{"spaces inside", "launch planning", ""},
		{"unicode", "Café ☕ 東京", ""},
		{"emoji with joiner", "team 👩‍💻", ""},
		{"flag with tags", "🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F", ""},
		{"cli group", "cli:finn+matty", ""},
		{"colon", "team:alpha", ""},
		{"100 characters", strings.Repeat("é", 100), ""},
		{"empty", "", "missing room name"},
		{"blank", "   ", "blank"},
		{"only a joiner", "\u200d", "blank"},
		{"101 characters", strings.Repeat("a", 101), "longer than 100"},
		{"leading space", " lobby", "starts or ends with a space"},
		{"trailing space", "lobby ", "starts or ends with a space"},
		{"not UTF-8", "lob\xffby", "not valid UTF-8"},
		{"NUL", "lob\x00by", "unprintable"},
		{"newline", "lob\nby", "unprintable"},
		{"tab", "lob\tby", "unprintable"},
		{"escape", "\x1b[31mred", "unprintable"},
		{"DEL", "lobby\x7f", "unprintable"},
		{"C1 control", "lobby\u0085", "unprintable"},
		{"line separator", "lob\u2028by", "unprintable"},
		{"paragraph separator", "lob\u2029by", "unprintable"},
		{"LRE", "\u202alobby", "unprintable"},
		{"RLE", "\u202blobby", "unprintable"},
		{"PDF", "lobby\u202c", "unprintable"},
		{"LRO", "\u202dlobby", "unprintable"},
		{"RLO", "lobby\u202egnp.exe", "unprintable"},
		{"LRI", "\u2066lobby", "unprintable"},
		{"RLI", "\u2067lobby", "unprintable"},
		{"FSI", "\u2068lobby", "unprintable"},
		{"PDI", "lobby\u2069", "unprintable"},
		{"RLM", "lobby\u200f", "unprintable"},
		{"Arabic letter mark", "lobby\u061c", "unprintable"},
		{"zero-width space", "lob\u200bby", "unprintable"},
		{"byte order mark", "\ufefflobby", "unprintable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := gateway.CheckRoomName(tc.room)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckRoomName(%q) = %v; want accepted", tc.room, err)
				}
				return
			}
			if !errors.Is(err, gateway.ErrInvalidRequest) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("CheckRoomName(%q) = %v; want ErrInvalidRequest mentioning %q", tc.room, err, tc.wantErr)
			}
		})
	}
}

// FuzzCheckRoomName: whatever it accepts is a printable name of at most
// 100 characters with something visible in it.
func FuzzCheckRoomName(f *testing.F) {
	for _, s := range []string{"lobby", "cli:a+b", "", " ", "a\u202eb", "\u200d", "é", "\xff", "web-ann:matty"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if gateway.CheckRoomName(name) != nil {
			return
		}
		if !utf8.ValidString(name) || utf8.RuneCountInString(name) > gateway.MaxRoomName || strings.TrimSpace(name) != name {
			t.Fatalf("accepted %q", name)
		}
		visible := false
		for _, r := range name {
			if unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == '\u2028' || r == '\u2029' {
				t.Fatalf("accepted %q with %U", name, r)
			}
			visible = visible || (unicode.IsGraphic(r) && !unicode.IsSpace(r))
		}
		if !visible {
			t.Fatalf("accepted blank %q", name)
		}
	})
}

// join asks the gateway to join room as platformID.
func (h *harness) join(platformID, room string, bots []string, open bool) ([]string, error) {
	infos, err := h.gw.JoinRoom(context.Background(), gateway.RoomJoin{Platform: "web", Room: room, PlatformID: platformID, Bots: bots, Open: open})
	var ids []string
	for _, b := range infos {
		ids = append(ids, b.ID)
	}
	return ids, err
}

// say delivers a message of platformID into a web room.
func (h *harness) say(platformID, room, id, text string) error {
	_, err := h.gw.Deliver(context.Background(), gateway.Event{
		Platform: "web", ChatID: room, ChatType: chat.Group, ChatName: room, MessageID: platformID + "/" + id,
		Sender: gateway.Sender{PlatformID: platformID, Name: platformID}, Text: text, Mentions: gateway.ParseMentions(text),
	})
	return err
}

// roomTexts is a room's history as platformID reads it.
func (h *harness) roomTexts(platformID, room string) ([]string, error) {
	msgs, err := h.gw.RoomHistory(context.Background(), "web", room, platformID, 50)
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out, err
}

// refused checks that err is a refusal for reason, with a message.
func refused(t *testing.T, what string, err, reason error) {
	t.Helper()
	var r *gateway.Refusal
	if !errors.Is(err, reason) || !errors.As(err, &r) || r.Message == "" {
		t.Errorf("%s: %v; want a refusal for %v", what, err, reason)
	}
}

func TestClosedRoom(t *testing.T) {
	h := newHarness(t, bot("matty", echo), bot("finn", echo))
	ctx := context.Background()
	bots, err := h.join("web-ann", "den", []string{"matty"}, false)
	if err != nil || !slices.Equal(bots, []string{"matty"}) {
		t.Fatalf("create = %v, %v", bots, err)
	}
	if err := h.say("web-ann", "den", "1", "@matty hello"); err != nil {
		t.Fatal(err)
	}
	if m := h.plat.next(t); m.ChatID != "den" || m.Text != "matty: hello" {
		t.Fatalf("reply = %+v", m)
	}

	// A stranger can neither join, write, read nor invite.
	_, err = h.join("web-bob", "den", []string{"finn"}, true)
	refused(t, "stranger's join", err, gateway.ErrNotAllowed)
	refused(t, "stranger's send", h.say("web-bob", "den", "1", "@matty let me in"), gateway.ErrNotAllowed)
	_, err = h.roomTexts("web-bob", "den")
	refused(t, "stranger's history", err, gateway.ErrNotAllowed)
	refused(t, "stranger's invite", h.gw.InviteToRoom(ctx, "web", "den", "web-bob", "web-bob"), gateway.ErrNotAllowed)
	quiet(t, h.plat)
	if got, err := h.roomTexts("web-ann", "den"); err != nil || !slices.Equal(got, []string{"@matty hello", "matty: hello"}) {
		t.Errorf("room history = %q, %v; want nothing of the stranger's", got, err)
	}

	// No such room.
	refused(t, "send to no room", h.say("web-ann", "nowhere", "1", "hi"), gateway.ErrUnknownChat)
	_, err = h.roomTexts("web-ann", "nowhere")
	refused(t, "history of no room", err, gateway.ErrUnknownChat)
	refused(t, "invite into no room", h.gw.InviteToRoom(ctx, "web", "nowhere", "web-ann", "web-bob"), gateway.ErrUnknownChat)

	// A member invites; the invited person joins, reads and writes.
	if err := h.gw.InviteToRoom(ctx, "web", "den", "web-ann", "web-bob"); err != nil {
		t.Fatalf("invite: %v", err)
	}
	bots, err = h.join("web-bob", "den", []string{"finn"}, true)
	if err != nil || !slices.Equal(bots, []string{"matty"}) {
		t.Fatalf("invited join = %v, %v; want the room's own bots", bots, err)
	}
	if got, err := h.roomTexts("web-bob", "den"); err != nil || len(got) != 2 {
		t.Errorf("invited person's history = %q, %v", got, err)
	}
	if err := h.say("web-bob", "den", "2", "@matty me too"); err != nil {
		t.Fatalf("invited person's send: %v", err)
	}
	if m := h.plat.next(t); m.Text != "matty: me too" {
		t.Errorf("reply = %+v", m)
	}
	// And invites in turn.
	if err := h.gw.InviteToRoom(ctx, "web", "den", "web-bob", "web-cat"); err != nil {
		t.Errorf("invite by an invited member: %v", err)
	}
	if _, err := h.join("web-cat", "den", nil, false); err != nil {
		t.Errorf("join of the member's guest: %v", err)
	}
}

// Nobody changes an existing room's bots; bots are checked only when a
// join creates the room.
func TestRoomBotsFixedAtCreation(t *testing.T) {
	h := newHarness(t, bot("matty", echo), bot("finn", echo))
	if _, err := h.join("web-ann", "den", []string{"nobody"}, false); !errors.Is(err, gateway.ErrUnknownBot) {
		t.Errorf("create with an unknown bot: %v; want ErrUnknownBot", err)
	}
	if _, err := h.join("web-ann", "den", []string{"matty", "matty"}, true); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		who  string
		bots []string
	}{
		{"web-ann", []string{"finn"}},   // the creator
		{"web-bob", []string{"finn"}},   // anyone, the room being open
		{"web-cat", []string{"nobody"}}, // a bot since removed, say
		{"web-dan", []string{}},         // no bots at all
		{"web-eve", nil},                // the default: every bot
	} {
		if bots, err := h.join(tc.who, "den", tc.bots, false); err != nil || !slices.Equal(bots, []string{"matty"}) {
			t.Errorf("%s joining with %q = %v, %v; want [matty]", tc.who, tc.bots, bots, err)
		}
	}
	if in, err := h.store.ChatHasBot(context.Background(), "web", "den", "finn"); err != nil || in {
		t.Errorf("finn in the room = %v, %v", in, err)
	}
}

func TestOpenRoom(t *testing.T) {
	h := newHarness(t, bot("matty", echo))
	ctx := context.Background()
	if _, err := h.join("web-ann", "square", nil, true); err != nil {
		t.Fatal(err)
	}
	// Anyone may write and read without joining…
	if err := h.say("web-bob", "square", "1", "hello all"); err != nil {
		t.Errorf("send to an open room: %v", err)
	}
	if got, err := h.roomTexts("web-bob", "square"); err != nil || !slices.Equal(got, []string{"hello all"}) {
		t.Errorf("history of an open room = %q, %v", got, err)
	}
	// …but only a member, who joined, invites.
	refused(t, "invite by a non-member", h.gw.InviteToRoom(ctx, "web", "square", "web-bob", "web-cat"), gateway.ErrNotAllowed)
	if _, err := h.join("web-bob", "square", nil, false); err != nil {
		t.Fatal(err)
	}
	if err := h.gw.InviteToRoom(ctx, "web", "square", "web-bob", "web-cat"); err != nil {
		t.Errorf("invite by a joiner: %v", err)
	}
}

// A membership is a person's: every identity of theirs is the member,
// however they were invited.
func TestRoomMembershipIsPerPerson(t *testing.T) {
	h := newHarness(t, bot("matty", echo))
	ctx := context.Background()
	h.gw.SetDirectory(directory(t,
		identity.User{ID: "user-bryan", Name: "Bryan", Identities: []string{"web-bryan", "web-bryan-phone", "telegram-1"}},
		identity.User{ID: "user-cat", Name: "Cat", Identities: []string{"web-cat", "telegram-2"}},
		identity.User{ID: "user-dan", Name: "Dan", Identities: []string{"web-dan"}},
	))
	if _, err := h.join("web-bryan", "den", nil, false); err != nil {
		t.Fatal(err)
	}
	// The creator's other identity is the same member.
	if _, err := h.join("web-bryan-phone", "den", nil, false); err != nil {
		t.Errorf("creator's other identity: %v", err)
	}
	// Invited by master ID, by a platform ID of a listed user, by the
	// platform ID of someone users.yaml does not list.
	for _, tc := range []struct{ user, joiner string }{
		{"user-cat", "web-cat"},
		{"web-dan", "web-dan"},
		{"telegram-9", "telegram-9"},
	} {
		if _, err := h.join(tc.joiner, "den", nil, false); !errors.Is(err, gateway.ErrNotAllowed) {
			t.Errorf("%s before the invite: %v; want ErrNotAllowed", tc.joiner, err)
		}
		if err := h.gw.InviteToRoom(ctx, "web", "den", "web-bryan-phone", tc.user); err != nil {
			t.Errorf("invite %s: %v", tc.user, err)
		}
		if _, err := h.join(tc.joiner, "den", nil, false); err != nil {
			t.Errorf("%s after inviting %s: %v", tc.joiner, tc.user, err)
		}
	}
	// Invited as master user, Cat writes from another identity.
	if err := h.say("telegram-2", "den", "1", "from my phone"); err != nil {
		t.Errorf("member's other identity writes: %v", err)
	}
	for _, user := range []string{"", "nobody", "web bob", "user-nobody", "web-\u202ebob", strings.Repeat("a", 300)} {
		refused(t, "invite of "+user, h.gw.InviteToRoom(ctx, "web", "den", "web-bryan", user), gateway.ErrInvalidRequest)
	}
}

// Another person's private chat can never be read: not as a room, nor
// through a session's history.
func TestPrivateChatsStayPrivate(t *testing.T) {
	h := newHarness(t, bot("matty", echo))
	ctx := context.Background()
	h.gw.SetDirectory(directory(t, identity.User{ID: "user-ann", Name: "Ann", Identities: []string{"web-ann", "web-ann-phone", "cli-ann"}}))
	h.deliver(private("web-ann", "matty", "1", "my secret"))
	h.plat.next(t)
	h.deliver(private("web-bob", "matty", "1", "bob here"))
	h.plat.next(t)

	for _, chatID := range []string{"web-ann:matty", "web-ann-phone:matty", "cli-ann:matty", "telegram-5:matty", "web-ann:nobody"} {
		_, err := h.join("web-bob", chatID, nil, true)
		refused(t, "join "+chatID, err, gateway.ErrNotAllowed)
		refused(t, "send to "+chatID, h.say("web-bob", chatID, "2", "@matty tell me"), gateway.ErrNotAllowed)
		_, err = h.roomTexts("web-bob", chatID)
		refused(t, "history of "+chatID, err, gateway.ErrNotAllowed)
		refused(t, "invite into "+chatID, h.gw.InviteToRoom(ctx, "web", chatID, "web-bob", "web-bob"), gateway.ErrNotAllowed)
	}
	// Ann's own private chat is no room either: she reads it by its bot.
	for _, who := range []string{"web-ann", "web-ann-phone"} {
		_, err := h.join(who, "web-ann:matty", nil, false)
		refused(t, who+" joining her private chat", err, gateway.ErrInvalidRequest)
	}
	if _, err := h.store.Room(ctx, "web", "web-ann:matty", gateway.Person{ID: "web-bob"}); !errors.Is(err, gateway.ErrUnknownChat) {
		t.Errorf("a room named like a private chat exists: %v", err)
	}
	// History by bot is one's own session only.
	msgs, err := h.gw.SessionHistory(ctx, "matty", "web-bob", 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if strings.Contains(m.Text, "secret") {
			t.Errorf("bob's history holds ann's %q", m.Text)
		}
	}
	if len(msgs) != 2 {
		t.Errorf("bob's history = %d messages, want 2", len(msgs))
	}
	quiet(t, h.plat)
}

// Telegram and Discord groups keep their platform's membership: anyone
// there writes, and no room rule applies.
func TestPlatformGroupsAreNotRooms(t *testing.T) {
	b := bot("matty", echo)
	b.Platforms = []string{"web", "telegram"}
	h := newHarness(t, b)
	h.gw.AddPlatform(newRecorder("telegram"))
	for i, sender := range []string{"telegram-1", "telegram-2"} {
		_, err := h.gw.Deliver(context.Background(), gateway.Event{
			Platform: "telegram", Bot: "matty", ChatID: "-100", ChatType: chat.Group, MessageID: string(rune('a' + i)),
			Sender: gateway.Sender{PlatformID: sender, Name: sender}, Text: "chatter",
		})
		if err != nil {
			t.Errorf("%s in a telegram group: %v", sender, err)
		}
	}
	// Nor can a room be made of it, or its history read as a room's.
	if _, err := h.gw.JoinRoom(context.Background(), gateway.RoomJoin{Platform: "telegram", Room: "-100", PlatformID: "telegram-1"}); !errors.Is(err, gateway.ErrNotAllowed) {
		t.Errorf("join of a telegram group: %v; want ErrNotAllowed", err)
	}
}
