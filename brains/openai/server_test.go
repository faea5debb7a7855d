package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer is an OpenAI-compatible server at /v1/chat/completions that
// answers each request with the next responder (the last one repeats) and
// records what it was sent.
type fakeServer struct {
	*httptest.Server
	mu         sync.Mutex
	requests   []sent
	responders []responder
}

// responder writes one response.
type responder func(w http.ResponseWriter, r *http.Request)

// sent is a recorded request.
type sent struct {
	header http.Header
	raw    map[string]json.RawMessage
	body   struct {
		Model    string `json:"model"`
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Stream bool `json:"stream"`
		Tools  []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string `json:"name"`
				Parameters struct {
					Properties struct {
						Bot struct {
							Enum []string `json:"enum"`
						} `json:"bot"`
					} `json:"properties"`
					Required []string `json:"required"`
				} `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
}

// newServer starts a fake server answering with rs in turn.
func newServer(t *testing.T, rs ...responder) *fakeServer {
	t.Helper()
	f := &fakeServer{responders: rs}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var s sent
		s.header = r.Header.Clone()
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &s.raw); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		json.Unmarshal(b, &s.body)
		f.mu.Lock()
		f.requests = append(f.requests, s)
		n := len(f.requests)
		f.mu.Unlock()
		f.responders[min(n, len(f.responders))-1](w, r)
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

// sent returns the recorded requests.
func (f *fakeServer) sent() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.requests...)
}

// newBrain builds a brain against f whose waits are recorded, not slept.
func newBrain(t *testing.T, f *fakeServer, cfg Config) (*Brain, *[]time.Duration) {
	t.Helper()
	cfg.BaseURL = f.URL + "/v1"
	if cfg.Model == "" {
		cfg.Model = "llama3.2"
	}
	if cfg.Retry == (Retry{}) {
		cfg.Retry = Retry{Max: 3, Base: 10 * time.Millisecond, Cap: 100 * time.Millisecond}
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var mu sync.Mutex
	waits := &[]time.Duration{}
	b.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	return b, waits
}

// jsonReply answers with a non-streamed completion, as a server that
// ignores "stream" does.
func jsonReply(content string) responder {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, content)
	}
}

// stream answers with SSE events, one data line each, flushing after
// each, then data: [DONE].
func stream(events ...string) responder {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// delta is a stream chunk carrying content.
func delta(content string) string {
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, content)
}

// raw answers with status, headers (name, value pairs) and body.
func raw(status int, body string, headers ...string) responder {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// hangUp closes the connection without answering.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// stall answers only when the client gives up.
func stall(_ http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// contains fails the test unless s contains every one of want.
func contains(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}
