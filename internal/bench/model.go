package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// modelFigures are what the model phase measured over its window.
type modelFigures struct {
	res loadResult
	// use is the machine's, the gateway's and this process's CPU (the
	// load client and the fake model server together) over the window.
	use usage
	// served is the fake server's own count over the window.
	served modelReading
}

// modelTurns measures the path real bots take: an openai bot whose
// server is the bench's fake model, answering each request after
// opts.modelLatency, and opts.visitors widget visitors, each its own
// anonymous /ws connection in its private chat with the bot, each sending
// its next message when the reply to the last arrives. The visitors then
// wait on the model nearly all the time, so their ideal rate is
// visitors / latency; what the gateway adds to each turn, in time or by
// running out of CPU, shows as the distance to it.
func (b *bench) modelTurns(ctx context.Context) error {
	n, latency := b.opts.visitors, b.opts.modelLatency
	model, err := startModel(latency)
	if err != nil {
		return fmt.Errorf("fake model server: %w", err)
	}
	f, err := b.measureModel(ctx, model)
	if cerr := model.close(); err == nil && cerr != nil {
		err = fmt.Errorf("fake model server: %w", cerr)
	}
	if err != nil {
		return err
	}

	r := &f.res
	if r.failures > 0 {
		b.fail("model turns", fmt.Errorf("%d failed turns, e.g. %v", r.failures, r.firstFailure))
	} else if r.completed == 0 {
		b.fail("model turns", errNoAnswers)
	}
	failed := r.failures > 0 || r.completed == 0
	got := r.throughput()
	ideal := float64(n) / latency.Seconds()
	b.rows = append(b.rows,
		row{
			name:     fmt.Sprintf("model turns/s (openai brain, %s visitors)", thousands(int64(n))),
			value:    rate(got),
			baseline: fmt.Sprintf("ideal %s = %s / %s (gateway = %s)", rate(ideal), thousands(int64(n)), msShort(latency), share(got, ideal)),
			target:   fmt.Sprintf("≥ %.0f%% of ideal", 100*targetModelShare),
			verdict:  b.target(got >= targetModelShare*ideal, failed),
		},
		row{
			name:     "model turn latency p50 / p99",
			value:    ms(quantile(r.latencies, 0.5)) + " / " + ms(quantile(r.latencies, 0.99)),
			baseline: "model " + ms(latency),
			target:   "—",
			verdict:  "—",
		},
	)
	cpu := row{name: "gateway CPU per model turn", value: "no CPU reading", baseline: "—", target: "—", verdict: "—"}
	if r.completed > 0 {
		cpu.value = fmt.Sprintf("%.0f µs", microsEach(f.use.server, r.completed))
	}
	if b.scriptCPU > 0 {
		cpu.baseline = fmt.Sprintf("script message %.0f µs", float64(b.scriptCPU)/float64(time.Microsecond))
	}
	b.rows = append(b.rows, cpu)
	b.modelNotes(f, ideal)
	return nil
}

// measureModel runs the model phase's closed loop on a fresh gateway
// configured with model as its bot's server, and reads the CPU and the
// fake server's counters at the start and the end of the measured window.
func (b *bench) measureModel(ctx context.Context, model *modelServer) (modelFigures, error) {
	var f modelFigures
	gw, err := startGateway(ctx, b.bin, b.tmp, modelBots(model.baseURL()))
	if err != nil {
		return f, err
	}
	defer func() {
		if stopErr := gw.stop(); stopErr != nil {
			b.note("gateway shutdown after the model phase: %v", stopErr)
		}
	}()
	b.progress("gateway: %d visitors of an openai bot (model %s), %s warm-up, %s window",
		b.opts.visitors, b.opts.modelLatency, b.opts.modelWarm, b.opts.duration)
	conns, err := dialAll(ctx, gw.addr, b.opts.visitors, true)
	if err != nil {
		return f, err
	}
	defer closeAll(conns)

	// The window's readings are taken on time by goroutines of their own
	// while the loop runs.
	s := newSchedule(b.opts.modelWarm, b.opts.duration)
	var use [2]usage
	var served [2]modelReading
	var errs [2]error
	var readings sync.WaitGroup
	for i, at := range []time.Time{s.warm, s.end} {
		readings.Go(func() {
			time.Sleep(time.Until(at))
			use[i], errs[i] = readUsage(gw)
			served[i] = model.read()
		})
	}
	f.res = closedLoop(conns, modelBot, s)
	readings.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return f, err
	}
	f.use = use[1].since(use[0])
	f.served = served[1].sub(served[0])
	if f.res.failures > 0 {
		f.res.firstFailure = fmt.Errorf("%w\n%s", f.res.firstFailure, gw.logTail())
	}
	return f, nil
}

// modelNotes explains the model phase's figures: where each turn's time
// beyond the model's went, and who used the CPUs.
func (b *bench) modelNotes(f modelFigures, ideal float64) {
	r, u, s := &f.res, f.use, f.served
	latency := b.opts.modelLatency
	b.note("model: an openai bot against a fake OpenAI-compatible server in the bench process that holds each POST /v1/chat/completions %s, then answers as a stream (a role chunk, a chunk per word, finish, usage, [DONE]) or, asked without \"stream\", as one JSON completion; the %s visitors connected first, sent their first messages over a %s warm-up, and the window is %s.",
		msShort(latency), thousands(int64(b.opts.visitors)), b.opts.modelWarm, b.opts.duration)
	if len(r.latencies) > 0 {
		mean := meanOf(r.latencies)
		b.note("model: a turn is send → the bot's reply frame: mean %s (%s visitors / mean = %s), p90 %s, p99.9 %s, max %s; beyond the model's %s, the rest of the path (gateway, loopback, load client) took p50 %s, p99 %s.",
			ms(mean), thousands(int64(b.opts.visitors)), rate(float64(b.opts.visitors)/mean.Seconds()),
			ms(quantile(r.latencies, 0.9)), ms(quantile(r.latencies, 0.999)), ms(quantile(r.latencies, 1)),
			msShort(latency), ms(quantile(r.latencies, 0.5)-latency), ms(quantile(r.latencies, 0.99)-latency))
	}
	if r.unanswered > 0 {
		b.note("model: %s turns were still unanswered 10 s after the window.", thousands(int64(r.unanswered)))
	}
	if s.requests > 0 {
		b.note("model: in the window the fake server answered %s requests (%s streamed), held each %s on average from reading it to writing the answer, and accepted %s new connections from the gateway (%.2f per request; a client that keeps its connections alive opens about one per visitor, once).",
			thousands(s.requests), thousands(s.streamed), ms(s.held/time.Duration(s.requests)), thousands(s.conns), float64(s.conns)/float64(s.requests))
	}
	if s.refused > 0 {
		b.note("model: the fake server refused %s requests in the window as not chat completions.", thousands(s.refused))
	}
	b.note("model: over the window the machine's CPUs were %s.", u.split("gateway", "bench process (load client and fake model)"))
	if n := r.completed; n > 0 && u.wall > 0 && u.busy+u.idle > 0 {
		gw, bench := microsEach(u.server, n), microsEach(u.client, n)
		cpus := float64(u.busy+u.idle) / float64(u.wall)
		b.note("model: per turn in the window, %.0f µs of the gateway's CPU and %.0f µs of the bench process's: with the %.0f CPUs busy on the two alone, about %s (the ideal is %s). The script figure beside it is over its whole closed loops, warm-up included.",
			gw, bench, cpus, rate(cpus*1e6/(gw+bench)), rate(ideal))
	}
}

// meanOf is the mean of d; zero when d is empty.
func meanOf(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

// msShort formats a whole number of milliseconds without decimals: the
// configured latency reads "200 ms", a measured one keeps ms's decimals.
func msShort(d time.Duration) string {
	return fmt.Sprintf("%g ms", float64(d)/float64(time.Millisecond))
}
