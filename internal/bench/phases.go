package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// The phases of a run. Each starts the servers it needs (a fresh process,
// so one phase's garbage and database do not colour the next) and appends
// its rows in the table's order.

// The targets of issue 22, each judged against a figure of the same run.
const (
	// targetModelShare is the model phase's turns/s as a share of the
	// ideal, visitors / model latency: what the visitors would reach if
	// the gateway added nothing to the model's time.
	targetModelShare = 0.95
	targetThroughput = 5000 // script messages/s through /ws, each one stored
	targetP99        = 20 * time.Millisecond
	targetIdleBytes  = 32 * 1024
	targetDelegation = 5 * time.Millisecond
	targetStartup    = 300 * time.Millisecond
	// targetRunTime bounds one full run, from start to table.
	targetRunTime = 3 * time.Minute
)

// loadFigures are the closed- and open-loop results against one server,
// and what each used.
type loadFigures struct {
	closed, open       loadResult
	closedUse, openUse usage
	// settle is how long the server took to go idle between the phases.
	settle time.Duration
}

// onBoth measures a fresh echo server and a fresh gateway, each stopped
// after, the echo server first unless gatewayFirst; gateway tells
// measure which it has. A gateway's error carries the end of its log,
// and its unclean shutdown is noted after what (a phase's name) it was
// measuring.
func onBoth[T any](ctx context.Context, b *bench, what string, gatewayFirst bool, measure func(s *server, gateway bool) (T, error)) (echo, gw T, err error) {
	measureEcho := func() error {
		es, err := startEcho(ctx, b.tmp)
		if err != nil {
			return err
		}
		echo, err = measure(es, false)
		es.stop()
		if err != nil {
			return fmt.Errorf("echo: %w", err)
		}
		return nil
	}
	measureGateway := func() error {
		gs, err := startGateway(ctx, b.bin, b.tmp, scriptBots)
		if err != nil {
			return err
		}
		gw, err = measure(gs, true)
		if stopErr := gs.stop(); stopErr != nil {
			b.note("gateway shutdown after %s: %v", what, stopErr)
		}
		if err != nil {
			return fmt.Errorf("gateway: %w\n%s", err, gs.logTail())
		}
		return nil
	}
	order := []func() error{measureEcho, measureGateway}
	if gatewayFirst {
		order[0], order[1] = order[1], order[0]
	}
	for _, m := range order {
		if err := m(); err != nil {
			return echo, gw, err
		}
	}
	return echo, gw, nil
}

// roundUse sums up a gateway's closed loop: its CPU per answered
// message and how busy the machine was.
func (f *loadFigures) roundUse() string {
	u := f.closedUse
	s := "no CPU reading"
	if n := f.closed.answers; n > 0 {
		s = fmt.Sprintf("%.0f µs per answer", microsEach(u.server, n))
	}
	if total := u.busy + u.idle; total > 0 {
		s += fmt.Sprintf(", CPUs %.0f%% busy", u.pct(u.busy))
	}
	return s
}

// add adds o's closed loop (a later round's) to f's.
func (f *loadFigures) add(o loadFigures) {
	f.closed.add(o.closed)
	f.closedUse = f.closedUse.plus(o.closedUse)
}

// measureLoad runs the throughput phase against s, and the fixed-rate
// phase after it when open is set.
func (b *bench) measureLoad(ctx context.Context, s *server, hello, open bool) (loadFigures, error) {
	return b.measureSpread(ctx, []*server{s}, hello, open)
}

// measureSpread is measureLoad with the connections spread evenly over
// servers (gateways sharing one database); their CPU use is summed.
func (b *bench) measureSpread(ctx context.Context, servers []*server, hello, open bool) (loadFigures, error) {
	var f loadFigures
	name := servers[0].name
	if len(servers) > 1 {
		name = fmt.Sprintf("%d %ss", len(servers), name)
	}
	b.progress("%s: closed loop, %d connections, %s", name, b.opts.conns, b.opts.duration)
	conns, err := dialSpread(ctx, servers, b.opts.conns, hello)
	if err != nil {
		return f, err
	}
	u0, err := readUsageAll(servers)
	if err != nil {
		return f, err
	}
	f.closed = closedLoop(conns, "mattyatlas", newSchedule(b.opts.duration/5, b.opts.duration-b.opts.duration/5))
	u1, err := readUsageAll(servers)
	if err != nil {
		return f, err
	}
	f.closedUse = u1.since(u0)
	closeAll(conns)
	if !open {
		return f, nil
	}
	for _, s := range servers {
		settle, err := s.waitIdle(10 * time.Second)
		if err != nil {
			return f, err
		}
		f.settle = max(f.settle, settle)
	}

	b.progress("%s: open loop, %.0f msg/s over %d connections, %s", name, b.opts.rate, b.opts.rateConns, b.opts.duration)
	conns, err = dialSpread(ctx, servers, b.opts.rateConns, hello)
	if err != nil {
		return f, err
	}
	if u0, err = readUsageAll(servers); err != nil {
		return f, err
	}
	f.open = openLoop(conns, "mattyatlas", b.opts.rate, b.opts.duration)
	if u1, err = readUsageAll(servers); err != nil {
		return f, err
	}
	f.openUse = u1.since(u0)
	closeAll(conns)
	return f, nil
}

// dialSpread opens n connections, spread evenly over servers.
func dialSpread(ctx context.Context, servers []*server, n int, hello bool) ([]*websocket.Conn, error) {
	var conns []*websocket.Conn
	for i, s := range servers {
		k := n / len(servers)
		if i < n%len(servers) {
			k++
		}
		c, err := dialAll(ctx, s.addr, k, hello)
		if err != nil {
			closeAll(conns)
			return nil, err
		}
		conns = append(conns, c...)
	}
	return conns, nil
}

// readUsageAll reads the machine, this process and servers, whose CPU
// time is summed as the server's.
func readUsageAll(servers []*server) (usage, error) {
	u, err := readUsage(servers[0])
	if err != nil {
		return u, err
	}
	for _, s := range servers[1:] {
		t, err := s.cpuTime()
		if err != nil {
			return u, err
		}
		u.server += t
	}
	return u, nil
}

// webLoad measures throughput and latency through /ws, the echo server
// and the gateway with the same client. The closed loop alternates
// between them, each round a fresh process of each, so that the
// machine's speed, which drifts on a shared VM, weighs on both alike; the
// fixed-rate phase follows the last round's closed loop.
func (b *bench) webLoad(ctx context.Context) error {
	var e, g loadFigures
	var rounds []string
	emptyRound := false
	for r := range b.opts.rounds {
		last := r == b.opts.rounds-1
		// Every other round runs the gateway first, so that neither
		// server always runs second.
		er, gr, err := onBoth(ctx, b, "load", r%2 == 1, func(s *server, gateway bool) (loadFigures, error) {
			return b.measureLoad(ctx, s, gateway, last)
		})
		if err != nil {
			return err
		}
		// A round without answers fails the figure, even when the others
		// make up for it in the sums. (Failed messages are counted over
		// all rounds, below.)
		for _, x := range []struct {
			who string
			r   *loadResult
		}{{"echo", &er.closed}, {"gateway", &gr.closed}} {
			if x.r.completed == 0 && x.r.failures == 0 {
				b.fail(fmt.Sprintf("%s closed loop, round %d", x.who, r+1), errNoAnswers)
				emptyRound = true
			}
		}
		rounds = append(rounds, fmt.Sprintf("echo %s, gateway %s (%s; %s)", rate(er.closed.throughput()), rate(gr.closed.throughput()),
			share(gr.closed.throughput(), er.closed.throughput()), gr.roundUse()))
		if r == 0 {
			e, g = er, gr
		} else {
			e.add(er)
			g.add(gr)
		}
		if last {
			e.open, e.openUse, e.settle = er.open, er.openUse, er.settle
			g.open, g.openUse, g.settle = gr.open, gr.openUse, gr.settle
		}
	}

	// (A closed loop without answers failed its round, above.)
	for _, x := range []struct {
		who  string
		r    *loadResult
		open bool
	}{{"echo closed loop", &e.closed, false}, {"echo open loop", &e.open, true}, {"gateway closed loop", &g.closed, false}, {"gateway open loop", &g.open, true}} {
		if x.r.failures > 0 {
			b.fail(x.who, fmt.Errorf("%d failed messages, e.g. %v", x.r.failures, x.r.firstFailure))
		} else if x.open && x.r.completed == 0 {
			b.fail(x.who, errNoAnswers)
		}
	}

	gt, et := g.closed.throughput(), e.closed.throughput()
	b.web = g
	if n := g.closed.answers; n > 0 {
		b.scriptCPU = g.closedUse.server / time.Duration(n)
	}
	b.rows = append(b.rows,
		row{
			name:     "throughput /ws (script brain, SQLite)",
			value:    rate(gt),
			baseline: fmt.Sprintf("echo %s (gateway = %s)", rate(et), share(gt, et)),
			target:   fmt.Sprintf("≥ %s/s", thousands(targetThroughput)),
			verdict:  b.target(gt >= targetThroughput, g.closed.failures > 0 || emptyRound),
		},
		row{
			name:     "latency p50 / p99 at that load",
			value:    ms(quantile(g.closed.latencies, 0.5)) + " / " + ms(quantile(g.closed.latencies, 0.99)),
			baseline: "echo " + ms(quantile(e.closed.latencies, 0.5)) + " / " + ms(quantile(e.closed.latencies, 0.99)),
			target:   "—",
			verdict:  "—",
		},
	)
	p99 := quantile(g.open.latencies, 0.99)
	b.rows = append(b.rows, row{
		name:     fmt.Sprintf("latency p50 / p99 at %s msg/s offered", thousands(int64(b.opts.rate))),
		value:    openLatency(&g.open),
		baseline: "echo " + openLatency(&e.open),
		target:   "p99 < " + ms(targetP99),
		verdict:  b.target(p99 < targetP99, g.open.failures > 0 || g.open.completed == 0),
	})
	for _, x := range []struct {
		who string
		r   *loadResult
	}{{"echo", &e.open}, {"gateway", &g.open}} {
		if x.r.unanswered > 0 {
			b.note("fixed load: %s left %s of %s measured messages unanswered 5 s after the phase (it cannot keep up); they count at their wait so far, so \"≥\".",
				x.who, thousands(int64(x.r.unanswered)), thousands(int64(len(x.r.latencies))))
		}
		if len(x.r.latencies) > 0 {
			b.note("fixed load, %s: p90 %s, p95 %s, p99.9 %s, max %s.", x.who,
				ms(quantile(x.r.latencies, 0.9)), ms(quantile(x.r.latencies, 0.95)),
				ms(quantile(x.r.latencies, 0.999)), ms(quantile(x.r.latencies, 1)))
		}
	}
	b.note("fixed load starts once the server is idle after the closed loop: the echo server after %s, the gateway after %s.",
		e.settle.Round(10*time.Millisecond), g.settle.Round(10*time.Millisecond))
	ceiling := float64(b.opts.conns) * float64(time.Second) / float64(sendGap)
	b.note("throughput: closed loop over %d connections, one message in flight each, at most %.0f msg/s per connection (the widget allows 20 frames/s): client ceiling %s.",
		b.opts.conns, float64(time.Second)/float64(sendGap), rate(ceiling))
	for _, x := range []struct {
		who string
		f   *loadFigures
	}{{"echo", &e}, {"gateway", &g}} {
		if n := x.f.closed.answers; n > 0 {
			b.note("throughput: the %s process used %.1f CPU-seconds in the closed loops, %.0f µs per answered message (%s answers, warm-up included).",
				x.who, x.f.closedUse.server.Seconds(), microsEach(x.f.closedUse.server, n), thousands(int64(n)))
		}
		b.note("throughput: over the %s's closed loops the machine's CPUs were %s.", x.who, x.f.closedUse.split(x.who, "load client"))
		if c := x.f.closedUse.ceiling(x.who, x.f.closed.answers); c != "" {
			b.note("throughput: %s (the CPU and the answers of the whole phase, warm-up included).", c)
		}
	}
	b.note("fixed load: over the gateway's open loop the machine's CPUs were %s.", g.openUse.split("gateway", "load client"))
	if et >= 0.9*ceiling {
		b.note("throughput: the echo figure is at the client ceiling, so it understates the echo server; rerun with more -conns.")
	}
	b.note("throughput: %d rounds of %s closed loops of the echo server and the gateway, the gateway first in every other round, each a fresh process; the figures above are over all of them, and by round: %s.",
		b.opts.rounds, b.opts.duration, strings.Join(rounds, "; "))
	b.note("latency is send → reply frame (echo: the echoed frame); at fixed load it is measured from each send's scheduled time (open loop, %d connections).", b.opts.rateConns)
	return nil
}

// idleMemory measures the resident memory of idle connections on the
// gateway and on the echo server, each a fresh process.
func (b *bench) idleMemory(ctx context.Context) error {
	n := b.opts.idle
	e, g, err := onBoth(ctx, b, "idle connections", false, func(s *server, gateway bool) (float64, error) {
		b.progress("%s: %d idle connections", s.name, n)
		return idleMemory(ctx, s, n, gateway)
	})
	if err != nil {
		return err
	}
	b.rows = append(b.rows, row{
		name:     fmt.Sprintf("memory per idle /ws connection at %s", thousands(int64(n))),
		value:    kib(g),
		baseline: "echo " + kib(e),
		target:   "< " + kib(targetIdleBytes),
		verdict:  b.target(g < targetIdleBytes, false),
	})
	b.note("memory: growth of the server's VmRSS with the connections open (after 1 s), divided by their number.")
	return nil
}

// delegation measures the hand-off overhead on a fresh gateway.
func (b *bench) delegation(ctx context.Context) error {
	gw, err := startGateway(ctx, b.bin, b.tmp, scriptBots)
	if err != nil {
		return err
	}
	defer gw.stop()
	b.progress("gateway: %d direct messages and %d hand-offs", b.opts.handoffs, b.opts.handoffs)
	d, err := delegationOverhead(ctx, gw.addr, b.opts.handoffs)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, gw.logTail())
	}
	over := d.handoff - d.direct
	b.rows = append(b.rows, row{
		name:     fmt.Sprintf("delegation overhead (median of %d)", d.samples),
		value:    ms(over),
		baseline: "direct " + ms(d.direct) + ", hand-off " + ms(d.handoff),
		target:   "< " + ms(targetDelegation),
		verdict:  b.target(over < targetDelegation, false),
	})
	b.note("delegation: user → Matty \"tell finn to …\" → Finn's reply frame, minus user → Finn → reply frame; each sample a new visitor.")
	return nil
}

// startup measures exec → ready /healthz for the gateway and the echo
// server.
func (b *bench) startup(ctx context.Context) error {
	b.progress("start-up: %d runs each", b.opts.startups)
	g, e, err := startupTimes(ctx, b.bin, b.tmp, b.opts.startups)
	if err != nil {
		return err
	}
	b.rows = append(b.rows, row{
		name:     fmt.Sprintf("start-up, exec → /healthz 200 (median of %d)", b.opts.startups),
		value:    ms(g),
		baseline: "echo " + ms(e),
		target:   "< " + ms(targetStartup),
		verdict:  b.target(g < targetStartup, false),
	})
	b.note("start-up: a new config dir and database each time (migrations included), /healthz polled every 1 ms.")
	return nil
}

// openLatency formats an open-loop phase's p50 / p99, marking a quantile
// that falls among unanswered sends as a lower bound.
func openLatency(r *loadResult) string {
	q := func(p float64) string {
		v := ms(quantile(r.latencies, p))
		if r.lowerBound(p) {
			return "≥ " + v
		}
		return v
	}
	return q(0.5) + " / " + q(0.99)
}
