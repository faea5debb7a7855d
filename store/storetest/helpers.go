package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/sessions"
)

// clock gives each message a later time than the one before, at whole
// microseconds (what stores keep).
var clock atomic.Int64

func init() { clock.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMicro()) }

func now() time.Time { return time.UnixMicro(clock.Add(1000)).UTC() }

// userKey is bot's session with user.
func userKey(bot, user string) sessions.Key {
	return sessions.Key{Bot: bot, Scope: sessions.ScopeUser, ScopeID: user}
}

// private is a person's message to bot in their private web chat, asking
// for bot's answer.
func private(user, bot, msgID, text string) gateway.Inbound {
	return gateway.Inbound{
		Message: chat.Message{
			Platform: "web", ChatID: "web-" + user + ":" + bot, ChatType: chat.Private, PlatformMsgID: msgID,
			Kind: chat.KindChat, From: chat.Party{Kind: chat.Human, ID: "web-" + user, Name: user},
			UserID: user, Bot: bot, Text: text, Time: now(),
		},
		Turns: []sessions.Request{{Session: userKey(bot, user), Text: text}},
	}
}

// group is a person's message in a web room, asking for the answers of
// bots, in order.
func group(room, user, msgID, text string, bots ...string) gateway.Inbound {
	in := gateway.Inbound{
		Message: chat.Message{
			Platform: "web", ChatID: room, ChatType: chat.Group, PlatformMsgID: msgID,
			Kind: chat.KindChat, From: chat.Party{Kind: chat.Human, ID: "web-" + user, Name: user},
			UserID: user, Text: text, Time: now(),
		},
		ChatName: room,
	}
	for _, b := range bots {
		in.Turns = append(in.Turns, sessions.Request{Session: userKey(b, user), Text: text})
	}
	return in
}

func appendInbound(t *testing.T, s Store, in gateway.Inbound) gateway.InboundResult {
	t.Helper()
	res, err := s.AppendInbound(context.Background(), in)
	if err != nil {
		t.Fatalf("append %q: %v", in.Message.Text, err)
	}
	return res
}

// nextTurn loads the session's next turn, which must exist.
func nextTurn(t *testing.T, s Store, session string) sessions.Turn {
	t.Helper()
	turn, ok, err := s.NextTurn(context.Background(), session, 20)
	if err != nil || !ok {
		t.Fatalf("next turn of %s: %v, %v", session, ok, err)
	}
	return turn
}

// noTurn checks that the session has no turn left.
func noTurn(t *testing.T, s Store, session string) {
	t.Helper()
	turn, ok, err := s.NextTurn(context.Background(), session, 20)
	if err != nil || ok {
		t.Fatalf("next turn of %s = %+v, %v, %v; want none", session, turn.Ref, ok, err)
	}
}

// reply is the outcome of a bot answering turn with text in its chat.
func reply(turn sessions.Turn, text string) sessions.Outcome {
	m := turn.Message
	return sessions.Outcome{Turn: turn.Ref, Posts: []sessions.Post{{Session: turn.Ref.SessionID, Message: chat.Message{
		Platform: m.Platform, ChatID: m.ChatID, ChatType: m.ChatType, Kind: chat.KindChat,
		From:   chat.Party{Kind: chat.Bot, ID: turn.Session.Key.Bot, Name: turn.Session.Key.Bot},
		UserID: m.UserID, Bot: turn.Session.Key.Bot, Text: text, ReplyTo: m.PlatformMsgID, Time: now(),
	}}}}
}

func complete(t *testing.T, s Store, o sessions.Outcome) sessions.Done {
	t.Helper()
	done, err := s.CompleteTurn(context.Background(), o)
	if err != nil {
		t.Fatalf("complete turn %d: %v", o.Turn.ID, err)
	}
	return done
}

// texts lists the messages' texts.
func texts(msgs []chat.Message) []string {
	out := []string{}
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

func msgID(i int) string { return fmt.Sprint("m", i) }
