package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/brains/prompt"
	"github.com/switchboard-chat/switchboard/world/actions"
)

// turn is a private turn of Matty Atlas with four messages of history.
func turn(text string) brains.Turn {
	return brains.Turn{
		SessionID: "s1",
		Bot:       brains.Bot{ID: "mattyatlas", Name: "Matty Atlas", Persona: "You are Matty Atlas, the team's architect."},
		User:      brains.User{ID: "user-bryan", Name: "Bryan"},
		Platform:  "telegram",
		Text:      text,
		History: []brains.Entry{
			{Kind: "human", From: "Bryan", Text: "h1"},
			{Kind: "bot", From: "Matty Atlas", Text: "b1"},
			{Kind: "human", From: "Bryan", Text: "h2"},
			{Kind: "bot", From: "Matty Atlas", Text: "b2"},
		},
	}
}

// teamTurn is turn with two mates Matty may hand work to, and the
// actions of a registry (delegate, and note when given) bound to it.
func teamTurn(text string, more ...actions.Action) (brains.Turn, *actions.Turn) {
	t := turn(text)
	t.Team = []brains.Mate{
		{ID: "finnshipley", Name: "Finn Shipley", Summary: "Builds features."},
		{ID: "priest", Name: "Priest", Summary: "Reviews."},
	}
	reg := actions.New()
	for _, a := range more {
		if err := reg.Register(a); err != nil {
			panic(err)
		}
	}
	acts := reg.Bind(actions.Caller{Bot: t.Bot.ID, User: t.User.ID, Space: "user:" + t.User.ID, Team: t.Team})
	t.Actions = acts
	return t, acts
}

// fixedTokens is the estimated size of t's system part and new message,
// which no budget drops.
func fixedTokens(t brains.Turn) int {
	p := prompt.Build(t, prompt.Options{})
	last := p.Messages[len(p.Messages)-1]
	return prompt.EstimateTokens(p.System) + 4 + prompt.EstimateTokens(last.Content)
}

// roles lists a request's messages as role:content.
func roles(s sent) []string {
	var out []string
	for _, m := range s.body.Messages {
		c := m.Content
		if m.Role == "system" {
			c = "…"
		}
		out = append(out, m.Role+":"+c)
	}
	return out
}

func TestRequestCarriesPersonaAndHistory(t *testing.T) {
	temp := 0.2
	tests := []struct {
		name    string
		cfg     Config
		want    []string // role:content, system shown as …
		absent  []string // top-level keys not sent
		present []string
	}{
		{
			name:   "defaults",
			cfg:    Config{},
			want:   []string{"system:…", "user:h1", "assistant:b1", "user:h2", "assistant:b2", "user:what now?"},
			absent: []string{"temperature", "max_tokens", "tools"},
		},
		{
			name:    "context messages trim oldest",
			cfg:     Config{ContextMessages: 2, Temperature: &temp, MaxTokens: 256},
			want:    []string{"system:…", "user:h2", "assistant:b2", "user:what now?"},
			present: []string{"temperature", "max_tokens"},
		},
		{
			name: "token budget trims oldest",
			// Room for the system part, the new message and two short
			// messages (4 tokens of framing and 1 of text each).
			cfg:  Config{TokenBudget: fixedTokens(turn("what now?")) + 2*5},
			want: []string{"system:…", "user:h2", "assistant:b2", "user:what now?"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, jsonReply("Start with the login page."))
			b, _ := newBrain(t, srv, tt.cfg)
			r, err := b.Reply(context.Background(), turn("what now?"))
			if err != nil {
				t.Fatalf("Reply: %v", err)
			}
			if r.Text != "Start with the login page." {
				t.Errorf("Text = %q", r.Text)
			}
			reqs := srv.sent()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			s := reqs[0]
			if s.body.Model != "llama3.2" || !s.body.Stream {
				t.Errorf("model %q stream %v, want llama3.2 and true", s.body.Model, s.body.Stream)
			}
			if got := roles(s); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("messages\n got %q\nwant %q", got, tt.want)
			}
			contains(t, "system message", s.body.Messages[0].Content,
				"=== PERSONA ===\nYou are Matty Atlas, the team's architect.", "talking with Bryan")
			for _, k := range tt.absent {
				if _, ok := s.raw[k]; ok {
					t.Errorf("request has %q: %s", k, s.raw[k])
				}
			}
			for _, k := range tt.present {
				if _, ok := s.raw[k]; !ok {
					t.Errorf("request lacks %q", k)
				}
			}
		})
	}
}

func TestStreamedReply(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		// A keep-alive comment, a role-only chunk, CRLF line ends, a data
		// line without the space, and a final chunk with finish_reason.
		w.Write([]byte(": keep-alive\n\n" +
			`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n" +
			"data: " + delta("Start ") + "\r\n\r\n" +
			"data:" + delta("with the ") + "\n\n" +
			"data: " + delta("login page.") + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
			"data: [DONE]\n\n"))
	})
	b, _ := newBrain(t, srv, Config{})
	r, err := b.Reply(context.Background(), turn("what now?"))
	if err != nil {
		t.Fatalf("Reply: %v", err)
	}
	if r.Text != "Start with the login page." {
		t.Errorf("reply = %+v", r)
	}
}

func TestAuthHeader(t *testing.T) {
	tests := []struct{ key, want string }{
		{"sk-test-123", "Bearer sk-test-123"},
		{"", ""},
	}
	for _, tt := range tests {
		srv := newServer(t, stream(delta("ok")))
		b, _ := newBrain(t, srv, Config{APIKey: tt.key})
		if _, err := b.Reply(context.Background(), turn("hi")); err != nil {
			t.Fatalf("Reply: %v", err)
		}
		if got := srv.sent()[0].header.Get("Authorization"); got != tt.want {
			t.Errorf("key %q: Authorization = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestRetries(t *testing.T) {
	date := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name      string
		first     responder
		wantWaits func(ws []time.Duration) bool
	}{
		{"429 with Retry-After seconds", raw(429, `{"error":{"message":"slow down"}}`, "Retry-After", "7"),
			func(ws []time.Duration) bool { return len(ws) == 1 && ws[0] == 7*time.Second }},
		{"503 with Retry-After date", raw(503, "busy", "Retry-After", date),
			func(ws []time.Duration) bool { return len(ws) == 1 && ws[0] > time.Second && ws[0] <= 3*time.Second }},
		{"500 backs off", raw(500, `{"error":"boom"}`),
			func(ws []time.Duration) bool {
				return len(ws) == 1 && ws[0] >= 5*time.Millisecond && ws[0] <= 10*time.Millisecond
			}},
		{"dropped connection", hangUp,
			func(ws []time.Duration) bool { return len(ws) == 1 }},
		{"truncated stream", raw(200, "data: "+delta("half")+"\n\n", "Content-Type", "text/event-stream"),
			func(ws []time.Duration) bool { return len(ws) == 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.first, stream(delta("recovered")))
			// The Retry-After waits are recorded, not slept, but must fit
			// in the turn's time.
			b, waits := newBrain(t, srv, Config{Timeout: time.Minute})
			r, err := b.Reply(context.Background(), turn("hi"))
			if err != nil {
				t.Fatalf("Reply: %v", err)
			}
			if r.Text != "recovered" {
				t.Errorf("Text = %q", r.Text)
			}
			if n := len(srv.sent()); n != 2 {
				t.Errorf("%d requests, want exactly 2", n)
			}
			if !tt.wantWaits(*waits) {
				t.Errorf("waits %v", *waits)
			}
		})
	}
}

func TestRetryAfterRealWait(t *testing.T) {
	// With the real sleep: a one-second Retry-After is waited out.
	srv := newServer(t, raw(429, "", "Retry-After", "1"), jsonReply("ok"))
	b, _ := newBrain(t, srv, Config{})
	b.sleep = sleep
	start := time.Now()
	if _, err := b.Reply(context.Background(), turn("hi")); err != nil {
		t.Fatalf("Reply: %v", err)
	}
	if e := time.Since(start); e < time.Second {
		t.Errorf("answered after %v, before the Retry-After second", e)
	}
	if n := len(srv.sent()); n != 2 {
		t.Errorf("%d requests, want exactly 2", n)
	}
}

func TestRetryLimits(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		resp     responder
		requests int
		wantErr  string
	}{
		{"gives up after max", Config{}, raw(503, `{"error":{"message":"overloaded"}}`), 4, "overloaded"},
		{"no retries", Config{Retry: Retry{Max: -1}}, raw(500, "x"), 1, "500"},
		{"bad request not retried", Config{}, raw(400, `{"error":{"message":"model not found"}}`), 1, "model not found"},
		{"unauthorized not retried", Config{}, raw(401, `{"error":{"message":"invalid key"}}`), 1, "401"},
		{"Retry-After past the deadline", Config{Timeout: time.Second}, raw(429, "", "Retry-After", "60"), 1, "deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.resp)
			b, _ := newBrain(t, srv, tt.cfg)
			_, err := b.Reply(context.Background(), turn("hi"))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if n := len(srv.sent()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
		})
	}
}

func TestStatusError(t *testing.T) {
	srv := newServer(t, raw(404, "404 page not found"))
	b, _ := newBrain(t, srv, Config{})
	_, err := b.Reply(context.Background(), turn("hi"))
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 404 || se.Message != "404 page not found" {
		t.Errorf("err = %#v, want a *StatusError 404 with the body", err)
	}
}

func TestTimeout(t *testing.T) {
	srv := newServer(t, stall)
	b, _ := newBrain(t, srv, Config{Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := b.Reply(context.Background(), turn("hi"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if e := time.Since(start); e > 2*time.Second {
		t.Errorf("took %v for a 200ms timeout", e)
	}
}

func TestMalformedResponses(t *testing.T) {
	tests := []struct {
		name    string
		resp    responder
		wantErr string
	}{
		{"not json", raw(200, "<html>oops</html>", "Content-Type", "application/json"), "malformed"},
		{"no choices", raw(200, `{"choices":[]}`, "Content-Type", "application/json"), "no choices"},
		{"error body with 200", raw(200, `{"error":{"message":"context length exceeded"}}`), "context length exceeded"},
		{"bad chunk", raw(200, "data: {nope\n\n", "Content-Type", "text/event-stream"), "malformed"},
		{"error in stream", stream(`{"error":{"message":"model crashed"}}`), "model crashed"},
		{"empty answer", stream(`{"choices":[{"delta":{"content":""},"finish_reason":"stop"}]}`), "empty reply"},
		{"content of wrong type", raw(200, `{"choices":[{"message":{"content":42}}]}`), "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.resp)
			b, _ := newBrain(t, srv, Config{})
			_, err := b.Reply(context.Background(), turn("hi"))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if n := len(srv.sent()); n != 1 {
				t.Errorf("%d requests, want 1 (not retried)", n)
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"ok", Config{BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.2"}, ""},
		{"trailing slash", Config{BaseURL: "https://api.openai.com/v1/", Model: "gpt-4o-mini"}, ""},
		{"no url", Config{Model: "m"}, "base_url"},
		{"no scheme", Config{BaseURL: "127.0.0.1:11434/v1", Model: "m"}, "base_url"},
		{"ftp", Config{BaseURL: "ftp://host/v1", Model: "m"}, "base_url"},
		{"no model", Config{BaseURL: "http://h/v1"}, "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if !strings.HasSuffix(b.endpoint, "/v1/chat/completions") || strings.Contains(b.endpoint, "//chat") {
					t.Errorf("endpoint = %q", b.endpoint)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestConfigLogValueHidesKey(t *testing.T) {
	v := Config{BaseURL: "https://user:pw-secret@api.openai.com/v1?key=q-secret", Model: "m", APIKey: "sk-secret"}.LogValue()
	if s := v.String(); strings.Contains(s, "secret") || !strings.Contains(s, "REDACTED") || !strings.Contains(s, "https://api.openai.com/v1") {
		t.Errorf("LogValue = %s", s)
	}
}
