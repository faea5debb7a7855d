package telegramtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
)

const token = "42:test"

var alice = telegramtest.User{ID: 7, FirstName: "Alice"}

// reply is the Bot API envelope as a client reads it.
type reply struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

func call(t *testing.T, s *telegramtest.Server, tok, method, contentType, body string) (int, reply) {
	t.Helper()
	resp, err := http.Post(s.URL+"/bot"+tok+"/"+method, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r reply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return resp.StatusCode, r
}

// TestWire checks the fake's envelope and body encodings with plain HTTP.
func TestWire(t *testing.T) {
	s := telegramtest.New(t)
	s.AddBot(token, 42, "fake_bot")
	s.AddChat(token, telegramtest.PrivateChat(alice))
	form := url.Values{"chat_id": {"7"}, "text": {"by form"}}.Encode()
	tests := []struct {
		name, tok, method, ct, body string
		status                      int
		desc                        string
	}{
		{"json body", token, "sendMessage", "application/json", `{"chat_id":7,"text":"by json","reply_parameters":{"message_id":99,"allow_sending_without_reply":true}}`, 200, ""},
		{"urlencoded body", token, "sendMessage", "application/x-www-form-urlencoded", form, 200, ""},
		{"missing reply", token, "sendMessage", "application/json", `{"chat_id":7,"text":"x","reply_parameters":{"message_id":99}}`, 400, "Bad Request: message to be replied not found"},
		{"unknown chat", token, "sendMessage", "application/json", `{"chat_id":8,"text":"x"}`, 400, "Bad Request: chat not found"},
		{"too long", token, "sendMessage", "application/json", `{"chat_id":7,"text":"` + strings.Repeat("🎉", 2049) + `"}`, 400, "Bad Request: message is too long"},
		{"unknown method", token, "sendDice", "application/json", `{}`, 404, "Not Found: method not found"},
		{"unknown token", "1:nope", "getMe", "application/json", `{}`, 401, "Unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, r := call(t, s, tt.tok, tt.method, tt.ct, tt.body)
			if status != tt.status || r.OK != (tt.status == 200) || (tt.status != 200 && (r.ErrorCode != tt.status || r.Description != tt.desc)) {
				t.Fatalf("status %d, %+v", status, r)
			}
		})
	}
	if sent := s.Sent(token); len(sent) != 2 || sent[0].Text != "by json" || sent[1].Text != "by form" {
		t.Fatalf("sent %+v", sent)
	}

	s.Fail("getMe", 1, 429, 3)
	if status, r := call(t, s, token, "getMe", "application/json", ""); status != 429 || r.Parameters.RetryAfter != 3 {
		t.Fatalf("429: %d %+v", status, r)
	}
}

// TestGetUpdates checks long polling with confirm-by-offset and the 409s.
func TestGetUpdates(t *testing.T) {
	s := telegramtest.New(t)
	s.AddBot(token, 42, "fake_bot")
	first := s.Push(token, telegramtest.Private(alice, "one"))
	s.Push(token, telegramtest.Private(alice, "two"))

	get := func(body string) []telegramtest.Update {
		t.Helper()
		status, r := call(t, s, token, "getUpdates", "application/json", body)
		if status != 200 {
			t.Fatalf("getUpdates: %d %+v", status, r)
		}
		var ups []telegramtest.Update
		json.Unmarshal(r.Result, &ups)
		return ups
	}
	if ups := get(`{"limit":1}`); len(ups) != 1 || ups[0].UpdateID != first.UpdateID {
		t.Fatalf("limit 1: %+v", ups)
	}
	if ups := get(`{}`); len(ups) != 2 {
		t.Fatalf("unconfirmed updates are answered again: %+v", ups)
	}
	if ups := get(`{"offset":` + itoa(first.UpdateID+1) + `}`); len(ups) != 1 || ups[0].Message.Text != "two" {
		t.Fatalf("after confirming the first: %+v", ups)
	}
	if s.Pending(token) != 1 {
		t.Fatalf("pending %d", s.Pending(token))
	}

	// A waiting poll gets a pushed update at once.
	done := make(chan []telegramtest.Update)
	go func() {
		resp, err := http.Post(s.URL+"/bot"+token+"/getUpdates", "application/json", strings.NewReader(`{"offset":`+itoa(first.UpdateID+2)+`,"timeout":5}`))
		if err != nil {
			done <- nil
			return
		}
		defer resp.Body.Close()
		var r reply
		json.NewDecoder(resp.Body).Decode(&r)
		var ups []telegramtest.Update
		json.Unmarshal(r.Result, &ups)
		done <- ups
	}()
	s.WaitFor(2*time.Second, func() bool { return s.Polling(token) })
	s.Push(token, telegramtest.Private(alice, "three"))
	select {
	case ups := <-done:
		if len(ups) != 1 || ups[0].Message.Text != "three" {
			t.Fatalf("long poll: %+v", ups)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("long poll not woken")
	}

	// With a webhook set, polling is a conflict.
	call(t, s, token, "setWebhook", "application/json", `{"url":"https://example.test/hook","secret_token":"abc"}`)
	if status, _ := call(t, s, token, "getUpdates", "application/json", `{}`); status != 409 {
		t.Fatalf("getUpdates with a webhook: %d", status)
	}
}

// TestClientLibrary drives the fake with go-telegram/bot, unmodified but
// for the server URL.
func TestClientLibrary(t *testing.T) {
	s := telegramtest.New(t)
	s.AddBot(token, 42, "fake_bot")
	s.AddChat(token, telegramtest.PrivateChat(alice))
	b, err := bot.New(token, bot.WithServerURL(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: alice.ID, Text: "hi"})
	if err != nil || m.ID == 0 || m.Chat.ID != alice.ID || m.From.Username != "fake_bot" {
		t.Fatalf("sendMessage: %+v, %v", m, err)
	}
	if ok, err := b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: alice.ID, Action: models.ChatActionTyping}); !ok || err != nil {
		t.Fatalf("sendChatAction: %v %v", ok, err)
	}
	s.Fail("sendMessage", 1, 429, 2)
	_, err = b.SendMessage(ctx, &bot.SendMessageParams{ChatID: alice.ID, Text: "hi"})
	var tooMany *bot.TooManyRequestsError
	if !errors.As(err, &tooMany) || tooMany.RetryAfter != 2 {
		t.Fatalf("429: %v", err)
	}
	s.Block(token, alice.ID)
	if _, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: alice.ID, Text: "hi"}); !errors.Is(err, bot.ErrorForbidden) {
		t.Fatalf("blocked: %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
