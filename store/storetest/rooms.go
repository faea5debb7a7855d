package storetest

import (
	"context"
	"slices"
	"testing"
)

// testRooms: a room is made with its bots on first join; later joins add
// members and keep the bots.
func testRooms(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	bots, err := s.EnsureRoom(ctx, "web", "lobby", "web-ann", []string{"matty", "finn"})
	if err != nil || !slices.Equal(bots, []string{"matty", "finn"}) {
		t.Fatalf("create room = %v, %v", bots, err)
	}
	bots, err = s.EnsureRoom(ctx, "web", "lobby", "web-bob", []string{"priest"})
	if err != nil || !slices.Equal(bots, []string{"matty", "finn"}) {
		t.Errorf("join room = %v, %v; want its bots kept", bots, err)
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
