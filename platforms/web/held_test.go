package web

import (
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
)

// countingConn counts the writes that reach the socket.
type countingConn struct {
	net.Conn
	writes atomic.Int32
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
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

// TestHeldConn checks the socket wrapper on its own: writes collect while
// held and go out in one write at flush, go straight out otherwise, and
// an unchanged write deadline is not passed on again.
func TestHeldConn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cc := &countingConn{Conn: a}
	h := &heldConn{Conn: cc}
	read := make(chan string, 4)
	go func() {
		buf := make([]byte, 64)
		for {
			n, err := b.Read(buf)
			if err != nil {
				return
			}
			read <- string(buf[:n])
		}
	}()
	h.hold()
	h.Write([]byte("ack "))
	h.Write([]byte("reply"))
	if cc.writes.Load() != 0 {
		t.Fatal("a held write reached the socket")
	}
	if err := h.flush(); err != nil {
		t.Fatal(err)
	}
	if got := <-read; got != "ack reply" || cc.writes.Load() != 1 {
		t.Errorf("flush wrote %q in %d writes", got, cc.writes.Load())
	}
	h.Write([]byte("ping"))
	if got := <-read; got != "ping" || cc.writes.Load() != 2 {
		t.Errorf("unheld write: %q in %d writes", got, cc.writes.Load())
	}
	if err := h.flush(); err != nil || cc.writes.Load() != 2 {
		t.Errorf("empty flush: %v, %d writes", err, cc.writes.Load())
	}
	d := time.Now().Add(time.Minute)
	if err := h.SetWriteDeadline(d); err != nil {
		t.Fatal(err)
	}
	if err := h.SetWriteDeadline(d); err != nil || !h.deadline.Equal(d) {
		t.Errorf("deadline: %v %v", err, h.deadline)
	}
}
