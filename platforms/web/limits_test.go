package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestAddrSlotsExactUnderConcurrency(t *testing.T) {
	var s addrSlots
	const tries, max = 1000, 100
	var got atomic.Int64
	var wg sync.WaitGroup
	for range tries {
		wg.Go(func() {
			if s.acquire("192.0.2.1", max) {
				got.Add(1)
			}
		})
	}
	wg.Wait()
	if got.Load() != max || s.count("192.0.2.1") != max {
		t.Fatalf("%d of %d acquired, count %d; want exactly %d", got.Load(), tries, s.count("192.0.2.1"), max)
	}
	if !s.acquire("192.0.2.2", max) {
		t.Errorf("another address was refused")
	}
	s.release("192.0.2.1")
	if !s.acquire("192.0.2.1", max) {
		t.Errorf("a released slot was not free")
	}
	if s.acquire("192.0.2.1", max) {
		t.Errorf("acquired past the cap after a release")
	}
	for s.count("192.0.2.1") > 0 {
		s.release("192.0.2.1")
	}
	s.release("192.0.2.2")
	if len(s.open) != 0 {
		t.Errorf("entries left after every release: %v", s.open)
	}
	for range 3 * max {
		if !s.acquire("192.0.2.3", 0) {
			t.Fatal("max 0 refused a connection")
		}
	}
}

func TestRateSet(t *testing.T) {
	t0 := time.Now()
	var s rateSet
	s.configure(5) // burst 10
	allowed := func(key string, at time.Time, n int) int {
		ok := 0
		for range n {
			if _, yes := s.take(key, at); yes {
				ok++
			}
		}
		return ok
	}
	if n := allowed("a", t0, 20); n != 10 {
		t.Errorf("burst: %d of 20 allowed, want 10", n)
	}
	if n := allowed("b", t0, 3); n != 3 {
		t.Errorf("another key: %d of 3 allowed", n)
	}
	if n := allowed("a", t0.Add(time.Second), 20); n != 5 {
		t.Errorf("a second later: %d allowed, want 5", n)
	}

	// A change applies to the buckets already held.
	s.configure(1) // burst 2
	if n := allowed("b", t0.Add(time.Second), 5); n > 2 {
		t.Errorf("after lowering the rate: %d allowed, want at most 2", n)
	}
	// Off: everything passes and nothing is held.
	s.configure(0)
	if n := allowed("a", t0.Add(time.Second), 100); n != 100 || s.size() != 0 {
		t.Errorf("no limit: %d of 100 allowed, %d buckets held", n, s.size())
	}
}

func TestBurstOf(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want int
	}{{0, 0}, {0.1, 1}, {0.5, 1}, {2, 4}, {5, 10}, {2.5, 5}, {1000, 2000}} {
		if got := burstOf(tc.rate); got != tc.want {
			t.Errorf("burstOf(%v) = %d, want %d", tc.rate, got, tc.want)
		}
	}
}

// TestRateSetBounded checks that idle buckets are dropped once refilled
// and that a set full of busy keys refuses new ones rather than grow.
func TestRateSetBounded(t *testing.T) {
	t0 := time.Now()
	var s rateSet
	s.configure(2) // burst 4, refilled 2 s after its last message
	for i := range 1000 {
		s.take(fmt.Sprint("idle", i), t0)
	}
	s.take("busy", t0.Add(sweepEvery))
	if s.size() != 1 {
		t.Errorf("after a sweep %d buckets held, want only the busy one", s.size())
	}

	t1 := t0.Add(2 * sweepEvery)
	for i := range maxRateKeys {
		if _, ok := s.take(fmt.Sprint("flood", i), t1); !ok {
			t.Fatalf("key %d refused below the bound", i)
		}
	}
	if _, ok := s.take("one too many", t1); ok || s.size() != maxRateKeys {
		t.Fatalf("a key past the bound: allowed %v, %d held; want refused, %d", ok, s.size(), maxRateKeys)
	}
	// Once the flood's buckets have refilled, a new key gets in.
	if _, ok := s.take("newcomer", t1.Add(3*time.Second)); !ok {
		t.Errorf("a new key was refused after the flood's buckets refilled")
	}
	if s.size() != 1 {
		t.Errorf("%d buckets held after the sweep, want the newcomer's only", s.size())
	}
}

func TestMessageLimits(t *testing.T) {
	t0 := time.Now()
	var l messageLimits
	l.configure(&Settings{MessagesPerSecondPerPerson: 5, MessagesPerSecondPerIP: 2})

	// Two anonymous visitors from one address share its burst of 4.
	ok := 0
	for i := range 10 {
		if l.allow(t0, fmt.Sprint("web-anon-", i%2), "192.0.2.1", true) == "" {
			ok++
		}
	}
	if ok != 4 {
		t.Errorf("anonymous visitors of one address: %d of 10 allowed, want 4", ok)
	}
	// What the address refused was not charged to the visitors: each has
	// spent 2 of their 10.
	for _, v := range []string{"web-anon-0", "web-anon-1"} {
		if got := l.person.buckets[v].TokensAt(t0); got != 8 {
			t.Errorf("%s has %v messages left, want 8", v, got)
		}
	}
	// Another address has its own rate.
	if why := l.allow(t0, "web-anon-0", "192.0.2.2", true); why != "" {
		t.Errorf("from another address: %s", why)
	}
	if why := l.allow(t0, "web-anon-1", "192.0.2.1", true); !strings.Contains(why, "your address") {
		t.Errorf("refusal reason = %q", why)
	}
	// A listed or signed person is not held to the address's rate.
	ok = 0
	for range 12 {
		if l.allow(t0, "user-bryan", "192.0.2.1", false) == "" {
			ok++
		}
	}
	if ok != 10 {
		t.Errorf("a person: %d of 12 allowed, want the burst of 10", ok)
	}
	if why := l.allow(t0, "user-bryan", "192.0.2.1", false); !strings.Contains(why, "one person") {
		t.Errorf("refusal reason = %q", why)
	}
}

func TestRemoteIP(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"127.0.0.1:5555", "127.0.0.1"},
		{"[::1]:80", "::1"},
		{"[::ffff:192.0.2.7]:80", "192.0.2.7"},
		{"[fe80::1%eth0]:80", "fe80::1"},
		{"not an address", "not an address"},
	} {
		r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{"X-Forwarded-For": {"203.0.113.9"}}}
		if got := remoteIP(r); got != tc.want {
			t.Errorf("remoteIP(%q) = %q, want %q", tc.remote, got, tc.want)
		}
	}
}

func TestPeekClientID(t *testing.T) {
	long := strings.Repeat("x", maxClientIDLen+1)
	for _, tc := range []struct{ name, data, want string }{
		{"send", `{"type":"send","bot":"b","text":"hi","client_id":"c1"}`, "c1"},
		{"first key", `{"client_id":"c2","type":"send"}`, "c2"},
		{"nested values skipped", `{"x":{"client_id":"no"},"y":["client_id"],"client_id":"c3"}`, "c3"},
		{"cut short after it", `{"client_id":"c4","text":"aaaaaaaa`, "c4"},
		{"cut short before it", `{"text":"aaaa`, ""},
		{"not a string", `{"client_id":7}`, ""},
		{"too long", `{"client_id":"` + long + `"}`, ""},
		{"none", `{"type":"send"}`, ""},
		{"not an object", `["client_id","c5"]`, ""},
		{"not JSON", `client_id=c6`, ""},
		{"empty", ``, ""},
	} {
		if got := peekClientID([]byte(tc.data)); got != tc.want {
			t.Errorf("%s: peekClientID = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// FuzzPeekClientID checks that peekClientID never panics and, on a frame
// that decodes, agrees with the decoder whenever the frame has one
// client_id.
func FuzzPeekClientID(f *testing.F) {
	for _, s := range []string{
		`{"type":"send","bot":"b","text":"hi","client_id":"c1"}`,
		`{"client_id":"a\"b\u00e9"}`, `{"client_id":null}`, `{"a":[{"b":1}],"client_id":"z"}`,
		`{"client_id":"c4","text":"aaa`, `[`, `{`, `{"client_id"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := peekClientID(data)
		if len(got) > maxClientIDLen {
			t.Fatalf("client_id of %d bytes", len(got))
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(data, &fields) != nil || strings.Count(string(data), "client_id") != 1 {
			return
		}
		var want string
		if json.Unmarshal(fields["client_id"], &want) != nil || len(want) > maxClientIDLen {
			want = ""
		}
		if got != want {
			t.Fatalf("peekClientID(%q) = %q, the decoder says %q", data, got, want)
		}
	})
}
