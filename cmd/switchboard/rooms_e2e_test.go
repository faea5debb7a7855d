package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/platforms/web"
)

// refusedWith reads c's next frame, which must be an error with code
// naming clientID.
func (c *client) refusedWith(code, clientID string) {
	c.t.Helper()
	f := c.expect("error")
	if f["code"] != code || f["client_id"] != clientID || f["message"] == "" {
		c.t.Fatalf("error = %v; want %s for %s", f, code, clientID)
	}
}

// nothingPending checks that no frame is waiting for c: the answer to a
// history request comes first.
func (c *client) nothingPending() {
	c.t.Helper()
	c.send(map[string]any{"type": "history", "bot": "mattyatlas", "limit": 1})
	c.expect("history")
}

// Room membership through /ws (SPEC §12): a closed room refuses a
// stranger's join, send, history and invite with not_allowed and shows
// them none of its traffic; a member's invite lets them in.
func TestRoomMembershipOverWebSocket(t *testing.T) {
	m := startMain(t, configDir(t))
	ann := dial(t, m.Addr(), nil)
	bob := dial(t, m.Addr(), nil)
	bobID := bob.hello["platform_id"].(string)

	ann.send(map[string]any{"type": "join", "chat": "den", "bots": []string{"mattyatlas"}, "client_id": "j1"})
	if j := ann.expect("joined"); j["chat"] != "den" || len(j["bots"].([]any)) != 1 {
		t.Fatalf("joined = %v", j)
	}
	ann.send(map[string]any{"type": "send", "chat": "den", "text": "@matty the plan", "client_id": "s1"})
	ann.expect("ack")
	ann.expect("message")

	bob.send(map[string]any{"type": "join", "chat": "den", "client_id": "j1"})
	bob.refusedWith("not_allowed", "j1")
	bob.send(map[string]any{"type": "send", "chat": "den", "text": "@matty the plan?", "client_id": "s1"})
	bob.refusedWith("not_allowed", "s1")
	bob.send(map[string]any{"type": "history", "chat": "den", "client_id": "h1"})
	bob.refusedWith("not_allowed", "h1")
	bob.send(map[string]any{"type": "invite", "chat": "den", "user": bobID, "client_id": "i1"})
	bob.refusedWith("not_allowed", "i1")
	// Nor does the room's live traffic reach the stranger.
	ann.send(map[string]any{"type": "send", "chat": "den", "text": "still private", "client_id": "s2"})
	ann.expect("ack")
	bob.nothingPending()

	// Unknown rooms and bad names.
	bob.send(map[string]any{"type": "history", "chat": "nowhere", "client_id": "h2"})
	bob.refusedWith("unknown_chat", "h2")
	bob.send(map[string]any{"type": "join", "chat": "evil\u202etxt", "client_id": "j2"})
	bob.refusedWith("bad_request", "j2")
	ann.send(map[string]any{"type": "invite", "chat": "den", "user": "nobody at all", "client_id": "i2"})
	ann.refusedWith("bad_request", "i2")

	// Ann invites Bob; he joins, reads, writes, and sees the traffic.
	ann.send(map[string]any{"type": "invite", "chat": "den", "user": bobID, "client_id": "i3"})
	if f := ann.expect("invited"); f["chat"] != "den" || f["user"] != bobID {
		t.Fatalf("invited = %v", f)
	}
	bob.send(map[string]any{"type": "join", "chat": "den", "bots": []string{"finnshipley"}})
	if j := bob.expect("joined"); len(j["bots"].([]any)) != 1 || j["bots"].([]any)[0].(map[string]any)["id"] != "mattyatlas" {
		t.Fatalf("joined = %v; want the room's own bot", j)
	}
	bob.send(map[string]any{"type": "history", "chat": "den"})
	if msgs := bob.expect("history")["messages"].([]any); len(msgs) != 3 {
		t.Errorf("history = %v; want the plan, its reply, still private", msgs)
	}
	bob.send(map[string]any{"type": "send", "chat": "den", "text": "thanks", "client_id": "s3"})
	bob.expect("ack")
	if f := ann.expect("message"); f["text"] != "thanks" {
		t.Errorf("ann got %v", f)
	}
}

// An open room lets anyone in; membership follows the person, whatever
// identity they come from.
func TestOpenRoomsAndPersons(t *testing.T) {
	t.Setenv("SB_TEST_WEB_SECRET", "top-secret")
	m := startMain(t, configDir(t))
	ann := dial(t, m.Addr(), nil)
	bob := dial(t, m.Addr(), nil)

	ann.send(map[string]any{"type": "join", "chat": "square", "open": true})
	ann.expect("joined")
	bob.send(map[string]any{"type": "join", "chat": "square"})
	bob.expect("joined")

	// Invited by master user ID, Bryan (web-bryan in users.yaml) joins.
	ann.send(map[string]any{"type": "join", "chat": "den"})
	ann.expect("joined")
	bryan := dial(t, m.Addr(), url.Values{"user": {"bryan"}, "sig": {web.Sign([]byte("top-secret"), "bryan")}})
	bryan.send(map[string]any{"type": "join", "chat": "den", "client_id": "j1"})
	bryan.refusedWith("not_allowed", "j1")
	ann.send(map[string]any{"type": "invite", "chat": "den", "user": "user-bryan"})
	ann.expect("invited")
	bryan.send(map[string]any{"type": "join", "chat": "den"})
	bryan.expect("joined")
	// A second tab of his joins too: membership is the person's.
	tab := dial(t, m.Addr(), url.Values{"user": {"bryan"}, "sig": {web.Sign([]byte("top-secret"), "bryan")}})
	tab.send(map[string]any{"type": "join", "chat": "den"})
	tab.expect("joined")
}

// Another visitor's private chat can never be read, by any frame.
func TestPrivateChatsOverWebSocket(t *testing.T) {
	m := startMain(t, configDir(t))
	ann := dial(t, m.Addr(), nil)
	bob := dial(t, m.Addr(), nil)
	annChat := ann.hello["platform_id"].(string) + ":mattyatlas"
	ann.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "my secret plan", "client_id": "1"})
	ann.expect("ack")
	ann.expect("message")

	for i, f := range []map[string]any{
		{"type": "join", "chat": annChat},
		{"type": "join", "chat": annChat, "open": true},
		{"type": "send", "chat": annChat, "text": "@matty what did she say?"},
		{"type": "history", "chat": annChat},
		{"type": "invite", "chat": annChat, "user": bob.hello["platform_id"]},
	} {
		f["client_id"] = string(rune('a' + i))
		bob.send(f)
		bob.refusedWith("not_allowed", f["client_id"].(string))
	}
	// History by bot is Bob's own session.
	bob.send(map[string]any{"type": "history", "bot": "mattyatlas"})
	h := bob.expect("history")
	if h["chat"] != bob.hello["platform_id"].(string)+":mattyatlas" {
		t.Errorf("history chat = %v", h["chat"])
	}
	for _, msg := range h["messages"].([]any) {
		if strings.Contains(msg.(map[string]any)["text"].(string), "secret") {
			t.Errorf("bob read %v", msg)
		}
	}
	// Ann's own private chat is reached by its bot, not as a room.
	ann.send(map[string]any{"type": "history", "chat": annChat, "client_id": "own"})
	ann.refusedWith("bad_request", "own")
	bob.nothingPending()
}
