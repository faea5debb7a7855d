package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/brains/openai"
)

// TestFakeModel drives the fake model server with the gateway's own
// openai brain, which asks for a stream, and with a plain JSON request,
// and checks that both answers repeat the last message and that requests
// which are not completions are refused and reported.
func TestFakeModel(t *testing.T) {
	m, err := startModel(20 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()

	t.Run("stream through the openai brain", func(t *testing.T) {
		brain, err := openai.New(openai.Config{
			BaseURL: m.baseURL(), Model: "bench", Timeout: 5 * time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		before := m.read()
		t0 := time.Now()
		r, err := brain.Reply(context.Background(), brains.Turn{
			SessionID: "s1",
			Bot:       brains.Bot{ID: modelBot, Name: "Model Bot"},
			User:      brains.User{ID: "web-1", Name: "Visitor"},
			Platform:  "web",
			Text:      messageText(7),
			History:   []brains.Entry{{Kind: "human", From: "Visitor", Text: messageText(6)}, {Kind: "bot", From: "Model Bot", Text: "Noted: " + messageText(6)}},
		})
		if err != nil {
			t.Fatalf("Reply: %v", err)
		}
		if took := time.Since(t0); took < m.latency {
			t.Errorf("answered after %s, before the model's %s", took, m.latency)
		}
		if want := "Noted: " + messageText(7); r.Text != want {
			t.Errorf("reply %q, want %q", r.Text, want)
		}
		f := inFrame{Type: "message", Text: r.Text, From: fromBot()}
		if seq, ok := answer(&f); !ok || seq != 7 {
			t.Errorf("answer(%q) = %d, %v; want 7, true", r.Text, seq, ok)
		}
		got := m.read().sub(before)
		if got.requests != 1 || got.streamed != 1 || got.refused != 0 || got.held < m.latency {
			t.Errorf("counted %+v, want one streamed request held at least %s", got, m.latency)
		}
	})

	t.Run("plain JSON", func(t *testing.T) {
		resp, err := http.Post(m.baseURL()+"/chat/completions", "application/json",
			strings.NewReader(`{"model":"bench","stream":false,"messages":[{"role":"system","content":"x"},{"role":"user","content":"item 3"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var c struct {
			Choices []struct {
				Message struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		if len(c.Choices) != 1 || c.Choices[0].Message.Content != "Noted: item 3" || c.Choices[0].FinishReason != "stop" {
			t.Errorf("completion %+v", c)
		}
	})

	t.Run("not a completion", func(t *testing.T) {
		resp, err := http.Post(m.baseURL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"bench","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"message":"request is not a chat completion: no messages"`) {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})

	if err := m.close(); err == nil || !strings.Contains(err.Error(), "no messages") {
		t.Errorf("close = %v, want the refused request", err)
	}
}
