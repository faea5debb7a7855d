package openai

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"0", 0},
		{"-5", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"99999999", 24 * time.Hour},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.v, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	base, limit := 100*time.Millisecond, time.Second
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := backoff(base, limit, i); got != w*time.Millisecond {
			t.Errorf("backoff(%d) = %v, want %v", i, got, w*time.Millisecond)
		}
	}
	if got := backoff(base, limit, 1000); got != limit {
		t.Errorf("backoff(1000) = %v, want the cap", got)
	}
	for range 100 {
		if j := jitter(time.Second); j < 500*time.Millisecond || j > time.Second {
			t.Fatalf("jitter(1s) = %v, outside [0.5s, 1s]", j)
		}
	}
}

func TestStripThinking(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"<think>hmm\nok</think>\n\nAnswer.", "\n\nAnswer."},
		{"  <think>x</think>A", "A"},
		{"<think>unfinished", "<think>unfinished"},
		{"Say <think> literally", "Say <think> literally"},
	}
	for _, tt := range tests {
		if got := stripThinking(tt.in); got != tt.want {
			t.Errorf("stripThinking(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestReadAnswer(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		want                    string
		wantErr                 string
	}{
		{"json", "application/json", `{"choices":[{"message":{"content":"hi"}}]}`, "hi", ""},
		{"content parts", "application/json", `{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]}}]}`, "ab", ""},
		{"stream without its type", "application/json", "data: {\"choices\":[{\"delta\":{\"content\":\"s\"}}]}\n\ndata: [DONE]\n\n", "s", ""},
		{"multi-line data", "text/event-stream", "data: {\"choices\":[{\"delta\":\ndata: {\"content\":\"m\"}}]}\n\ndata: [DONE]\n", "m", ""},
		{"finish without DONE", "text/event-stream", "data: {\"choices\":[{\"delta\":{\"content\":\"f\"},\"finish_reason\":\"stop\"}]}\n", "f", ""},
		{"usage chunk", "text/event-stream", "data: {\"choices\":[],\"usage\":{}}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"u\"}}]}\n\ndata: [DONE]\n\n", "u", ""},
		{"cut off", "text/event-stream", "data: {\"choices\":[{\"delta\":{\"content\":\"c\"}}]}\n\n", "", "before the answer was finished"},
		{"empty body", "application/json", "", "", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := readAnswer(tt.contentType, strings.NewReader(tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("readAnswer: %v", err)
			}
			if a.content != tt.want {
				t.Errorf("content = %q, want %q", a.content, tt.want)
			}
		})
	}
}

func TestToolCallsWithoutIndex(t *testing.T) {
	// Some servers send each call whole, without an index.
	body := `data: {"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"delegate","arguments":{"bot":"x","task":"y"}}}]}}]}` + "\n\n" +
		`data: {"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"delegate","arguments":"{\"bot\":\"z\",\"task\":\"w\"}"}}]}}]}` + "\n\n" +
		"data: [DONE]\n\n"
	a, err := readAnswer("text/event-stream", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.calls) != 2 || a.calls[0].Arguments != `{"bot":"x","task":"y"}` || a.calls[1].Arguments != `{"bot":"z","task":"w"}` {
		t.Errorf("calls = %+v", a.calls)
	}
}

// FuzzReadAnswer feeds response bodies, streamed and not, to the
// parser: it must neither panic nor hang, and never return calls it
// cannot attribute.
func FuzzReadAnswer(f *testing.F) {
	for _, s := range []string{
		"data: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n",
		": c\n\ndata:{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\"}}]},\"finish_reason\":\"stop\"}]}\n",
		"data: {\"error\":\"x\"}\n\n",
		"event: ping\ndata: \n\n",
		`{"choices":[{"message":{"content":"hi","tool_calls":[{"id":"a","function":{"name":"delegate","arguments":"{}"}}]}}]}`,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, streamed bool) {
		ct := "application/json"
		if streamed {
			ct = "text/event-stream"
		}
		a, err := readAnswer(ct, strings.NewReader(body))
		if err != nil && (a.content != "" || len(a.calls) > 0) {
			t.Errorf("an error with a partial answer: %v", err)
		}
	})
}

// A malformed stream chunk is the model's words: the error names its
// size, not its content.
func TestMalformedChunkNotQuoted(t *testing.T) {
	_, err := readAnswer("text/event-stream", strings.NewReader("data: {\"choices\":[{\"delta\":{\"content\":\"secret-words\"\n\n"))
	if err == nil || strings.Contains(err.Error(), "secret-words") {
		t.Errorf("err = %v, want one without the chunk", err)
	}
}
