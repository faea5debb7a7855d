package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
)

// countingConn counts the writes, and the write deadlines set, that
// reach the socket.
type countingConn struct {
	net.Conn
	writes, deadlines atomic.Int32
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

func (c *countingConn) SetWriteDeadline(t time.Time) error {
	c.deadlines.Add(1)
	return c.Conn.SetWriteDeadline(t)
}

// TestWriteBatch checks that frames waiting together leave in one write
// to the socket, in order, and that each sender learns it was written;
// and that frames queued once the connection has closed are reported as
// not written.
func TestWriteBatch(t *testing.T) {
	var (
		mu     sync.Mutex
		server *conn
		sock   *countingConn
	)
	ready := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj := &hijacker{ResponseWriter: w}
		ws, err := (&websocket.Upgrader{}).Upgrade(hj, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		sock = &countingConn{Conn: hj.conn.Conn}
		hj.conn.Conn = sock
		server = &conn{
			a: &Adapter{log: slog.New(slog.NewTextHandler(io.Discard, nil))}, ws: ws, sock: hj.conn,
			out: make(chan outFrame, sendBuffer), done: make(chan struct{}),
		}
		mu.Unlock()
		close(ready)
	}))
	defer srv.Close()
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	<-ready
	mu.Lock()
	c := server
	mu.Unlock()

	const n = 3
	var written sync.WaitGroup
	var failed atomic.Int32
	for i := range n {
		written.Add(1)
		c.sendThen(ackFrame{Type: "ack", ClientID: string(rune('a' + i)), ID: int64(i)}, func(err error) {
			if err != nil {
				failed.Add(1)
			}
			written.Done()
		})
	}
	loop := make(chan struct{})
	go func() { defer close(loop); c.writeLoop() }()
	written.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d frames reported unwritten", failed.Load())
	}
	if w := sock.writes.Load(); w != 1 {
		t.Errorf("%d frames took %d writes, want 1", n, w)
	}
	for i := range n {
		var f ackFrame
		if err := client.ReadJSON(&f); err != nil {
			t.Fatal(err)
		}
		if f.ID != int64(i) {
			t.Errorf("frame %d is ack %d", i, f.ID)
		}
	}

	c.close(websocket.CloseNormalClosure, "")
	<-loop
	got := make(chan error, 1)
	c.sendThen(ackFrame{Type: "ack"}, func(err error) { got <- err })
	select {
	case err := <-got:
		if !errors.Is(err, errConnClosed) {
			t.Errorf("frame after close: %v, want errConnClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a frame queued after close was never reported")
	}
}

// TestSendContext checks that Send gives up when its context ends
// before the write loop takes the message.
func TestSendContext(t *testing.T) {
	c := &conn{out: make(chan outFrame, 1), done: make(chan struct{})}
	a := &Adapter{byUser: map[string]map[*conn]struct{}{"web-ann": {c: {}}}}
	ctx, cancel := context.WithCancel(context.Background())
	m := outbox.Entry{MessageID: 7, ChatID: gateway.PrivateChatID("web-ann", "matty"), ChatType: chat.Private}
	sent := make(chan error, 1)
	go func() {
		_, err := a.Send(ctx, m)
		sent <- err
	}()
	f := <-c.out // queued, not yet written
	cancel()
	if err := <-sent; !errors.Is(err, context.Canceled) {
		t.Errorf("Send = %v, want context.Canceled", err)
	}
	// The write loop reports it later: no one waits, nothing blocks.
	f.done(nil)
}

// pipeReader collects what arrives at the far end of a net.Pipe.
func pipeReader(b net.Conn) <-chan string {
	read := make(chan string, 16)
	go func() {
		buf := make([]byte, maxHeld+1024)
		for {
			n, err := b.Read(buf)
			if err != nil {
				close(read)
				return
			}
			read <- string(buf[:n])
		}
	}()
	return read
}

// TestHeldConn checks the socket wrapper on its own: writes collect while
// held and go out in one write at flush, with one deadline set; they go
// straight out otherwise; too much to hold goes out at once, in order;
// and closing sends what was collected before the socket closes.
func TestHeldConn(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	cc := &countingConn{Conn: a}
	h := &heldConn{Conn: cc}
	read := pipeReader(b)
	deadline := time.Now().Add(time.Minute)
	h.SetWriteDeadline(deadline)
	h.hold()
	h.Write([]byte("ack "))
	h.SetWriteDeadline(deadline)
	h.Write([]byte("reply"))
	if cc.writes.Load() != 0 || cc.deadlines.Load() != 0 {
		t.Fatal("a held write reached the socket")
	}
	if err := h.flush(deadline); err != nil {
		t.Fatal(err)
	}
	if got := <-read; got != "ack reply" || cc.writes.Load() != 1 {
		t.Errorf("flush wrote %q in %d writes", got, cc.writes.Load())
	}
	h.Write([]byte("ping"))
	if got := <-read; got != "ping" || cc.writes.Load() != 2 {
		t.Errorf("unheld write: %q in %d writes", got, cc.writes.Load())
	}
	if n := cc.deadlines.Load(); n != 1 {
		t.Errorf("the same deadline was set %d times on the socket, want once", n)
	}
	if err := h.flush(deadline); err != nil || cc.writes.Load() != 2 {
		t.Errorf("empty flush: %v, %d writes", err, cc.writes.Load())
	}

	// Too much to hold: what was collected, then the big write, at once.
	h.hold()
	h.Write([]byte("small"))
	big := strings.Repeat("x", maxHeld)
	h.Write([]byte(big))
	if got := <-read; got != "small" {
		t.Errorf("first out: %q, want the collected frame", got)
	}
	var rest strings.Builder
	for rest.Len() < len(big) {
		rest.WriteString(<-read)
	}
	if rest.String() != big {
		t.Errorf("the big write arrived as %d bytes", rest.Len())
	}
	h.flush(deadline)

	// Closing sends what was collected first.
	h.hold()
	h.Write([]byte("close frame"))
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if got := <-read; got != "close frame" {
		t.Errorf("before closing: %q", got)
	}
	if err := h.flush(deadline); !errors.Is(err, net.ErrClosed) {
		t.Errorf("flush after close: %v, want net.ErrClosed", err)
	}
}
