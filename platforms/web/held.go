package web

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"time"
)

// heldConn is the socket under a widget connection's websocket.Conn.
// While the write loop holds it, what the websocket library writes (whole
// frames) collects in a buffer, and the loop's flush sends it in one
// system call: an ack and the reply queued right behind it leave
// together. Writes while it is not held go straight to the socket.
type heldConn struct {
	net.Conn
	mu   sync.Mutex
	held bool
	buf  []byte
	// deadline is the last write deadline passed on. The websocket
	// library sets it before every frame it writes, under its own write
	// lock; the socket learns of it only when it changes.
	deadline time.Time
}

// keepBuf is the largest buffer a connection keeps between flushes.
const keepBuf = 8 << 10

func (h *heldConn) Write(p []byte) (int, error) {
	h.mu.Lock()
	if h.held {
		h.buf = append(h.buf, p...)
		h.mu.Unlock()
		return len(p), nil
	}
	h.mu.Unlock()
	return h.Conn.Write(p)
}

func (h *heldConn) SetWriteDeadline(t time.Time) error {
	if t.Equal(h.deadline) {
		return nil
	}
	h.deadline = t
	return h.Conn.SetWriteDeadline(t)
}

// hold starts collecting writes.
func (h *heldConn) hold() {
	h.mu.Lock()
	h.held = true
	h.mu.Unlock()
}

// flush stops collecting and writes what was collected. Only the write
// loop holds and flushes; a frame written meanwhile by another goroutine
// (a close frame) is collected too and goes out with the rest, or, once
// the hold has ended, after it.
func (h *heldConn) flush() error {
	h.mu.Lock()
	b := h.buf
	h.held, h.buf = false, nil
	h.mu.Unlock()
	if len(b) == 0 {
		return nil
	}
	_, err := h.Conn.Write(b)
	if cap(b) <= keepBuf {
		h.mu.Lock()
		if h.buf == nil {
			h.buf = b[:0]
		}
		h.mu.Unlock()
	}
	return err
}

// hijacker hands the websocket upgrader a heldConn in place of the
// request's socket.
type hijacker struct {
	http.ResponseWriter
	conn *heldConn
}

func (h *hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.conn = &heldConn{Conn: c}
	return h.conn, rw, nil
}
