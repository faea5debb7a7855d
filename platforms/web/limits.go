package web

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The widget's limits on connections and message rates (SPEC §12), beside
// the per-connection frame limit of frames.go:
//
//   - open /ws connections per remote address (gateway.web.max_connections_per_ip);
//   - messages (send frames) per person, across all their connections
//     (gateway.web.max_messages_per_second_per_person): the person is the
//     master user ID when users.yaml lists them, else the platform ID;
//   - messages per remote address from anonymous visitors (web-anon-…),
//     all their identities and connections together
//     (gateway.web.max_messages_per_second_per_ip).
//
// The address is the TCP peer's (r.RemoteAddr): X-Forwarded-For is not
// trusted, so behind a reverse proxy every visitor shares the proxy's
// address.

const (
	// burstSeconds is the burst of a message rate, in seconds of that
	// rate: 5 messages a second may come 10 at once.
	burstSeconds = 2
	// rateErrorGap is the least time between two rate_limited error
	// frames on one connection; the frames a burst has refused in between
	// get no answer of their own, so a flood cannot fill the send buffer.
	rateErrorGap = time.Second
	// sweepEvery is how often a rate set drops the buckets that have
	// refilled (which are as good as new, so dropping them forgets
	// nothing).
	sweepEvery = 10 * time.Second
	// maxRateKeys bounds a rate set. Full, it sweeps (at most once a
	// second) and, if still full, refuses messages from keys it does not
	// hold: a flood of new identities costs them their messages, not the
	// gateway its memory. About 200 bytes a key.
	maxRateKeys = 50_000
	// fullSweepGap is the least time between two sweeps of a full set.
	fullSweepGap = time.Second
)

// addrSlots counts the open widget connections of each remote address.
// Counts are exact: a slot is taken before the upgrade and given back
// when the connection ends; an address with none open has no entry.
type addrSlots struct {
	mu   sync.Mutex
	open map[string]int
}

// acquire takes a slot for addr unless it has max open already (max 0:
// no limit).
func (s *addrSlots) acquire(addr string, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if max > 0 && s.open[addr] >= max {
		return false
	}
	if s.open == nil {
		s.open = make(map[string]int)
	}
	s.open[addr]++
	return true
}

// release gives back a slot taken by acquire.
func (s *addrSlots) release(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.open[addr]; n > 1 {
		s.open[addr] = n - 1
	} else {
		delete(s.open, addr)
	}
}

// count is addr's open connections.
func (s *addrSlots) count(addr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[addr]
}

// rateSet is a token bucket per key (a person, an address), all with the
// same rate, which may change while running. Idle buckets are dropped
// once they have refilled, so the set holds only the keys that sent
// recently, and never more than maxRateKeys.
type rateSet struct {
	mu      sync.Mutex
	limit   rate.Limit // 0: no limit, and no buckets
	burst   int
	buckets map[string]*rate.Limiter
	swept   time.Time
}

// configure sets the rate, in messages a second (0: no limit), for every
// bucket, old and new.
func (s *rateSet) configure(perSecond float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit, burst := rate.Limit(perSecond), burstOf(perSecond)
	if limit == s.limit && burst == s.burst {
		return
	}
	s.limit, s.burst = limit, burst
	if limit <= 0 {
		s.buckets = nil
		return
	}
	now := time.Now()
	for _, b := range s.buckets {
		b.SetLimitAt(now, limit)
		b.SetBurstAt(now, burst)
	}
}

// burstOf is the burst of a rate: burstSeconds of it, at least 1.
func burstOf(perSecond float64) int {
	if perSecond <= 0 {
		return 0
	}
	return int(max(1, math.Ceil(perSecond*burstSeconds)))
}

// take takes a token from key's bucket at now. ok is false when the
// bucket is empty (or the set is full of other keys); otherwise undo,
// when not nil, gives the token back (see allowMessage).
func (s *rateSet) take(key string, now time.Time) (undo *rate.Reservation, ok bool) {
	// All under mu (a bucket's own lock is not enough): a sweep must not
	// drop a bucket between its lookup and its use.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit <= 0 {
		return nil, true
	}
	b := s.bucket(key, now)
	if b == nil {
		return nil, false
	}
	r := b.ReserveN(now, 1)
	if !r.OK() || r.DelayFrom(now) > 0 {
		r.CancelAt(now)
		return nil, false
	}
	return r, true
}

// bucket returns key's bucket, made if the set has room (nil if not).
// Callers hold mu.
func (s *rateSet) bucket(key string, now time.Time) *rate.Limiter {
	b := s.buckets[key]
	if b != nil {
		return b
	}
	if now.Sub(s.swept) >= sweepEvery || (len(s.buckets) >= maxRateKeys && now.Sub(s.swept) >= fullSweepGap) {
		s.sweep(now)
	}
	if len(s.buckets) >= maxRateKeys {
		return nil
	}
	if s.buckets == nil {
		s.buckets = make(map[string]*rate.Limiter)
	}
	b = rate.NewLimiter(s.limit, s.burst)
	s.buckets[key] = b
	return b
}

// spend takes a token from key's bucket at now for a message another
// process took: it is spent, even if that leaves the bucket in debt.
func (s *rateSet) spend(key string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit <= 0 {
		return
	}
	if b := s.bucket(key, now); b != nil {
		b.ReserveN(now, 1)
	}
}

// sweep drops the buckets that are full at now. Callers hold mu.
func (s *rateSet) sweep(now time.Time) {
	s.swept = now
	for k, b := range s.buckets {
		if b.TokensAt(now) >= float64(s.burst) {
			delete(s.buckets, k)
		}
	}
}

// size is the number of buckets held.
func (s *rateSet) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buckets)
}

// messageLimits are the adapter's limits on messages across connections.
type messageLimits struct {
	person rateSet // by master user ID, else platform ID
	anon   rateSet // by remote address, anonymous visitors only
}

// configure applies the live settings.
func (l *messageLimits) configure(s *Settings) {
	l.person.configure(s.MessagesPerSecondPerPerson)
	l.anon.configure(s.MessagesPerSecondPerIP)
}

// allow takes one message of person, and of addr when anonymous is set,
// at now; refused, it returns why and takes nothing.
func (l *messageLimits) allow(now time.Time, person, addr string, anonymous bool) (refused string) {
	undo, ok := l.person.take(person, now)
	if !ok {
		return "more messages a second than one person may send; wait a moment and send it again"
	}
	if !anonymous {
		return ""
	}
	if _, ok := l.anon.take(addr, now); !ok {
		if undo != nil {
			undo.CancelAt(now)
		}
		return "more messages a second than anonymous visitors from your address may send; wait a moment and send it again"
	}
	return ""
}

// remoteIP is the address a request came from: the TCP peer's IP, never
// a header a client can write. An IPv4 address in IPv6 form counts as
// IPv4.
func remoteIP(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return ap.Addr().Unmap().WithZone("").String()
}

// peekClientID returns the client_id of a frame that will not be decoded
// in full (one a rate limit refused, perhaps cut short at the frame
// limit): the value of a top-level "client_id" string found before the
// frame ends or stops being JSON. It returns "" when there is none or it
// is longer than maxClientIDLen.
func peekClientID(data []byte) string {
	d := json.NewDecoder(bytes.NewReader(data))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return ""
		}
		key, _ := t.(string)
		if key != "client_id" {
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return ""
			}
			continue
		}
		v, err := d.Token()
		if err != nil {
			return ""
		}
		id, _ := v.(string)
		if len(id) > maxClientIDLen {
			return ""
		}
		return id
	}
	return ""
}
