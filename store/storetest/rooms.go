package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/switchboard-chat/switchboard/gateway"
)

// person is a person users.yaml does not list, known by one platform ID.
func person(id string) gateway.Person { return gateway.Person{ID: id} }

// testRooms: a room is made with its bots on first join; later joins add
// members and keep the bots; its messages are its own.
func testRooms(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	r, err := s.JoinRoom(ctx, "web", "lobby", person("web-ann"), gateway.NewRoom{Bots: []string{"matty", "finn"}, Open: true})
	if err != nil || !slices.Equal(r.Bots, []string{"matty", "finn"}) || !r.Open || !r.Member {
		t.Fatalf("create room = %+v, %v", r, err)
	}
	r, err = s.JoinRoom(ctx, "web", "lobby", person("web-bob"), gateway.NewRoom{Bots: []string{"priest"}})
	if err != nil || !slices.Equal(r.Bots, []string{"matty", "finn"}) || !r.Open {
		t.Errorf("join room = %+v, %v; want its bots and openness kept", r, err)
	}
	for bot, want := range map[string]bool{"matty": true, "finn": true, "priest": false} {
		if in, err := s.ChatHasBot(ctx, "web", "lobby", bot); err != nil || in != want {
			t.Errorf("room has %s = %v, %v", bot, in, err)
		}
	}
	if in, err := s.ChatHasBot(ctx, "web", "elsewhere", "matty"); err != nil || in {
		t.Errorf("unknown room has matty = %v, %v", in, err)
	}
	appendInbound(t, s, group("lobby", "ann", "g1", "one"))
	appendInbound(t, s, group("lobby", "bob", "g2", "two", "finn"))
	appendInbound(t, s, group("other", "ann", "g3", "elsewhere"))
	msgs, err := s.ChatMessages(ctx, "web", "lobby", 10)
	if got := texts(msgs); err != nil || !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("room messages = %q, %v", got, err)
	}
	if msgs, _ := s.ChatMessages(ctx, "web", "lobby", 1); !slices.Equal(texts(msgs), []string{"two"}) {
		t.Errorf("room's last message = %q", texts(msgs))
	}
	// A bot's message in a platform's group makes it present there.
	in := group("tg-group", "ann", "t1", "@matty hi", "matty")
	in.Message.Platform, in.Message.Bot = "telegram", "matty"
	appendInbound(t, s, in)
	if present, err := s.ChatHasBot(ctx, "telegram", "tg-group", "matty"); err != nil || !present {
		t.Errorf("telegram group has matty = %v, %v", present, err)
	}
}

// testRoomMembership: a closed room lets in its members only, a member
// invites others, and every refusal leaves the room as it was.
func testRoomMembership(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	ann, bob, cat := person("web-ann"), person("web-bob"), person("web-cat")

	r, err := s.JoinRoom(ctx, "web", "den", ann, gateway.NewRoom{Bots: []string{"matty"}})
	if err != nil || r.Open || !r.Member || !slices.Equal(r.Bots, []string{"matty"}) {
		t.Fatalf("create closed room = %+v, %v", r, err)
	}
	// A stranger's join is refused and makes them no member.
	if _, err := s.JoinRoom(ctx, "web", "den", bob, gateway.NewRoom{Bots: []string{"finn"}, Open: true}); !errors.Is(err, gateway.ErrNotAllowed) {
		t.Errorf("stranger's join: %v; want ErrNotAllowed", err)
	}
	wantRoom(t, s, "den", bob, gateway.Room{Bots: []string{"matty"}})
	wantRoom(t, s, "den", ann, gateway.Room{Bots: []string{"matty"}, Member: true})

	// Only a member invites.
	if err := s.AddRoomMember(ctx, "web", "den", bob, cat); !errors.Is(err, gateway.ErrNotAllowed) {
		t.Errorf("invite by a stranger: %v; want ErrNotAllowed", err)
	}
	wantRoom(t, s, "den", cat, gateway.Room{Bots: []string{"matty"}})
	if err := s.AddRoomMember(ctx, "web", "nowhere", ann, bob); !errors.Is(err, gateway.ErrUnknownChat) {
		t.Errorf("invite into no room: %v; want ErrUnknownChat", err)
	}
	if err := s.AddRoomMember(ctx, "web", "den", ann, bob); err != nil {
		t.Fatalf("invite by a member: %v", err)
	}
	if err := s.AddRoomMember(ctx, "web", "den", ann, bob); err != nil {
		t.Errorf("second invite of a member: %v", err)
	}
	wantRoom(t, s, "den", bob, gateway.Room{Bots: []string{"matty"}, Member: true})
	if r, err := s.JoinRoom(ctx, "web", "den", bob, gateway.NewRoom{}); err != nil || !r.Member {
		t.Errorf("invited person's join = %+v, %v", r, err)
	}
	// Now a member, bob invites too.
	if err := s.AddRoomMember(ctx, "web", "den", bob, cat); err != nil {
		t.Errorf("invite by an invited member: %v", err)
	}

	// No such room.
	if _, err := s.Room(ctx, "web", "nowhere", ann); !errors.Is(err, gateway.ErrUnknownChat) {
		t.Errorf("room nowhere: %v; want ErrUnknownChat", err)
	}
	// Rooms of two platforms are two rooms.
	if _, err := s.Room(ctx, "cli", "den", ann); !errors.Is(err, gateway.ErrUnknownChat) {
		t.Errorf("room den on the cli: %v; want ErrUnknownChat", err)
	}

	// Membership survives a restart.
	s = f.Reopen(t, s)
	wantRoom(t, s, "den", cat, gateway.Room{Bots: []string{"matty"}, Member: true})
	wantRoom(t, s, "den", person("web-dan"), gateway.Room{Bots: []string{"matty"}})
}

// testRoomPersons: a membership is a person's, recorded under any of
// their IDs.
func testRoomPersons(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	bryan := gateway.Person{ID: "user-bryan", Identities: []string{"web-bryan", "telegram-1"}}
	if _, err := s.JoinRoom(ctx, "web", "den", person("web-ann"), gateway.NewRoom{Bots: []string{"matty"}}); err != nil {
		t.Fatal(err)
	}
	// Invited under a platform ID before users.yaml listed it.
	if err := s.AddRoomMember(ctx, "web", "den", person("web-ann"), person("web-bryan")); err != nil {
		t.Fatal(err)
	}
	wantRoom(t, s, "den", bryan, gateway.Room{Bots: []string{"matty"}, Member: true})
	if r, err := s.JoinRoom(ctx, "web", "den", bryan, gateway.NewRoom{}); err != nil || !r.Member {
		t.Errorf("join by the listed person = %+v, %v", r, err)
	}
	// The listed person invites under their master ID.
	if err := s.AddRoomMember(ctx, "web", "den", bryan, gateway.Person{ID: "user-cat", Identities: []string{"web-cat"}}); err != nil {
		t.Fatal(err)
	}
	wantRoom(t, s, "den", gateway.Person{ID: "user-cat"}, gateway.Room{Bots: []string{"matty"}, Member: true})
	// Another person whose identities do not include the member's is not one.
	wantRoom(t, s, "den", gateway.Person{ID: "user-dan", Identities: []string{"web-dan"}}, gateway.Room{Bots: []string{"matty"}})
}

// testOpenRooms: anyone joins an open room, and joining makes them a
// member; a platform's own group is no room.
func testOpenRooms(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	if _, err := s.JoinRoom(ctx, "web", "square", person("web-ann"), gateway.NewRoom{Bots: []string{"matty"}, Open: true}); err != nil {
		t.Fatal(err)
	}
	wantRoom(t, s, "square", person("web-bob"), gateway.Room{Bots: []string{"matty"}, Open: true})
	if err := s.AddRoomMember(ctx, "web", "square", person("web-bob"), person("web-cat")); !errors.Is(err, gateway.ErrNotAllowed) {
		t.Errorf("invite by a non-member of an open room: %v; want ErrNotAllowed", err)
	}
	if r, err := s.JoinRoom(ctx, "web", "square", person("web-bob"), gateway.NewRoom{Bots: []string{"finn"}}); err != nil ||
		!r.Member || !r.Open || !slices.Equal(r.Bots, []string{"matty"}) {
		t.Errorf("join of an open room = %+v, %v", r, err)
	}
	wantRoom(t, s, "square", person("web-bob"), gateway.Room{Bots: []string{"matty"}, Open: true, Member: true})
	if err := s.AddRoomMember(ctx, "web", "square", person("web-bob"), person("web-cat")); err != nil {
		t.Errorf("invite by a joiner of an open room: %v", err)
	}

	// A Telegram group is its platform's: no room calls reach it.
	in := group("-100", "ann", "t1", "hi")
	in.Message.Platform, in.Message.Bot = "telegram", "matty"
	appendInbound(t, s, in)
	tgAnn := person("telegram-ann")
	if _, err := s.Room(ctx, "telegram", "-100", tgAnn); !errors.Is(err, gateway.ErrNotAllowed) {
		t.Errorf("room of a telegram group: %v; want ErrNotAllowed", err)
	}
	if _, err := s.JoinRoom(ctx, "telegram", "-100", tgAnn, gateway.NewRoom{Open: true}); !errors.Is(err, gateway.ErrNotAllowed) {
		t.Errorf("join of a telegram group: %v; want ErrNotAllowed", err)
	}
	if err := s.AddRoomMember(ctx, "telegram", "-100", tgAnn, person("telegram-bob")); !errors.Is(err, gateway.ErrNotAllowed) {
		t.Errorf("invite into a telegram group: %v; want ErrNotAllowed", err)
	}
	if msgs, err := s.ChatMessages(ctx, "telegram", "-100", 10); err != nil || !slices.Equal(texts(msgs), []string{"hi"}) {
		t.Errorf("telegram group messages = %q, %v", texts(msgs), err)
	}
}

// wantRoom checks how p sees a web room.
func wantRoom(t *testing.T, s Store, room string, p gateway.Person, want gateway.Room) {
	t.Helper()
	got, err := s.Room(context.Background(), "web", room, p)
	if err != nil || got.Open != want.Open || got.Member != want.Member || !slices.Equal(got.Bots, want.Bots) {
		t.Errorf("room %s as %s = %+v, %v; want %+v", room, p.ID, got, err, want)
	}
}
