package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// modelServer is a fake OpenAI-compatible chat-completions server, run
// inside the bench on loopback, that stands in for a model: each
// POST /v1/chat/completions is held for a fixed latency and then
// answered, as a server-sent-events stream when the request asks for one
// ("stream": true, which the openai brain always sends) and as one JSON
// completion otherwise. The answer repeats the request's last message,
// so it ends in the sequence number the load client put there and names
// the message it answers.
type modelServer struct {
	latency time.Duration
	addr    string
	srv     *http.Server
	served  chan error
	// closeOnce stops the server once; serveErr is how Serve ended, when
	// not by close.
	closeOnce sync.Once
	serveErr  error

	// stats are counted by the handler and the listener.
	stats modelStats
	// mu guards firstErr.
	mu       sync.Mutex
	firstErr error
}

// modelStats are the fake server's counters; a reading is a snapshot and
// sub gives what happened between two.
type modelStats struct {
	// requests counts answered completions, streamed those answered as a
	// stream, refused the requests that were not completions.
	requests, streamed, refused atomic.Int64
	// conns counts accepted TCP connections: a client that keeps its
	// connections alive opens one per request in flight, once.
	conns atomic.Int64
	// held is the handlers' total time from reading the request to
	// writing the last byte of the answer.
	held atomic.Int64
}

// modelReading is a snapshot of modelStats.
type modelReading struct {
	requests, streamed, refused, conns int64
	held                               time.Duration
}

func (m *modelServer) read() modelReading {
	s := &m.stats
	return modelReading{
		requests: s.requests.Load(), streamed: s.streamed.Load(), refused: s.refused.Load(),
		conns: s.conns.Load(), held: time.Duration(s.held.Load()),
	}
}

// sub is what happened from reading before to r.
func (r modelReading) sub(before modelReading) modelReading {
	return modelReading{
		requests: r.requests - before.requests, streamed: r.streamed - before.streamed,
		refused: r.refused - before.refused, conns: r.conns - before.conns,
		held: r.held - before.held,
	}
}

// startModel starts the fake server on a free loopback port.
func startModel(latency time.Duration) (*modelServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &modelServer{latency: latency, addr: ln.Addr().String(), served: make(chan error, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", m.complete)
	m.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				m.stats.conns.Add(1)
			}
		},
	}
	go func() { m.served <- m.srv.Serve(ln) }()
	return m, nil
}

// baseURL is the API root to configure a bot with.
func (m *modelServer) baseURL() string { return "http://" + m.addr + "/v1" }

// close stops the server, cutting the requests still held, and returns
// its error or the first request it had to refuse, if any. Later calls
// return the same.
func (m *modelServer) close() error {
	m.closeOnce.Do(func() {
		m.srv.Close()
		if err := <-m.served; !errors.Is(err, http.ErrServerClosed) {
			m.serveErr = err
		}
	})
	if m.serveErr != nil {
		return m.serveErr
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.firstErr
}

// completionRequest is the part of a request the fake server reads.
type completionRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// complete answers one chat completion after the model's latency.
func (m *modelServer) complete(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	var req completionRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&req); err != nil || len(req.Messages) == 0 {
		if err == nil {
			err = errors.New("no messages")
		}
		m.refuse(w, fmt.Errorf("request is not a chat completion: %w", err))
		return
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "user" {
		m.refuse(w, fmt.Errorf("last message has role %q, want user", last.Role))
		return
	}

	timer := time.NewTimer(m.latency)
	select {
	case <-timer.C:
	case <-r.Context().Done():
		timer.Stop()
		return // the client gave up, or the server is closing
	}

	n := m.stats.requests.Add(1)
	c := completionHead{ID: "chatcmpl-bench-" + strconv.FormatInt(n, 10), Created: t0.Unix(), Model: req.Model}
	text := "Noted: " + last.Content
	if req.Stream {
		m.stats.streamed.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(streamBody(c, text))
	} else {
		w.Header().Set("Content-Type", "application/json")
		w.Write(jsonBody(c, text))
	}
	m.stats.held.Add(int64(time.Since(t0)))
}

// refuse answers 400 with an OpenAI-style error and remembers the first.
func (m *modelServer) refuse(w http.ResponseWriter, err error) {
	m.stats.refused.Add(1)
	m.mu.Lock()
	if m.firstErr == nil {
		m.firstErr = err
	}
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	msg, _ := json.Marshal(err.Error())
	fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error","code":null}}`, msg)
}

// completionHead is what every chunk of one answer repeats.
type completionHead struct {
	ID      string
	Created int64
	Model   string
}

// chunk writes one event of a stream, in the shape OpenAI's own server
// sends: the first delta carries the role, the others content, the last
// an empty delta and the finish reason.
func (c completionHead) chunk(buf *bytes.Buffer, delta string, finish string) {
	fmt.Fprintf(buf, `data: {"id":%q,"object":"chat.completion.chunk","created":%d,"model":%s,"system_fingerprint":"fp_bench","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]}`+"\n\n",
		c.ID, c.Created, jsonString(c.Model), delta, finish)
}

// streamBody is a whole streamed answer: a role chunk, one chunk per word
// of text (as a model streams tokens), a finish chunk, a usage chunk
// without choices, and [DONE]. It is written at once, after the latency:
// the bench measures a model that takes that long to answer, not the
// pacing of its tokens.
func streamBody(c completionHead, text string) []byte {
	var buf bytes.Buffer
	c.chunk(&buf, `{"role":"assistant","content":"","refusal":null}`, "null")
	words := strings.SplitAfter(text, " ")
	for _, w := range words {
		c.chunk(&buf, `{"content":`+jsonString(w)+`}`, "null")
	}
	c.chunk(&buf, `{}`, `"stop"`)
	fmt.Fprintf(&buf, `data: {"id":%q,"object":"chat.completion.chunk","created":%d,"model":%s,"choices":[],"usage":{"prompt_tokens":0,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n",
		c.ID, c.Created, jsonString(c.Model), len(words), len(words))
	buf.WriteString("data: [DONE]\n\n")
	return buf.Bytes()
}

// jsonBody is a non-streamed answer.
func jsonBody(c completionHead, text string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"chat.completion","created":%d,"model":%s,"choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
		c.ID, c.Created, jsonString(c.Model), jsonString(text))
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
