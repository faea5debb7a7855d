package storetest

import (
	"context"
	"testing"

	"github.com/switchboard-chat/switchboard/gateway"
)

// testConversations: a person's conversations on a platform are the
// rooms they are a member of and their own private chats there, newest
// message first, the silent ones last; nobody else's, and no other
// platform's.
func testConversations(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	ann := gateway.Person{ID: "user-ann", Identities: []string{"web-ann", "telegram-1"}}

	appendInbound(t, s, private("ann", "matty", "1", "hello matty"))
	appendInbound(t, s, private("bob", "matty", "2", "bob's own"))
	// An ID that shares ann's prefix is someone else.
	appendInbound(t, s, private("ann_x", "finn", "3", "not ann"))
	if _, err := s.JoinRoom(ctx, "web", "den", person("web-ann"), gateway.NewRoom{Bots: []string{"finn", "matty"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JoinRoom(ctx, "web", "quiet", person("web-ann"), gateway.NewRoom{Bots: []string{"priest"}, Open: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JoinRoom(ctx, "web", "elsewhere", person("web-bob"), gateway.NewRoom{Bots: []string{"finn"}}); err != nil {
		t.Fatal(err)
	}
	appendInbound(t, s, inRoom("den", "web-ann", "ann", "4", "@finn later", "finn"))

	list, err := s.Conversations(ctx, "web", ann)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range list {
		got = append(got, c.ID)
	}
	want := []string{"den", "web-ann:matty", "quiet"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("conversations = %q, want %q", got, want)
	}
	den, chat, quiet := list[0], list[1], list[2]
	if !den.Group || den.Open || len(den.Bots) != 2 || den.Bots[0] != "finn" || den.LastMessageAt.IsZero() {
		t.Errorf("den = %+v", den)
	}
	if chat.Group || len(chat.Bots) != 1 || chat.Bots[0] != "matty" || chat.Platform != "web" {
		t.Errorf("private chat = %+v", chat)
	}
	if !quiet.Open || !quiet.LastMessageAt.IsZero() {
		t.Errorf("quiet room = %+v", quiet)
	}
	if other, err := s.Conversations(ctx, "cli", ann); err != nil || len(other) != 0 {
		t.Errorf("on cli: %+v, %v", other, err)
	}
}
