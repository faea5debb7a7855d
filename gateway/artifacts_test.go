package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/identity"
	"github.com/switchboard-chat/switchboard/outbox"
)

// drafter answers "draw …" with plan.md holding the request, and
// anything else with an echo.
var drafter = brainFunc(func(_ context.Context, t brains.Turn) (brains.Reply, error) {
	if !strings.Contains(t.Text, "draw") {
		return brains.Reply{Text: t.Bot.ID + ": " + t.Text}, nil
	}
	return brains.Reply{Text: "drawn", Artifacts: []brains.Artifact{
		{Name: "plan.md", MediaType: "text/markdown", Content: []byte("# " + t.Text)},
	}}, nil
})

// shown returns the one artifact entry e shows.
func shown(t *testing.T, e outbox.Entry) chat.Artifact {
	t.Helper()
	if len(e.Artifacts) != 1 || e.Artifacts[0].Name != "plan.md" || e.Artifacts[0].Content != nil || e.Artifacts[0].ID == "" {
		t.Fatalf("%q shows %+v, want plan.md described", e.Text, e.Artifacts)
	}
	return e.Artifacts[0]
}

// readable checks whether platformID may read artifact id.
func readable(t *testing.T, h *harness, id, platformID string, want bool) {
	t.Helper()
	a, err := h.gw.Artifact(context.Background(), id, platformID)
	switch {
	case want && err != nil:
		t.Errorf("%s reading %s: %v", platformID, id, err)
	case want && !strings.HasPrefix(string(a.Content), "# "):
		t.Errorf("%s read %s as %q", platformID, id, a.Content)
	case !want && !errors.Is(err, gateway.ErrUnknownArtifact):
		t.Errorf("%s reading %s: %v, want ErrUnknownArtifact", platformID, id, err)
	}
}

// TestArtifactReaders: a private reply's artifact is its person's, from
// any of their identities; a room's is its members' (anyone's in an
// open room); nobody else's, and to them it is as unknown as one that
// does not exist.
func TestArtifactReaders(t *testing.T) {
	h := newHarness(t, bot("matty", drafter))
	h.gw.SetDirectory(directory(t, identity.User{ID: "user-ann", Name: "Ann", Identities: []string{"web-ann", "telegram-1"}}))

	h.deliver(private("web-ann", "matty", "1", "draw the plan"))
	a := shown(t, h.plat.next(t))
	readable(t, h, a.ID, "web-ann", true)
	readable(t, h, a.ID, "telegram-1", true)
	readable(t, h, a.ID, "web-bob", false)
	readable(t, h, "art-none", "web-ann", false)
	readable(t, h, "", "web-ann", false)

	// A closed room: its members only, until an invite.
	ctx := context.Background()
	if _, err := h.gw.JoinRoom(ctx, gateway.RoomJoin{Platform: "web", Room: "den", PlatformID: "web-ann"}); err != nil {
		t.Fatal(err)
	}
	ev := roomEvent("web-ann", "2", "@matty draw the room")
	ev.ChatID = "den"
	h.deliver(ev)
	room := shown(t, h.plat.next(t))
	readable(t, h, room.ID, "web-ann", true)
	readable(t, h, room.ID, "web-bob", false)
	if err := h.gw.InviteToRoom(ctx, "web", "den", "web-ann", "web-bob"); err != nil {
		t.Fatal(err)
	}
	readable(t, h, room.ID, "web-bob", true)
	readable(t, h, room.ID, "web-cy", false)

	// An open room: anyone who may read it.
	h.openRoom("lobby")
	h.deliver(roomEvent("web-ann", "3", "@matty draw the lobby"))
	lobby := shown(t, h.plat.next(t))
	readable(t, h, lobby.ID, "web-cy", true)
	readable(t, h, a.ID, "web-cy", false)
}

// TestHandOffNoticeShowsArtifacts: what a hand-off makes is shown with
// the target's reply and with the asking bot's notice in the chat the
// hand-off came from, and is the asking person's to read.
func TestHandOffNoticeShowsArtifacts(t *testing.T) {
	h := newHarness(t, dbot("mattyatlas", "Matty Atlas", echo, "finnshipley"), dbot("finnshipley", "Finn Shipley", drafter))
	h.deliver(private("web-ann", "mattyatlas", "1", "Tell Finn Shipley to draw the plan."))
	var ack, notice, reply outbox.Entry
	for range 3 {
		e := h.plat.next(t)
		switch {
		case e.Bot == "finnshipley":
			reply = e
		case ack.Text == "":
			ack = e
		default:
			notice = e
		}
	}
	if len(ack.Artifacts) != 0 {
		t.Errorf("the acknowledgement shows %+v", ack.Artifacts)
	}
	made := shown(t, reply)
	if got := shown(t, notice); got.ID != made.ID || !strings.HasPrefix(notice.Text, "Finn Shipley finished") {
		t.Errorf("notice %q shows %+v, want %+v", notice.Text, got, made)
	}
	readable(t, h, made.ID, "web-ann", true)
	readable(t, h, made.ID, "web-bob", false)

	// History shows them too.
	msgs, err := h.gw.SessionHistory(context.Background(), "mattyatlas", "web-ann", 50)
	if err != nil {
		t.Fatal(err)
	}
	last := msgs[len(msgs)-1]
	if len(last.Artifacts) != 1 || last.Artifacts[0].ID != made.ID {
		t.Errorf("history's last message %q shows %+v", last.Text, last.Artifacts)
	}
}

// TestFilesOnlyReply: a reply that is only files is still a message,
// naming them, that shows them.
func TestFilesOnlyReply(t *testing.T) {
	files := brainFunc(func(_ context.Context, t brains.Turn) (brains.Reply, error) {
		return brains.Reply{Artifacts: []brains.Artifact{
			{Name: "plan.md", MediaType: "text/markdown", Content: []byte("# plan")},
			{Name: "data.json", MediaType: "application/json", Content: []byte("{}")},
		}}, nil
	})
	h := newHarness(t, bot("matty", files))
	h.deliver(private("web-ann", "matty", "1", "files, please"))
	e := h.plat.next(t)
	if e.Text != "Attached: plan.md, data.json" || len(e.Artifacts) != 2 || e.Artifacts[1].Name != "data.json" {
		t.Errorf("reply = %q showing %+v", e.Text, e.Artifacts)
	}
	readable(t, h, e.Artifacts[0].ID, "web-ann", true)
}
