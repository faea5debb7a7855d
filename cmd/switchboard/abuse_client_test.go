package main

import (
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The abuse suite's widget client: a connection from a chosen local
// address whose reader records every frame.

// dialFrom opens a widget connection to addr from the local address from
// ("" for the system's choice: 127.0.0.1 on loopback).
func dialFrom(addr, from string, q url.Values) (*websocket.Conn, *http.Response, error) {
	d := *websocket.DefaultDialer
	d.HandshakeTimeout = 15 * time.Second
	if from != "" {
		nd := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
		d.NetDialContext = nd.DialContext
	}
	u := url.URL{Scheme: "ws", Host: addr, Path: "/ws", RawQuery: q.Encode()}
	return d.Dial(u.String(), nil)
}

// recorder is a widget connection whose reader records every frame.
type recorder struct {
	t     *testing.T
	ws    *websocket.Conn
	hello map[string]any

	wmu    sync.Mutex // one writer at a time
	mu     sync.Mutex
	frames []map[string]any
	err    error
	done   chan struct{}
}

// dialRecorder dials, reads hello and starts the reader; the connection
// is closed, and the reader waited for, at cleanup.
func dialRecorder(t *testing.T, addr string, q url.Values, from string) *recorder {
	t.Helper()
	ws, resp, err := dialFrom(addr, from, q)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (HTTP %d)", err, status)
	}
	c := &recorder{t: t, ws: ws, done: make(chan struct{})}
	ws.SetReadDeadline(time.Now().Add(15 * time.Second))
	if err := ws.ReadJSON(&c.hello); err != nil || c.hello["type"] != "hello" {
		ws.Close()
		t.Fatalf("hello: %v %v", err, c.hello)
	}
	ws.SetReadDeadline(time.Time{})
	go c.read()
	t.Cleanup(func() {
		ws.Close()
		<-c.done
	})
	return c
}

func (c *recorder) read() {
	defer close(c.done)
	for {
		var f map[string]any
		if err := c.ws.ReadJSON(&f); err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		c.frames = append(c.frames, f)
		c.mu.Unlock()
	}
}

// send writes a send frame to the echo bot.
func (c *recorder) send(t *testing.T, clientID, text string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := c.ws.WriteJSON(map[string]any{"type": "send", "bot": "echo", "text": text, "client_id": clientID}); err != nil {
		t.Errorf("write %s: %v", clientID, err)
	}
}

// readErr is the error that ended the reader, nil while it reads.
func (c *recorder) readErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// wsRecord is a copy of the frames received so far.
type wsRecord struct{ frames []map[string]any }

func (c *recorder) record() *wsRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &wsRecord{frames: append([]map[string]any(nil), c.frames...)}
}

// waitFor polls the record until ok or max has passed.
func (c *recorder) waitFor(max time.Duration, ok func(*wsRecord) bool) bool {
	deadline := time.Now().Add(max)
	for {
		if ok(c.record()) {
			return true
		}
		if time.Now().After(deadline) || c.readErr() != nil {
			return ok(c.record())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *wsRecord) acked(clientID string) bool {
	for _, f := range r.frames {
		if f["type"] == "ack" && f["client_id"] == clientID {
			return true
		}
	}
	return false
}

// replied reports whether the echo bot's answer to text has arrived.
func (r *wsRecord) replied(text string) bool {
	for _, f := range r.frames {
		if f["type"] == "message" && f["text"] == "heard: "+text {
			return true
		}
	}
	return false
}

func (r *wsRecord) errors() []map[string]any {
	var out []map[string]any
	for _, f := range r.frames {
		if f["type"] == "error" {
			out = append(out, f)
		}
	}
	return out
}
