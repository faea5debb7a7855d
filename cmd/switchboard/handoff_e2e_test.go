package main

import (
	"strings"
	"testing"
)

// messageWhere reads frames until a message frame for which pred holds,
// and returns it.
func (c *client) messageWhere(pred func(map[string]any) bool) map[string]any {
	c.t.Helper()
	for {
		f := c.read()
		if f["type"] == "message" && pred(f) {
			return f
		}
	}
}

// historyOf asks for a chat's history and returns its messages.
func (c *client) historyOf(bot string) []map[string]any {
	c.t.Helper()
	c.send(map[string]any{"type": "history", "bot": bot})
	for {
		f := c.read()
		if f["type"] != "history" {
			continue
		}
		var out []map[string]any
		for _, m := range f["messages"].([]any) {
			out = append(out, m.(map[string]any))
		}
		return out
	}
}

// A failed turn's apology carries failed and the ID of the message it
// answers, live and in history; a retry is a new message and is answered.
func TestFailedTurnOverTheWidget(t *testing.T) {
	m := startMain(t, handoffConfig(t, true))
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "send", "bot": "priest", "text": "review it", "client_id": "1"})
	first := c.expect("ack")["id"]
	apology := c.messageWhere(func(f map[string]any) bool { return f["bot"] == "priest" })
	if apology["failed"] != true || apology["reply_to"] != first {
		t.Errorf("apology = %v; want failed, replying to %v", apology, first)
	}
	c.send(map[string]any{"type": "send", "bot": "priest", "text": "review it", "client_id": "2"})
	second := c.expect("ack")["id"]
	answer := c.messageWhere(func(f map[string]any) bool { return f["bot"] == "priest" })
	if _, ok := answer["failed"]; ok || answer["reply_to"] != second || answer["text"] != "Priest looked: all good" {
		t.Errorf("answer = %v; want no failed, replying to %v", answer, second)
	}

	h := c.historyOf("priest")
	if len(h) != 4 || h[1]["failed"] != true || h[1]["reply_to"] != first || h[3]["failed"] != nil || h[3]["reply_to"] != second {
		t.Errorf("history = %v", h)
	}
	_, list := apiGet(t, m, "/api/v1/sessions?bot=priest", m.AdminToken)
	sessions := items(list)
	if len(sessions) != 1 {
		t.Fatalf("sessions = %v", sessions)
	}
	_, body := apiGet(t, m, "/api/v1/sessions/"+sessions[0]["id"].(string)+"/messages", m.AdminToken)
	if msgs := items(body); len(msgs) != 4 || msgs[1]["failed"] != true || msgs[3]["failed"] != nil {
		t.Errorf("API messages = %v", msgs)
	}
}

// History carries each hand-off message's delegation in its status now.
func TestHistoryDelegationsOverTheWidget(t *testing.T) {
	m := startMain(t, handoffConfig(t, false))
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "Tell Finn Shipley to build the login page", "client_id": "1"})
	c.expect("ack")
	// The done status and the notice, in either order.
	for done, notice := false, false; !done || !notice; {
		f := c.read()
		text, _ := f["text"].(string)
		done = done || f["type"] == "delegation" && f["status"] == "done"
		notice = notice || f["type"] == "message" && strings.HasPrefix(text, "Finn Shipley finished:")
	}

	for bot, want := range map[string]int{"mattyatlas": 2, "finnshipley": 1} {
		var tagged int
		for _, msg := range c.historyOf(bot) {
			d, ok := msg["delegation"].(map[string]any)
			if !ok {
				continue
			}
			tagged++
			if d["status"] != "done" || d["from_bot"] != "mattyatlas" || d["to_bot"] != "finnshipley" || d["task"] != "build the login page" {
				t.Errorf("%s: %q carries %v", bot, msg["text"], d)
			}
		}
		if tagged != want {
			t.Errorf("%s's history has %d tagged messages, want %d", bot, tagged, want)
		}
	}
}
