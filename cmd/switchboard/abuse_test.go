package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchboard-chat/switchboard/platforms/web"
)

// The abuse suite runs the real binary as an attacker would, against
// SPEC §12's connection limits and message rates. Each test starts its
// own gateway (so their addresses' counts and rates do not mix) and they
// run in parallel: the longest wait a server timeout out, and the suite
// takes about as long as the longest of them.

// abuseBots is the suite's bots.yaml: one script bot that answers at
// once, naming the message it answers. %s is the listen address, then
// more gateway.web lines.
const abuseBots = `
gateway:
  listen: %s
  database: abuse.db
  web:
    secret_env: SB_ABUSE_WEB_SECRET
%sbots:
  - id: echo
    name: Echo
    brain:
      kind: script
      default: 'heard: {{.Text}}'
    platforms:
      web: {}
`

// abuseUsers lists one person with two web identities.
const abuseUsers = `
users:
  - id: user-bryan
    name: Bryan
    identities: [web-bryan, web-bryan-phone]
`

const abuseSecret = "abuse-test-secret"

// Margins for the waits on the server's timeouts: this VM is slow and
// shared, so a timeout may fire late, never early.
const (
	timeoutMargin = 30 * time.Second
	// settle is how long a client keeps reading after its last frame, for
	// the answers still on their way.
	settle = 3 * time.Second
)

func TestAbuse(t *testing.T) {
	bin := buildGatewayBinary(t)

	t.Run("IdleKeepAlivesClosed", func(t *testing.T) {
		t.Parallel()
		testIdleKeepAlives(t, bin)
	})
	t.Run("TrickledBody", func(t *testing.T) {
		t.Parallel()
		testTrickledBody(t, bin)
	})
	t.Run("WebSocketOutlivesServerTimeouts", func(t *testing.T) {
		t.Parallel()
		testWebSocketOutlivesTimeouts(t, bin)
	})
	t.Run("ConnectionCapPerAddress", func(t *testing.T) {
		t.Parallel()
		testConnectionCap(t, bin)
	})
	t.Run("FrameBurstKeepsConnection", func(t *testing.T) {
		t.Parallel()
		testFrameBurst(t, bin)
	})
	t.Run("PersonRateAcrossConnections", func(t *testing.T) {
		t.Parallel()
		testPersonRate(t, bin)
	})
	t.Run("AnonymousVisitorsShareAddressRate", func(t *testing.T) {
		t.Parallel()
		testAddressRate(t, bin)
	})
}

// startAbuseGateway runs the binary on abuseBots (with webLines added to
// gateway.web) and abuseUsers, the web secret set.
func startAbuseGateway(t *testing.T, bin, webLines string) (string, *gatewayProcess) {
	t.Helper()
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	if err := os.WriteFile(filepath.Join(dir, "bots.yaml"), fmt.Appendf(nil, abuseBots, addr, webLines), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.yaml"), []byte(abuseUsers), 0o644); err != nil {
		t.Fatal(err)
	}
	return addr, startGatewayProcess(t, bin, dir, addr, "SB_ABUSE_WEB_SECRET="+abuseSecret)
}

// testIdleKeepAlives opens 1,000 keep-alive connections, makes one request
// on each, and checks that the server closes every one once it has idled
// for IdleTimeout (and not long before: it is the idle timeout that
// closes them).
func testIdleKeepAlives(t *testing.T, bin string) {
	const n = 1000
	if limit := raiseNoFile(t); limit < n+512 {
		t.Fatalf("RLIMIT_NOFILE is %d; this test needs %d", limit, n+512)
	}
	addr, p := startAbuseGateway(t, bin, "")
	closedAfter := make([]time.Duration, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 50) // requests under way at once
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, br, err := keepAliveRequest(addr, sem)
			if err != nil {
				errs <- fmt.Errorf("connection %d: %w", i, err)
				return
			}
			defer c.Close()
			idleFrom := time.Now()
			c.SetReadDeadline(idleFrom.Add(idleTimeout + timeoutMargin))
			b, err := br.ReadByte()
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				errs <- fmt.Errorf("connection %d still open after idling %s", i, time.Since(idleFrom).Round(time.Second))
			case err == nil:
				errs <- fmt.Errorf("connection %d: the server sent %q unasked", i, b)
			default:
				closedAfter[i] = time.Since(idleFrom)
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
	if failures > 0 {
		t.Fatalf("%d of %d connections failed\n%.3000s", failures, n, p.log())
	}
	least, most := closedAfter[0], closedAfter[0]
	for _, d := range closedAfter {
		least, most = min(least, d), max(most, d)
	}
	t.Logf("%d idle keep-alive connections closed after %s to %s (IdleTimeout %s)", n, least.Round(time.Millisecond), most.Round(time.Millisecond), idleTimeout)
	if least < idleTimeout/2 {
		t.Errorf("a connection was closed after idling only %s; IdleTimeout is %s", least, idleTimeout)
	}
}

// keepAliveRequest dials addr and makes one HTTP/1.1 request on it,
// keeping the connection open; sem bounds the requests under way.
func keepAliveRequest(addr string, sem chan struct{}) (net.Conn, *bufio.Reader, error) {
	sem <- struct{}{}
	defer func() { <-sem }()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, nil, err
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	resp, err := http.ReadResponse(br, nil)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET /healthz: %s", resp.Status)
		}
	}
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	c.SetDeadline(time.Time{})
	return c, br, nil
}

// testTrickledBody sends a request body at one byte every 3 s: without
// credentials it is answered 401 (or cut) within ReadTimeout; with the
// admin token, the body's slow read is cut by ReadTimeout, and the
// request is never accepted.
func testTrickledBody(t *testing.T, bin string) {
	addr, p := startAbuseGateway(t, bin, "")
	for _, tc := range []struct {
		name, auth string
		ok         func(status int) bool
	}{
		{"unauthenticated", "", func(s int) bool { return s == http.StatusUnauthorized }},
		{"with the admin token", "Authorization: Bearer crash-test\r\n", func(s int) bool { return s >= 400 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			fmt.Fprintf(c, "POST /api/v1/delegations HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n%s\r\n", addr, tc.auth)
			stop := make(chan struct{})
			var trickle sync.WaitGroup
			trickle.Go(func() {
				tick := time.NewTicker(3 * time.Second)
				defer tick.Stop()
				for {
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			})
			defer trickle.Wait()
			defer close(stop)
			c.SetReadDeadline(start.Add(readTimeout + timeoutMargin))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			took := time.Since(start).Round(time.Millisecond)
			switch {
			case err == nil:
				resp.Body.Close()
				t.Logf("answered %s after %s", resp.Status, took)
				if !tc.ok(resp.StatusCode) {
					t.Errorf("a trickled body was answered %s", resp.Status)
				}
			case errors.Is(err, os.ErrDeadlineExceeded):
				t.Errorf("no answer and the connection still open after %s (ReadTimeout %s)\n%.3000s", took, readTimeout, p.log())
			default:
				t.Logf("connection cut after %s: %v", took, err)
			}
		})
	}
}

// testWebSocketOutlivesTimeouts keeps a widget connection open for longer
// than the server's read and write timeouts, then uses it.
func testWebSocketOutlivesTimeouts(t *testing.T, bin string) {
	addr, p := startAbuseGateway(t, bin, "")
	c := dialRecorder(t, addr, nil, "")
	live := max(readTimeout, writeTimeout, idleTimeout) + 10*time.Second
	time.Sleep(live) // reading all along, so the server's pings are answered
	c.send(t, "still-here", "still here")
	if !c.waitFor(10*time.Second, func(r *wsRecord) bool { return r.acked("still-here") && r.replied("still here") }) {
		t.Fatalf("after %s: no ack and reply (connection error: %v)\n%.3000s", live, c.readErr(), p.log())
	}
}

// testConnectionCap fills the default cap of 100 connections from one
// address and checks the 101st is answered 429 before the upgrade, that
// another address is not affected, and that a slot frees up when a
// connection closes.
func testConnectionCap(t *testing.T, bin string) {
	const capacity = 100 // the default
	addr, p := startAbuseGateway(t, bin, "")
	conns := make([]*websocket.Conn, capacity)
	defer func() {
		for _, ws := range conns {
			if ws != nil {
				ws.Close()
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, capacity)
	sem := make(chan struct{}, 20)
	for i := range conns {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ws, _, err := dialFrom(addr, "", nil)
			if err != nil {
				errs <- fmt.Errorf("connection %d: %w", i, err)
				return
			}
			conns[i] = ws
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%v\n%.3000s", err, p.log())
	}

	refused := func() {
		t.Helper()
		ws, resp, err := dialFrom(addr, "", nil)
		if err == nil {
			ws.Close()
			t.Fatalf("connection %d from one address was accepted", capacity+1)
		}
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("connection %d: %v (response %v); want HTTP 429", capacity+1, err, resp)
		}
		var body struct {
			Error struct{ Code, Message string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error.Code != "too_many_connections" {
			t.Errorf("429 body: %+v (%v); want error code too_many_connections", body, err)
		}
	}
	refused()

	// Another address has its own count; plain HTTP is not capped.
	if ws, _, err := dialFrom(addr, "127.0.0.2", nil); err != nil {
		t.Errorf("a connection from 127.0.0.2: %v", err)
	} else {
		ws.Close()
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz from the capped address: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// A connection that ends gives its slot back, and only one.
	conns[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ws, _, err := dialFrom(addr, "", nil)
		if err == nil {
			conns[0] = ws
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot free 10 s after a connection closed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	refused()
}

// testFrameBurst sends 2,000 frames on one connection as fast as it can
// while reading: the connection stays open, the refused frames get
// rate_limited errors naming their client_ids, about one a second, and
// the frames within the limits are handled as usual.
func testFrameBurst(t *testing.T, bin string) {
	const n = 2000
	addr, p := startAbuseGateway(t, bin, "")
	c := dialRecorder(t, addr, nil, "")
	start := time.Now()
	for i := range n {
		c.send(t, fmt.Sprintf("burst-%d", i), fmt.Sprintf("burst %d", i))
	}
	time.Sleep(settle)
	// Still open and still served once the rates have refilled.
	c.send(t, "after", "after the burst")
	if !c.waitFor(10*time.Second, func(r *wsRecord) bool { return r.acked("after") && r.replied("after the burst") }) {
		t.Fatalf("after the burst: no ack and reply for a new message (connection error: %v)\n%.3000s", c.readErr(), p.log())
	}
	elapsed := time.Since(start)
	r := c.record()
	if err := c.readErr(); err != nil {
		t.Fatalf("the connection ended: %v", err)
	}

	acks := 0
	for i := range n {
		if id := fmt.Sprintf("burst-%d", i); r.acked(id) {
			acks++
			if !r.replied(fmt.Sprintf("burst %d", i)) {
				t.Errorf("%s was acknowledged but not answered", id)
			}
		}
	}
	errs := r.errors()
	t.Logf("%d frames in %s: %d acknowledged and answered, %d rate_limited errors", n, elapsed.Round(time.Millisecond), acks, len(errs))
	for _, e := range errs {
		if e["code"] != "rate_limited" || !strings.HasPrefix(fmt.Sprint(e["client_id"]), "burst-") {
			t.Errorf("error frame %v; want rate_limited naming a burst frame's client_id", e)
		}
	}
	if len(errs) == 0 {
		t.Errorf("no rate_limited error for a burst of %d frames", n)
	}
	// At most one error a second (plus one for the second under way).
	if most := int(elapsed.Seconds()) + 2; len(errs) > most {
		t.Errorf("%d error frames in %s; want at most one a second", len(errs), elapsed.Round(time.Millisecond))
	}
	// An anonymous visitor's address may send a burst of 4, then 2 a
	// second.
	if most := 4 + int(2*elapsed.Seconds()) + 2; acks < 4 || acks > most {
		t.Errorf("%d burst messages accepted; want between 4 and %d", acks, most)
	}
	if strings.Contains(p.log(), "slow websocket client") {
		t.Errorf("the gateway disconnected the client as slow:\n%.3000s", p.log())
	}
}

// testPersonRate sends from two connections of one listed person (two
// identities of user-bryan) faster than the person's rate together: the
// person's rate (5 a second, bursts of 10) holds across both.
func testPersonRate(t *testing.T, bin string) {
	addr, _ := startAbuseGateway(t, bin, "")
	var conns []*recorder
	for _, user := range []string{"bryan", "bryan-phone"} {
		c := dialRecorder(t, addr, url.Values{"user": {user}, "sig": {web.Sign([]byte(abuseSecret), user)}}, "")
		if c.hello["user"] != "user-bryan" {
			t.Fatalf("hello = %v", c.hello)
		}
		conns = append(conns, c)
	}
	// Each connection alone stays under its 20 frames a second.
	span := sendTogether(t, conns, 12, 4*time.Second)
	accepted, refused := countOutcomes(conns)
	t.Logf("%d messages over %s from two connections of one person: %d accepted, %d rate_limited errors", 2*12*4, span.Round(time.Millisecond), accepted, refused)
	if most := 10 + int(5*(span+settle).Seconds()); accepted < 10 || accepted > most {
		t.Errorf("%d messages accepted; want between the burst of 10 and %d", accepted, most)
	}
	if refused == 0 {
		t.Errorf("no rate_limited error")
	}
}

// testAddressRate sends from three anonymous visitors of one address
// faster than the address's rate together: they share it (2 a second,
// bursts of 4), while a visitor from another address is not held back.
func testAddressRate(t *testing.T, bin string) {
	addr, _ := startAbuseGateway(t, bin, "")
	var conns []*recorder
	for range 3 {
		conns = append(conns, dialRecorder(t, addr, nil, ""))
	}
	other := dialRecorder(t, addr, nil, "127.0.0.2")
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(time.Second) // in the middle of the flood
		for i := range 3 {
			other.send(t, fmt.Sprintf("other-%d", i), fmt.Sprintf("other %d", i))
		}
	})
	span := sendTogether(t, conns, 8, 4*time.Second)
	wg.Wait()
	accepted, refused := countOutcomes(conns)
	t.Logf("%d messages over %s from three anonymous visitors of one address: %d accepted, %d rate_limited errors", 3*8*4, span.Round(time.Millisecond), accepted, refused)
	if most := 4 + int(2*(span+settle).Seconds()); accepted < 4 || accepted > most {
		t.Errorf("%d messages accepted; want between the burst of 4 and %d", accepted, most)
	}
	if refused == 0 {
		t.Errorf("no rate_limited error")
	}
	if !other.waitFor(10*time.Second, func(r *wsRecord) bool { return r.acked("other-0") && r.acked("other-1") && r.acked("other-2") }) {
		t.Errorf("a visitor from another address was held back: %v", other.record().errors())
	}
}

// sendTogether has each connection send perSecond messages a second for
// d, all at once, then lets the answers arrive. It returns the time from
// the first message to the last.
func sendTogether(t *testing.T, conns []*recorder, perSecond int, d time.Duration) time.Duration {
	gap := time.Second / time.Duration(perSecond)
	count := int(d / gap)
	start := time.Now()
	var wg sync.WaitGroup
	for ci, c := range conns {
		wg.Go(func() {
			for i := range count {
				time.Sleep(time.Until(start.Add(time.Duration(i) * gap)))
				c.send(t, fmt.Sprintf("c%d-%d", ci, i), fmt.Sprintf("c%d m%d", ci, i))
			}
		})
	}
	wg.Wait()
	span := time.Since(start)
	time.Sleep(settle)
	return span
}

// countOutcomes counts the acks of the connections' sends and their
// rate_limited errors, checking that each error names one of that
// connection's client_ids.
func countOutcomes(conns []*recorder) (accepted, refused int) {
	for ci, c := range conns {
		r := c.record()
		if err := c.readErr(); err != nil {
			c.t.Errorf("connection %d ended: %v", ci, err)
		}
		for _, f := range r.frames {
			switch f["type"] {
			case "ack":
				accepted++
			case "error":
				refused++
				if f["code"] != "rate_limited" || !strings.HasPrefix(fmt.Sprint(f["client_id"]), fmt.Sprintf("c%d-", ci)) {
					c.t.Errorf("connection %d: error frame %v; want rate_limited naming one of its client_ids", ci, f)
				}
			}
		}
	}
	return accepted, refused
}
