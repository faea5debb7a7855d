package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// The load client speaks the /ws protocol (SPEC §7) the same way to the
// gateway and to the echo server: it sends `send` frames whose text ends
// in a sequence number and waits for the frame that answers each one. The
// gateway answers with the bot's `message` (the script brain's reply and
// the fake model's repeat the text, so they end in the same number); the
// echo server returns the `send` frame itself. Everything else (hello,
// typing, ack) is read and skipped: the gateway's extra frames are part of
// what a widget pays per message, so they count against the gateway.

// sendGap keeps a connection under the widget's limit (SPEC §7: more than
// 20 frames/s sustained is refused): it sends at most one message per
// sendGap, so the client's ceiling is 19 messages/s per connection.
const sendGap = time.Second / 19

// inFrame is the subset of server frames the client looks at.
type inFrame struct {
	Type       string `json:"type"`
	Bot        string `json:"bot"`
	Text       string `json:"text"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	PlatformID string `json:"platform_id"`
	Token      string `json:"token"`
	From       struct {
		Kind string `json:"kind"`
	} `json:"from"`
}

// sendFrame is a client `send` frame.
type sendFrame struct {
	Type     string `json:"type"`
	Bot      string `json:"bot"`
	Text     string `json:"text"`
	ClientID string `json:"client_id"`
}

// answer reports whether f answers a sent message, and which.
func answer(f *inFrame) (seq int, ok bool) {
	if !(f.Type == "message" && f.From.Kind == "bot") && f.Type != "send" {
		return 0, false
	}
	i := strings.LastIndexByte(f.Text, ' ')
	n, err := strconv.Atoi(f.Text[i+1:])
	return n, err == nil
}

// messageText is the text of message seq: a short, ordinary chat line.
func messageText(seq int) string {
	return "please have a look at the deploy notes, item " + strconv.Itoa(seq)
}

func sendMessage(ws *websocket.Conn, bot string, seq int) error {
	n := strconv.Itoa(seq)
	return ws.WriteJSON(sendFrame{Type: "send", Bot: bot, Text: messageText(seq), ClientID: n})
}

var dialer = &websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 4096, WriteBufferSize: 4096}

// dialOne opens one /ws connection; with hello it also reads the
// gateway's first frame.
func dialOne(ctx context.Context, addr string, hello bool) (*websocket.Conn, inFrame, error) {
	ws, _, err := dialer.DialContext(ctx, "ws://"+addr+"/ws", nil)
	if err != nil {
		return nil, inFrame{}, err
	}
	var h inFrame
	if hello {
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := ws.ReadJSON(&h); err != nil || h.Type != "hello" {
			ws.Close()
			return nil, h, fmt.Errorf("hello: %v (got %q)", err, h.Type)
		}
		ws.SetReadDeadline(time.Time{})
	}
	return ws, h, nil
}

// dialAll opens n connections, a few dozen at a time so the listen
// backlog never overflows.
func dialAll(ctx context.Context, addr string, n int, hello bool) ([]*websocket.Conn, error) {
	conns := make([]*websocket.Conn, n)
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(n, 32) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				ws, _, err := dialOne(ctx, addr, hello)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("dial %d of %d: %w", i+1, n, err)
					}
					mu.Unlock()
					return
				}
				conns[i] = ws
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		closeAll(conns)
		return nil, firstErr
	}
	return conns, nil
}

func closeAll(conns []*websocket.Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// loadResult is what a load phase measured.
type loadResult struct {
	// completed counts answers that arrived inside the measured window;
	// answers counts every answer of the phase, warm-up included.
	completed, answers int
	window             time.Duration
	latencies          []time.Duration
	// failures counts error frames, write errors and broken connections;
	// firstFailure describes one.
	failures     int
	firstFailure error
	// unanswered counts (open loop) measured sends with no answer within
	// 5 s of the phase's end: the server fell behind the offered load.
	// Their latencies are in latencies as lower bounds (the wait so far).
	unanswered int
}

// lowerBound reports whether quantile q of the latencies may be one of
// the unanswered sends' lower bounds rather than a measurement.
func (r *loadResult) lowerBound(q float64) bool {
	return float64(r.unanswered) > (1-q)*float64(len(r.latencies))
}

// add adds o, a later phase's result, to r: a phase as long as both.
func (r *loadResult) add(o loadResult) {
	r.completed += o.completed
	r.answers += o.answers
	r.window += o.window
	r.latencies = append(r.latencies, o.latencies...)
	r.failures += o.failures
	if r.firstFailure == nil {
		r.firstFailure = o.firstFailure
	}
	r.unanswered += o.unanswered
}

// throughput is the answers per second of the measured window.
func (r *loadResult) throughput() float64 {
	if r.window <= 0 {
		return 0
	}
	return float64(r.completed) / r.window.Seconds()
}

// merge adds one connection's figures under mu.
func (r *loadResult) merge(mu *sync.Mutex, answers, completed int, lat []time.Duration, failures int, err error) {
	mu.Lock()
	defer mu.Unlock()
	r.answers += answers
	r.completed += completed
	r.latencies = append(r.latencies, lat...)
	r.failures += failures
	if r.firstFailure == nil && err != nil {
		r.firstFailure = err
	}
}

// addUnanswered records n sends left without an answer under mu.
func (r *loadResult) addUnanswered(mu *sync.Mutex, n int) {
	mu.Lock()
	r.unanswered += n
	mu.Unlock()
}

// schedule is a closed loop's timetable: every connection sends its
// first message at a random moment of the warm-up, so that the window
// sees a steady state rather than the burst of every connection's first
// message at once, and the answers that arrive in the window after the
// warm-up are measured.
type schedule struct {
	start, warm, end time.Time
}

// newSchedule starts now: warm-up, then the measured window.
func newSchedule(warmUp, window time.Duration) schedule {
	start := time.Now()
	return schedule{start: start, warm: start.Add(warmUp), end: start.Add(warmUp + window)}
}

// closedLoop drives every connection with one message in flight at a time
// (send, wait for the answer, send the next no sooner than sendGap after
// the last) until s ends, and measures the answers that arrive in s's
// window. Throughput is then what the server sustains, up to the client's
// ceiling of len(conns)/sendGap.
func closedLoop(conns []*websocket.Conn, bot string, s schedule) loadResult {
	res := loadResult{window: s.end.Sub(s.warm)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ws := range conns {
		wg.Go(func() {
			time.Sleep(rand.N(s.warm.Sub(s.start)))
			var lat []time.Duration
			completed, answers := 0, 0
			ws.SetReadDeadline(s.end.Add(10 * time.Second))
			for seq := 0; time.Now().Before(s.end); seq++ {
				t0 := time.Now()
				if err := sendMessage(ws, bot, seq); err != nil {
					res.merge(&mu, answers, completed, lat, 1, fmt.Errorf("write: %w", err))
					return
				}
				if err := awaitAnswer(ws, seq); err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						// Still queued 10 s after the phase: overload,
						// not an error; the window's count already says it.
						res.addUnanswered(&mu, 1)
						err = nil
					}
					res.merge(&mu, answers, completed, lat, boolInt(err != nil), err)
					return
				}
				answers++
				// Count what arrives inside the window, whenever it was
				// sent: under overload latencies exceed the window.
				if now := time.Now(); now.After(s.warm) && !now.After(s.end) {
					completed++
					lat = append(lat, now.Sub(t0))
				}
				if rest := sendGap - time.Since(t0); rest > 0 {
					time.Sleep(rest)
				}
			}
			res.merge(&mu, answers, completed, lat, 0, nil)
		})
	}
	wg.Wait()
	return res
}

// awaitAnswer reads frames until the answer to seq arrives.
func awaitAnswer(ws *websocket.Conn, seq int) error {
	for {
		var f inFrame
		if err := ws.ReadJSON(&f); err != nil {
			return fmt.Errorf("waiting for answer %d: %w", seq, err)
		}
		if f.Type == "error" {
			return fmt.Errorf("error frame %s: %s", f.Code, f.Message)
		}
		n, ok := answer(&f)
		switch {
		case ok && n == seq:
			return nil
		case ok:
			return fmt.Errorf("answer %d while waiting for %d", n, seq)
		case f.Type == "message" && f.From.Kind == "bot":
			// Every reply of the bench's bots names its message, so this
			// is something else: the apology of a turn whose brain failed.
			return fmt.Errorf("waiting for answer %d, the bot said %q", seq, f.Text)
		}
	}
}

// openLoop offers a fixed total rate (messages/s), spread evenly over the
// connections, for d, whatever the answers do, and measures each answer's
// latency from the moment its send was scheduled (so a stalled sender
// does not hide queueing: no coordinated omission). Sends scheduled in the
// first d/5 are warm-up.
func openLoop(conns []*websocket.Conn, bot string, perSecond float64, d time.Duration) loadResult {
	interval := time.Duration(float64(len(conns)) / perSecond * float64(time.Second))
	start := time.Now()
	warm, end := start.Add(d/5), start.Add(d)
	res := loadResult{window: end.Sub(warm)}
	slots := int(d/interval) + 2
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ws := range conns {
		// scheduled[k] is when message k was due, in Unix nanoseconds;
		// written by the sender before the send, read by the reader after
		// the answer.
		scheduled := make([]atomic.Int64, slots)
		var sent, answered atomic.Int64
		var senderDone atomic.Bool
		var failure atomic.Pointer[error]
		phase := rand.N(interval)
		wg.Go(func() {
			defer func() {
				senderDone.Store(true)
				// Everything answered already: wake the reader, which may
				// be waiting for a frame that will not come.
				if answered.Load() == sent.Load() {
					ws.SetReadDeadline(time.Now())
				}
			}()
			for k := 0; k < slots; k++ {
				due := start.Add(phase + time.Duration(k)*interval)
				if !due.Before(end) {
					return
				}
				time.Sleep(time.Until(due))
				scheduled[k].Store(due.UnixNano())
				if err := sendMessage(ws, bot, k); err != nil {
					err = fmt.Errorf("write: %w", err)
					failure.Store(&err)
					return
				}
				sent.Add(1)
			}
		})
		wg.Go(func() {
			var lat []time.Duration
			completed, failures := 0, 0
			got := make([]bool, slots)
			var err error
			ws.SetReadDeadline(end.Add(5 * time.Second))
			for !(senderDone.Load() && answered.Load() == sent.Load()) {
				var f inFrame
				if rerr := ws.ReadJSON(&f); rerr != nil {
					if senderDone.Load() && answered.Load() == sent.Load() {
						break // woken by the sender: nothing is missing
					}
					var ne net.Error
					if !errors.As(rerr, &ne) || !ne.Timeout() {
						failures++
						err = fmt.Errorf("read: %w", rerr)
					}
					// Still unanswered: count them, with the wait so far
					// as a lower bound of their latency.
					missing := 0
					for k := range int(sent.Load()) {
						due := time.Unix(0, scheduled[k].Load())
						if !got[k] && !due.Before(warm) {
							missing++
							lat = append(lat, time.Since(due))
						}
					}
					res.addUnanswered(&mu, missing)
					break
				}
				if f.Type == "error" {
					failures++
					err = fmt.Errorf("error frame %s: %s", f.Code, f.Message)
					answered.Add(1) // the refused message gets no other answer
					continue
				}
				k, ok := answer(&f)
				if !ok || k < 0 || k >= slots || got[k] {
					continue
				}
				got[k] = true
				due := time.Unix(0, scheduled[k].Load())
				if !due.Before(warm) {
					completed++
					lat = append(lat, time.Since(due))
				}
				answered.Add(1)
			}
			answers := int(answered.Load())
			if p := failure.Load(); p != nil {
				failures++
				if err == nil {
					err = *p
				}
			}
			res.merge(&mu, answers, completed, lat, failures, err)
		})
	}
	wg.Wait()
	return res
}

// errNoAnswers marks a phase that measured nothing.
var errNoAnswers = errors.New("no answers measured")

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
