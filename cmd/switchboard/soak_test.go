package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Soak sizes. Short mode (`go test -short`) runs soakShortConns.
const (
	soakConns      = 2000
	soakShortConns = 200
	// soakPeriod is how long the clients keep sending; each sends its
	// first message at a random moment in it and then one every soakGap.
	soakPeriod = 3 * time.Second
	soakGap    = time.Second
	// After the clients leave, goroutines and the live heap must come back
	// to within these margins of where they were before the load. The
	// heap's margin is soakHeapBase plus soakHeapPerConn per connection:
	// the runtime keeps the descriptor of every goroutine it ever ran
	// (about half a KiB each, three goroutines a connection), while an
	// open connection holds some 20 KiB, so a leaked connection, or a
	// good part of each, is over it.
	soakGoroutineSlack = 25
	soakHeapBase       = 2 << 20
	soakHeapPerConn    = 3 << 10
	// soakSettle bounds the wait for them to come back.
	soakSettle = 20 * time.Second
)

// TestSoak holds thousands of widget connections open at once against an
// in-process gateway while they exchange messages, checks that every
// message is acknowledged and answered in order with no error, and then,
// once every client has gone, that the gateway's goroutines and heap are
// back near their level before the load: connections and sessions leave
// nothing behind. Nothing here is timed; the waits are upper bounds.
func TestSoak(t *testing.T) {
	conns := soakConns
	if testing.Short() {
		conns = soakShortConns
	}
	// Both ends of every connection live in this process.
	if limit := raiseNoFile(t); limit < uint64(2*conns+256) {
		conns = int(limit-256) / 2
		t.Logf("RLIMIT_NOFILE is %d: soaking with %d connections", limit, conns)
	}
	m := startMain(t, loadConfigDir(t))

	// Warm up (first connection, first session, the store's statement
	// paths), then take the baseline.
	if err := soakClient(m.Addr(), -1, time.Now()); err != nil {
		t.Fatalf("warm-up: %v", err)
	}
	g0, h0 := waitSettled(func(int, uint64) bool { return false }, time.Second) // settle for 1 s

	// Dial everyone first, so all connections are open at once.
	wss := make([]*websocket.Conn, conns)
	var dials sync.WaitGroup
	dialErrs := make(chan error, conns)
	sem := make(chan struct{}, 32)
	for i := range wss {
		dials.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ws, _, err := dialRaw(m.Addr(), nil)
			if err != nil {
				dialErrs <- fmt.Errorf("dial %d: %w", i, err)
				return
			}
			wss[i] = ws
		})
	}
	dials.Wait()
	close(dialErrs)
	for err := range dialErrs {
		t.Fatal(err)
	}
	t.Logf("%d connections open; %d goroutines", conns, runtime.NumGoroutine())

	end := time.Now().Add(soakPeriod)
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	var sent sync.Map
	for i, ws := range wss {
		wg.Go(func() {
			defer ws.Close()
			n, err := soakExchange(ws, i, end)
			sent.Store(i, n)
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	failures := 0
	for err := range errs {
		if failures++; failures <= 10 {
			t.Error(err)
		}
	}
	if failures > 10 {
		t.Errorf("… and %d more clients failed", failures-10)
	}
	total := 0
	sent.Range(func(_, n any) bool { total += n.(int); return true })
	t.Logf("%d messages acknowledged and answered over %d connections", total, conns)

	heapSlack := uint64(soakHeapBase + soakHeapPerConn*conns)
	g, h := waitSettled(func(g int, h uint64) bool {
		return g <= g0+soakGoroutineSlack && h <= h0+heapSlack
	}, soakSettle)
	t.Logf("goroutines %d → %d, live heap %.1f → %.1f MiB", g0, g, mib(h0), mib(h))
	if g > g0+soakGoroutineSlack {
		var dump bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Errorf("goroutines did not come back: %d before the load, %d after (slack %d)\n%.6000s", g0, g, soakGoroutineSlack, dump.String())
	}
	if h > h0+heapSlack {
		t.Errorf("heap did not come back: %.1f MiB live before the load, %.1f MiB after (slack %.1f MiB)", mib(h0), mib(h), mib(heapSlack))
	}
}

// soakClient dials, then exchanges messages like soakExchange.
func soakClient(addr string, id int, end time.Time) error {
	ws, _, err := dialRaw(addr, nil)
	if err != nil {
		return err
	}
	defer ws.Close()
	_, err = soakExchange(ws, id, end)
	return err
}

// soakExchange reads hello, then sends a message at a random moment
// before end and one every soakGap after it while before end; each must be
// acknowledged and answered (in either order) before the next. It returns
// how many were.
func soakExchange(ws *websocket.Conn, id int, end time.Time) (int, error) {
	ws.SetReadDeadline(time.Now().Add(time.Minute))
	var hello map[string]any
	if err := ws.ReadJSON(&hello); err != nil || hello["type"] != "hello" {
		return 0, fmt.Errorf("client %d: hello: %v %v", id, err, hello)
	}
	if rest := time.Until(end); rest > 0 {
		time.Sleep(rand.N(rest))
	}
	n := 0
	for {
		text := fmt.Sprintf("soak client %d message %d", id, n)
		cid := fmt.Sprint(n)
		if err := ws.WriteJSON(map[string]any{"type": "send", "bot": "mattyatlas", "text": text, "client_id": cid}); err != nil {
			return n, fmt.Errorf("client %d: write: %w", id, err)
		}
		// A hang guard, not a timing assertion: the gateway may be slow
		// under -race with thousands of clients.
		ws.SetReadDeadline(time.Now().Add(time.Minute))
		acked, answered := false, false
		for !acked || !answered {
			var f map[string]any
			if err := ws.ReadJSON(&f); err != nil {
				return n, fmt.Errorf("client %d message %d (acked %v, answered %v): %w", id, n, acked, answered, err)
			}
			switch f["type"] {
			case "ack":
				if f["client_id"] != cid || acked {
					return n, fmt.Errorf("client %d: unexpected ack %v", id, f)
				}
				acked = true
			case "message":
				if want := "Matty Atlas heard: " + text; f["text"] != want || answered {
					return n, fmt.Errorf("client %d: got message %q, want one %q", id, f["text"], want)
				}
				answered = true
			case "typing":
			default:
				return n, fmt.Errorf("client %d: unexpected frame %v", id, f)
			}
		}
		n++
		if time.Now().Add(soakGap).After(end) {
			return n, nil
		}
		time.Sleep(soakGap)
	}
}

// waitSettled collects garbage and samples goroutines and the live heap
// (HeapAlloc after a full GC) until ok accepts them or max has passed,
// and returns the last sample.
func waitSettled(ok func(goroutines int, heap uint64) bool, max time.Duration) (int, uint64) {
	deadline := time.Now().Add(max)
	for {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		g := runtime.NumGoroutine()
		if ok(g, ms.HeapAlloc) || time.Now().After(deadline) {
			return g, ms.HeapAlloc
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// raiseNoFile lifts the soft RLIMIT_NOFILE to the hard limit and returns
// it.
func raiseNoFile(t *testing.T) uint64 {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	return lim.Cur
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
