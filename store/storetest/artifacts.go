package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/sessions"
)

// artifactIDs lists the artifacts' IDs, checking that none carries its
// content (messages and entries describe them only).
func artifactIDs(t *testing.T, arts []chat.Artifact) []string {
	t.Helper()
	out := []string{}
	for _, a := range arts {
		if a.Content != nil {
			t.Errorf("artifact %s carries its content", a.ID)
		}
		out = append(out, a.ID)
	}
	return out
}

// shownWith returns the artifacts the message whose text is text shows,
// among msgs.
func shownWith(t *testing.T, msgs []chat.Message, text string) []string {
	t.Helper()
	for _, m := range msgs {
		if m.Text == text {
			return artifactIDs(t, m.Artifacts)
		}
	}
	t.Fatalf("no message %q among %q", text, texts(msgs))
	return nil
}

// testArtifactsShown: a turn's artifacts are shown with its first post,
// in the order made, described without content, in the outbox entry,
// the pending outbox, the session's messages and the chat's; another
// post shows them only when it asks to.
func testArtifactsShown(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)

	// A reply with two artifacts and a note after it.
	res := appendInbound(t, s, private("ann", "matty", msgID(1), "the checklist, please"))
	o := reply(nextTurn(t, s, res.Turns[0].SessionID), "here it is")
	note := o.Posts[0]
	note.Message.Text = "and a note"
	o.Posts = append(o.Posts, note)
	b := artifact("art-b", "matty")
	b.Name, b.MediaType = "checklist.md", "text/markdown"
	o.Artifacts = []chat.Artifact{b, artifact("art-a", "matty")}
	done := complete(t, s, o)
	if len(done.Outbox) != 2 {
		t.Fatalf("outbox = %+v", done.Outbox)
	}
	if got := artifactIDs(t, done.Outbox[0].Artifacts); !slices.Equal(got, []string{"art-b", "art-a"}) {
		t.Errorf("reply's entry shows %v, want [art-b art-a]", got)
	}
	if a := done.Outbox[0].Artifacts[0]; a.Name != "checklist.md" || a.MediaType != "text/markdown" || a.Size != 2 ||
		a.SHA256 != b.SHA256 || a.Producer != "matty" {
		t.Errorf("described artifact = %+v", a)
	}
	if got := done.Outbox[1].Artifacts; len(got) != 0 {
		t.Errorf("the note's entry shows %+v, want none", got)
	}
	pending, err := s.PendingOutbox(ctx)
	if err != nil || len(pending) != 2 {
		t.Fatalf("pending = %+v, %v", pending, err)
	}
	if got := artifactIDs(t, pending[0].Artifacts); !slices.Equal(got, []string{"art-b", "art-a"}) {
		t.Errorf("pending reply shows %v", got)
	}
	if len(pending[1].Artifacts) != 0 {
		t.Errorf("pending note shows %+v", pending[1].Artifacts)
	}
	msgs, err := s.SessionMessages(ctx, res.Turns[0].SessionID, chat.KindChat, 50)
	if err != nil {
		t.Fatal(err)
	}
	if got := shownWith(t, msgs, "here it is"); !slices.Equal(got, []string{"art-b", "art-a"}) {
		t.Errorf("session's reply shows %v", got)
	}
	if got := shownWith(t, msgs, "the checklist, please"); len(got) != 0 {
		t.Errorf("the person's message shows %v", got)
	}
	if arts, err := s.Artifacts(ctx, []string{"art-b"}); err != nil || string(arts[0].Content) != "hi" {
		t.Errorf("content = %+v, %v", arts, err)
	}

	// In a room; the second post asks to show them too.
	res = appendInbound(t, s, group("den", "ann", msgID(2), "@matty plan it", "matty"))
	o = reply(nextTurn(t, s, res.Turns[0].SessionID), "planned")
	notice := sessions.Post{Session: o.Posts[0].Session, ShowsArtifacts: true, Message: o.Posts[0].Message}
	notice.Message.Platform, notice.Message.ChatID, notice.Message.ChatType = "web", "web-ann:matty", chat.Private
	notice.Message.Text = "matty finished"
	o.Posts = append(o.Posts, notice)
	o.Artifacts = []chat.Artifact{artifact("art-c", "matty")}
	done = complete(t, s, o)
	for i, e := range done.Outbox {
		if got := artifactIDs(t, e.Artifacts); !slices.Equal(got, []string{"art-c"}) {
			t.Errorf("entry %d shows %v, want [art-c]", i, got)
		}
	}
	room, err := s.ChatMessages(ctx, "web", "den", 50)
	if err != nil {
		t.Fatal(err)
	}
	if got := shownWith(t, room, "planned"); !slices.Equal(got, []string{"art-c"}) {
		t.Errorf("room's reply shows %v", got)
	}
	asker, err := s.SessionMessages(ctx, res.Turns[0].SessionID, "", 50)
	if err != nil {
		t.Fatal(err)
	}
	if got := shownWith(t, asker, "matty finished"); !slices.Equal(got, []string{"art-c"}) {
		t.Errorf("notice shows %v", got)
	}

	// A turn with artifacts and no post stores them, shown nowhere.
	res = appendInbound(t, s, private("ann", "matty", msgID(3), "quietly"))
	o = sessions.Outcome{Turn: res.Turns[0], Artifacts: []chat.Artifact{artifact("art-d", "matty")}}
	complete(t, s, o)
	if _, err := s.Artifacts(ctx, []string{"art-d"}); err != nil {
		t.Errorf("an artifact with no post: %v", err)
	}
	if f.Check != nil {
		f.Check(t, s)
	}
}

// testArtifactHolders: an artifact is held by the people its messages
// answer, the group chats they are in and the person its hand-off
// worked for; an unknown one is not found.
func testArtifactHolders(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)

	res := appendInbound(t, s, private("ann", "matty", msgID(1), "make it"))
	o := reply(nextTurn(t, s, res.Turns[0].SessionID), "made")
	o.Artifacts = []chat.Artifact{artifact("art-private", "matty")}
	complete(t, s, o)
	holders(t, s, "art-private", gateway.ArtifactHolders{People: []string{"ann"}})

	res = appendInbound(t, s, group("den", "bob", msgID(2), "@matty draw it", "matty"))
	o = reply(nextTurn(t, s, res.Turns[0].SessionID), "drawn")
	o.Artifacts = []chat.Artifact{artifact("art-room", "matty")}
	complete(t, s, o)
	holders(t, s, "art-room", gateway.ArtifactHolders{
		People: []string{"bob"}, Chats: []chat.Ref{{Platform: "web", ID: "den", Type: chat.Group}}})

	// A hand-off's artifact, shown with finn's reply to ann and with
	// matty's notice in the room it came from.
	res = appendInbound(t, s, group("den", "ann", msgID(3), "@matty tell finn to build it", "matty"))
	asked := nextTurn(t, s, res.Turns[0].SessionID)
	h := handoff("dlg-1", "build it", &asked)
	done := complete(t, s, sessions.Outcome{Turn: asked.Ref, Handoffs: []sessions.Handoff{h}})
	turn := nextTurn(t, s, done.Turns[0].SessionID)
	o = reply(turn, "built")
	post := &o.Posts[0].Message
	post.Platform, post.ChatID, post.ChatType, post.DelegationID = "web", "web-ann:finn", chat.Private, "dlg-1"
	notice := sessions.Post{Session: asked.Ref.SessionID, ShowsArtifacts: true, Message: chat.Message{
		Platform: "web", ChatID: "den", ChatType: chat.Group, Kind: chat.KindChat,
		From: chat.Party{Kind: chat.Bot, ID: "matty", Name: "matty"}, UserID: "ann", Bot: "matty",
		Text: "finn finished", Time: now(), DelegationID: "dlg-1",
	}}
	o.Posts = append(o.Posts, notice)
	o.Artifacts = []chat.Artifact{artifact("art-dlg", "finn")}
	o.Update = &delegation.Update{ID: "dlg-1", Status: delegation.StatusDone, Result: "built"}
	complete(t, s, o)
	holders(t, s, "art-dlg", gateway.ArtifactHolders{
		People: []string{"ann"}, Chats: []chat.Ref{{Platform: "web", ID: "den", Type: chat.Group}}})

	// An artifact shown nowhere is held by its hand-off's person alone.
	api := handoff("dlg-2", "write it", nil)
	api.Record.UserID = "cy"
	api.Target = userKey("finn", "cy")
	asking := userKey("matty", "cy")
	api.FromSession = &asking
	turns, err := s.StartDelegations(ctx, []sessions.Handoff{api})
	if err != nil {
		t.Fatal(err)
	}
	turn = nextTurn(t, s, turns[0].SessionID)
	complete(t, s, sessions.Outcome{Turn: turn.Ref, Artifacts: []chat.Artifact{artifact("art-api", "finn")},
		Update: &delegation.Update{ID: "dlg-2", Status: delegation.StatusDone}})
	holders(t, s, "art-api", gateway.ArtifactHolders{People: []string{"cy"}})

	if _, err := s.ArtifactHolders(ctx, "art-none"); !isNotFound(err, delegation.ErrNotFound) {
		t.Errorf("an unknown artifact: %v, want ErrNotFound", err)
	}
}

// holders checks who holds artifact id, in any order.
func holders(t *testing.T, s Store, id string, want gateway.ArtifactHolders) {
	t.Helper()
	got, err := s.ArtifactHolders(context.Background(), id)
	if err != nil {
		t.Fatalf("holders of %s: %v", id, err)
	}
	slices.Sort(got.People)
	slices.Sort(want.People)
	if !slices.Equal(got.People, want.People) || !slices.Equal(got.Chats, want.Chats) {
		t.Errorf("holders of %s = %+v, want %+v", id, got, want)
	}
}
