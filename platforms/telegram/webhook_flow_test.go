package telegram_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/platforms/telegram"
	"github.com/switchboard-chat/switchboard/platforms/telegram/telegramtest"
)

func TestWebhook(t *testing.T) {
	h := newHarness(t, telegram.Options{}, webhook("tg1", tok1))
	h.ready(tok1, telegram.ModeWebhook)
	hook := h.fake.Webhook(tok1)
	if hook.URL != h.hookURL("tg1") || hook.Secret != secret || hook.MaxConnections != 1 {
		t.Fatalf("webhook %+v", hook)
	}
	if h.fake.Calls(tok1, "getUpdates") != 0 {
		t.Fatal("a webhook bot polled")
	}

	t.Run("good secret", func(t *testing.T) {
		h.t = t
		upd, status, err := h.fake.DeliverWebhook(tok1, telegramtest.Private(alice, "via hook"))
		if err != nil || status != http.StatusOK {
			t.Fatalf("status %d, %v", status, err)
		}
		h.expect(tok1, alice.ID, "tg1 heard: via hook")
		// Telegram retries a call it thinks failed: answered once.
		if status, err := h.fake.PostWebhook(hook.URL, secret, upd); err != nil || status != http.StatusOK {
			t.Fatalf("retry: status %d, %v", status, err)
		}
		h.fake.DeliverWebhook(tok1, telegramtest.Private(alice, "next"))
		h.expect(tok1, alice.ID, "tg1 heard: next")
		h.quiet(tok1)
	})

	t.Run("refused", func(t *testing.T) {
		h.t = t
		upd := telegramtest.Private(bob, "sneaky")
		upd.UpdateID, upd.Message.MessageID, upd.Message.Date = 9001, 1, time.Now().Unix()
		for _, tc := range []struct {
			name, url, secret string
			status            int
		}{
			{"wrong secret", hook.URL, "wrong", http.StatusUnauthorized},
			{"no secret", hook.URL, "", http.StatusUnauthorized},
			{"secret with a suffix", hook.URL, secret + "x", http.StatusUnauthorized},
			{"unknown bot", h.hookURL("nobody"), secret, http.StatusNotFound},
		} {
			status, err := h.fake.PostWebhook(tc.url, tc.secret, upd)
			if err != nil || status != tc.status {
				t.Errorf("%s: status %d, %v; want %d", tc.name, status, err, tc.status)
			}
		}
		msgs, err := h.gw.ChatHistory(context.Background(), "telegram", strconv.FormatInt(bob.ID, 10), 10)
		if err != nil || len(msgs) != 0 {
			t.Fatalf("stored %+v, %v", msgs, err)
		}
		h.quiet(tok1)
	})
}

// TestWebhookWithoutSecret: a webhook bot with no secret accepts nothing.
func TestWebhookWithoutSecret(t *testing.T) {
	cfg := webhook("tg1", tok1)
	cfg.WebhookSecret = ""
	h := newHarness(t, telegram.Options{}, cfg)
	h.ready(tok1, telegram.ModeWebhook)
	for _, s := range []string{"", "anything"} {
		upd := telegramtest.Private(alice, "hi")
		upd.UpdateID, upd.Message.MessageID = 1, 1
		if status, err := h.fake.PostWebhook(h.hookURL("tg1"), s, upd); err != nil || status != http.StatusUnauthorized {
			t.Fatalf("secret %q: status %d, %v", s, status, err)
		}
	}
}

// TestPollingBotHasNoWebhook: a polling bot's webhook path is not found.
func TestPollingBotHasNoWebhook(t *testing.T) {
	h := newHarness(t, telegram.Options{}, polling("tg1", tok1))
	upd := telegramtest.Private(alice, "hi")
	upd.UpdateID, upd.Message.MessageID = 1, 1
	if status, err := h.fake.PostWebhook(h.hookURL("tg1"), secret, upd); err != nil || status != http.StatusNotFound {
		t.Fatalf("status %d, %v", status, err)
	}
}

// untouchable is a request body that fails the test when read.
type untouchable struct{ t *testing.T }

func (u untouchable) Read([]byte) (int, error) {
	u.t.Error("the body of a refused webhook call was read")
	return 0, io.ErrUnexpectedEOF
}

// TestWebhookRefusalsLeaveTheBodyUnread: the path and the secret are
// checked before the body is read, and a refused call's connection is
// closed, so a trickled body cannot hold it.
func TestWebhookRefusalsLeaveTheBodyUnread(t *testing.T) {
	h := newHarness(t, telegram.Options{}, webhook("tg1", tok1), polling("tg2", tok2))
	h.ready(tok1, telegram.ModeWebhook)
	tests := []struct {
		name, method, path, secret string
		status                     int
	}{
		{"wrong secret", "POST", "/telegram/tg1", "wrong", http.StatusUnauthorized},
		{"no secret", "POST", "/telegram/tg1", "", http.StatusUnauthorized},
		{"unknown bot", "POST", "/telegram/nobody", secret, http.StatusNotFound},
		{"polling bot", "POST", "/telegram/tg2", secret, http.StatusNotFound},
		{"deeper path", "POST", "/telegram/tg1/x", secret, http.StatusNotFound},
		{"not a POST", "PUT", "/telegram/tg1", secret, http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			req.Body = io.NopCloser(untouchable{t})
			req.ContentLength = 100
			if tt.secret != "" {
				req.Header.Set(telegram.SecretHeader, tt.secret)
			}
			w := httptest.NewRecorder()
			h.p.Handler().ServeHTTP(w, req)
			if w.Code != tt.status || w.Header().Get("Connection") != "close" {
				t.Errorf("status %d, Connection %q; want %d, close", w.Code, w.Header().Get("Connection"), tt.status)
			}
		})
	}

	// Over a real connection: the 401 comes at once and the connection is
	// closed without waiting for the rest of the body (net/http lingers
	// about half a second; the bound is generous).
	conn, err := net.Dial("tcp", h.hook.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /telegram/tg1 HTTP/1.1\r\nHost: x\r\n"+telegram.SecretHeader+": wrong\r\nContent-Length: 1000\r\n\r\n{")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Errorf("answer %d, close %v; want 401 and the connection closed", resp.StatusCode, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the 401 the connection is still open: %v", err)
	}
}
