// Command bench measures Switchboard the way an operator would judge it
// and prints one table from one run: each figure next to a baseline
// measured in the same run on the same machine, and the target of
// issue 22.
//
//	go run -tags sqlite_fts5 ./internal/bench          # the full run (about 70 s on 2 CPUs)
//	go run -tags sqlite_fts5 ./internal/bench -quick   # a smoke test: small counts
//
// The gateway is the real binary (built with `go build -tags
// sqlite_fts5` unless -bin names one), started as a child process on a generated config with SQLite
// persistence; the load client talks to it over loopback /ws. The model
// phase gives it an openai bot whose server is a fake OpenAI-compatible
// one inside this program, answering after a fixed latency; its baseline
// is the rate the visitors would reach if the gateway took no time. The
// other phases use script bots; their WebSocket baseline is a bare
// gorilla/websocket echo server, this same program re-executed as a
// child, driven by the same client code. Progress goes to standard error,
// the table to standard output.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"time"
)

func main() {
	if echoRole() {
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the bench's knobs; flags set them.
type options struct {
	quick    bool
	duration time.Duration
	// visitors drive the model phase, each with one turn in flight; the
	// fake model answers each request after modelLatency; the phase
	// measures duration after a warm-up of modelWarm.
	visitors     int
	modelLatency time.Duration
	modelWarm    time.Duration
	// conns drive the closed-loop throughput phase, which alternates
	// rounds times between the echo server and the gateway.
	conns, rounds int
	// rate is the offered load of the open-loop phase, spread over
	// rateConns connections.
	rate      float64
	rateConns int
	// idle is the number of idle connections for the memory figure.
	idle      int
	handoffs  int
	startups  int
	bin       string
	keepFiles bool
	// only, when set, names the phases to run (see phaseNames).
	only map[string]bool
}

// fullOptions and quickOptions are the two presets; flags override them.
var (
	fullOptions = options{duration: 5 * time.Second, visitors: 2000, modelLatency: 200 * time.Millisecond, modelWarm: 2 * time.Second,
		conns: 3000, rounds: 3, rate: 2000, rateConns: 200, idle: 5000, handoffs: 50, startups: 5}
	quickOptions = options{quick: true, duration: 600 * time.Millisecond, visitors: 20, modelLatency: 200 * time.Millisecond, modelWarm: 400 * time.Millisecond,
		conns: 20, rounds: 2, rate: 100, rateConns: 10, idle: 50, handoffs: 3, startups: 1}
)

// phaseNames are the phases in the order they run, for -only.
var phaseNames = []string{"web", "postgres", "model", "memory", "delegation", "startup"}

// run parses the command line, runs the bench and prints the table.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "small counts and short phases: a smoke test, not a measurement")
	duration := fs.Duration("duration", 0, "length of each timed phase (default 5s, 600ms with -quick)")
	visitors := fs.Int("visitors", 0, "widget visitors of the model phase (default 2000, 20 with -quick)")
	modelLatency := fs.Duration("model-latency", 0, "the fake model's time per request (default 200ms)")
	conns := fs.Int("conns", 0, "connections for the throughput phase (default 3000)")
	rate := fs.Float64("rate", 0, "messages per second offered in the fixed-load phase (default 2000; the target is for 2000)")
	rounds := fs.Int("rounds", 0, "closed loops alternating echo and gateway for the throughput figure (default 3, 2 with -quick)")
	idle := fs.Int("idle", 0, "idle connections for the memory figure (default 5000)")
	bin := fs.String("bin", "", "gateway binary to measure (default: go build ./cmd/switchboard into a temp dir)")
	keep := fs.Bool("keep", false, "keep the temp dir (configs, databases, server logs)")
	only := fs.String("only", "", "comma-separated phases to run: "+strings.Join(phaseNames, ", ")+" (default all)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts := fullOptions
	if *quick {
		opts = quickOptions
	}
	if *duration > 0 {
		opts.duration = *duration
	}
	if *visitors > 0 {
		opts.visitors = *visitors
	}
	if *rate > 0 {
		opts.rate = *rate
	}
	if *modelLatency > 0 {
		opts.modelLatency = *modelLatency
	}
	if *conns > 0 {
		opts.conns = *conns
	}
	if *rounds > 0 {
		opts.rounds = *rounds
	}
	if *idle > 0 {
		opts.idle = *idle
	}
	opts.bin, opts.keepFiles = *bin, *keep
	if *only != "" {
		opts.only = map[string]bool{}
		for p := range strings.SplitSeq(*only, ",") {
			p = strings.TrimSpace(p)
			if !slices.Contains(phaseNames, p) {
				fmt.Fprintf(stderr, "bench: -only: no phase %q (phases: %s)\n", p, strings.Join(phaseNames, ", "))
				return 2
			}
			opts.only[p] = true
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	b := &bench{opts: opts, log: stderr, loadBefore: loadAverage(), started: time.Now()}
	if err := b.run(ctx); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	b.runTimeNote()
	printTable(stdout, b.header(), b.rows, b.notes)
	if b.failed {
		return 1
	}
	return 0
}

// bench is one run: its options, scratch space, and the report so far.
type bench struct {
	opts   options
	log    io.Writer
	tmp    string
	bin    string
	rows   []row
	notes  []string
	failed bool
	// loadBefore is /proc/loadavg at the start: other work on the machine
	// skews every figure, so the header shows it.
	loadBefore string
	// started is when the run began; took lists how long the build and
	// each phase took, for the run-time note.
	started time.Time
	took    []string
	// scriptCPU is the gateway's CPU per answered message in the script
	// closed loop, the model phase's baseline for its CPU per turn.
	scriptCPU time.Duration
	// web is the gateway's figures on SQLite from the web phase, the
	// postgres phase's baseline (zero when the web phase did not run).
	web loadFigures
}

func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
}

// note adds a line under the table.
func (b *bench) note(format string, args ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

// fail records a figure that could not be measured properly.
func (b *bench) fail(figure string, err error) {
	b.failed = true
	b.note("ERROR in %s: %v", figure, err)
}

// target renders a verdict, or n/a in quick mode where counts are too
// small for the figures to mean anything.
func (b *bench) target(ok, failed bool) string {
	if b.opts.quick && !failed {
		return "n/a (quick)"
	}
	return verdict(ok, failed)
}

func (b *bench) run(ctx context.Context) error {
	limit, err := raiseFileLimit()
	if err != nil {
		return fmt.Errorf("raise RLIMIT_NOFILE: %w", err)
	}
	// The model phase holds two descriptors per visitor in this process
	// (its WebSocket and the fake server's end of the gateway's request)
	// and two in the gateway.
	if need := uint64(max(b.opts.idle, b.opts.conns, 2*b.opts.visitors) + 256); limit < need {
		return fmt.Errorf("RLIMIT_NOFILE hard limit %d is below the %d descriptors needed; raise it or use -idle/-conns/-visitors", limit, need)
	}
	b.tmp, err = os.MkdirTemp("", "switchboard-bench-")
	if err != nil {
		return err
	}
	if b.opts.keepFiles {
		b.progress("keeping %s", b.tmp)
	} else {
		defer os.RemoveAll(b.tmp)
	}
	b.bin = b.opts.bin
	if b.bin == "" {
		b.progress("building the gateway")
		t0 := time.Now()
		if b.bin, err = buildGateway(ctx, b.tmp); err != nil {
			return err
		}
		b.took = append(b.took, "build "+roundTime(time.Since(t0)).String())
	}

	// The web phase runs before the model phase, whose CPU per turn is
	// set beside the script path's.
	steps := map[string]func(context.Context) error{
		"web":        b.webLoad,
		"postgres":   b.postgresLoad,
		"model":      b.modelTurns,
		"memory":     b.idleMemory,
		"delegation": b.delegation,
		"startup":    b.startup,
	}
	for _, name := range phaseNames {
		if err := ctx.Err(); err != nil {
			return err
		}
		if b.opts.only != nil && !b.opts.only[name] {
			continue
		}
		t0 := time.Now()
		if err := steps[name](ctx); err != nil {
			b.fail(name, err)
		}
		b.took = append(b.took, name+" "+roundTime(time.Since(t0)).String())
		b.progress("%s phase took %s", name, roundTime(time.Since(t0)))
	}
	return ctx.Err()
}

// runTimeNote says how long the run took, judged against its target
// when every phase ran at full size.
func (b *bench) runTimeNote() {
	took := time.Since(b.started)
	judged := "the target, under " + minutes(targetRunTime) + ", is for a full run of every phase"
	if !b.opts.quick && b.opts.only == nil {
		judged = fmt.Sprintf("target under %s: %s", minutes(targetRunTime), verdict(took < targetRunTime, false))
	}
	b.note("run time: %s from start to table (%s); %s.", roundTime(took), strings.Join(b.took, ", "), judged)
}

// minutes formats d in minutes: "3 min".
func minutes(d time.Duration) string { return fmt.Sprintf("%g min", d.Minutes()) }

// roundTime rounds d for reading: to 0.1 s.
func roundTime(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }

// header describes the run and the machine.
func (b *bench) header() []string {
	mode := fmt.Sprintf("full run, %s per timed phase", b.opts.duration)
	if b.opts.quick {
		mode = fmt.Sprintf("QUICK smoke run (%s phases, tiny counts): figures are not measurements", b.opts.duration)
	}
	return []string{
		"Switchboard bench — " + time.Now().UTC().Format("2006-01-02 15:04 UTC") + ", " + mode,
		fmt.Sprintf("targets (issue 22): model turns ≥ %.0f%% of visitors / model latency; script /ws ≥ %s msg/s, p99 < %s at 2,000 msg/s offered; idle connection < %s; delegation overhead < %s; start-up < %s; a table run < %s",
			100*targetModelShare, thousands(targetThroughput), ms(targetP99), kib(targetIdleBytes), ms(targetDelegation), ms(targetStartup), minutes(targetRunTime)),
		fmt.Sprintf("machine: %d CPUs (%s), %s %s/%s; load average %s before, %s after",
			runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH, b.loadBefore, loadAverage()),
	}
}

// loadAverage is the 1-minute load average from /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
