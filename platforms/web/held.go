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
//
// Only the write loop holds and flushes. The websocket library writes
// under its own write lock, so while the socket is held the only other
// writer is a control frame (a pong, a close) from another goroutine,
// which is collected too and goes out in order; a write that finds the
// socket not held waits for a flush under way to finish first.
type heldConn struct {
	net.Conn
	// wmu orders the writes that reach the socket; applied is the write
	// deadline the socket has, set under wmu.
	wmu     sync.Mutex
	applied time.Time

	mu   sync.Mutex
	held bool
	buf  *[]byte // taken from bufPool while held, nil otherwise
	// deadline is the last write deadline the websocket library set; it
	// reaches the socket with the next write that is not held.
	deadline time.Time
	closed   bool
}

const (
	// maxHeld bounds what a held socket collects: a write that would
	// pass it sends what was collected, then itself, at once.
	maxHeld = 64 << 10
	// keepBuf is the largest buffer returned to bufPool.
	keepBuf = 16 << 10
	// closeFlushWait bounds the write of collected frames when the
	// socket closes.
	closeFlushWait = 250 * time.Millisecond
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

func (h *heldConn) Write(p []byte) (int, error) {
	h.mu.Lock()
	if h.held && !h.closed {
		if h.buf == nil {
			h.buf = bufPool.Get().(*[]byte)
		}
		if len(*h.buf)+len(p) <= maxHeld {
			*h.buf = append(*h.buf, p...)
			h.mu.Unlock()
			return len(p), nil
		}
	}
	// Not held, or too much to hold: what was collected goes first.
	collected := h.take()
	deadline := h.deadline
	h.mu.Unlock()
	h.wmu.Lock()
	defer h.wmu.Unlock()
	if collected != nil {
		err := h.write(*collected, deadline)
		putBuf(collected)
		if err != nil {
			return 0, err
		}
	}
	if err := h.write(p, deadline); err != nil {
		return 0, err
	}
	return len(p), nil
}

// SetWriteDeadline records t for the next write that reaches the socket.
func (h *heldConn) SetWriteDeadline(t time.Time) error {
	h.mu.Lock()
	h.deadline = t
	h.mu.Unlock()
	return nil
}

// SetDeadline sets both deadlines; the write one as SetWriteDeadline.
func (h *heldConn) SetDeadline(t time.Time) error {
	h.SetWriteDeadline(t)
	return h.Conn.SetReadDeadline(t)
}

// hold starts collecting writes.
func (h *heldConn) hold() {
	h.mu.Lock()
	h.held = true
	h.mu.Unlock()
}

// flush stops collecting and writes what was collected, with deadline.
// After Close it fails: what was collected then went out (or not) with
// the close.
func (h *heldConn) flush(deadline time.Time) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	h.mu.Lock()
	collected, closed := h.take(), h.closed
	h.held = false
	h.mu.Unlock()
	if closed {
		return net.ErrClosed
	}
	if collected == nil {
		return nil
	}
	err := h.write(*collected, deadline)
	putBuf(collected)
	return err
}

// Close sends what was collected (a close frame among it, usually),
// briefly, then closes the socket.
func (h *heldConn) Close() error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	h.mu.Lock()
	collected := h.take()
	h.held, h.closed = false, true
	h.mu.Unlock()
	if collected != nil {
		h.write(*collected, time.Now().Add(closeFlushWait))
		putBuf(collected)
	}
	return h.Conn.Close()
}

// take returns the collected buffer (nil if none) and forgets it. Callers
// hold mu.
func (h *heldConn) take() *[]byte {
	b := h.buf
	h.buf = nil
	if b != nil && len(*b) == 0 {
		putBuf(b)
		return nil
	}
	return b
}

// write sends p with deadline. Callers hold wmu.
func (h *heldConn) write(p []byte, deadline time.Time) error {
	if !deadline.Equal(h.applied) {
		if err := h.Conn.SetWriteDeadline(deadline); err != nil {
			return err
		}
		h.applied = deadline
	}
	_, err := h.Conn.Write(p)
	return err
}

func putBuf(b *[]byte) {
	if cap(*b) > keepBuf {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
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
