package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/internal/pgtest"
)

// TestMain lets the test binary serve as the echo server child, as the
// bench program itself does (startEcho re-executes os.Executable()).
func TestMain(m *testing.M) {
	if echoRole() {
		return
	}
	os.Exit(m.Run())
}

// TestBenchQuick runs `bench -quick` end to end — build, both servers,
// every phase — so the program cannot rot. It checks that every figure
// was measured and printed, never how fast anything was.
func TestBenchQuick(t *testing.T) {
	// The postgres phase needs a server: without one it is left out
	// (and, under CI=true, the subtest fails the run).
	args := []string{"-quick"}
	withPostgres := false
	t.Run("postgres server", func(t *testing.T) { pgtest.ServerURL(t); withPostgres = true })
	if !withPostgres {
		args = append(args, "-only", "web,model,memory,delegation,startup")
	}
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("bench -quick exited %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	for _, figure := range []string{
		"model turns/s (openai brain, 20 visitors)",
		"ideal 100/s = 20 / 200 ms",
		"model turn latency p50 / p99",
		"gateway CPU per model turn",
		"throughput /ws",
		"latency p50 / p99 at that load",
		"latency p50 / p99 at 100 msg/s offered",
		"memory per idle /ws connection",
		"delegation overhead",
		"start-up, exec → /healthz",
	} {
		if !strings.Contains(out, figure) {
			t.Errorf("no %q row in:\n%s", figure, out)
		}
	}
	for _, note := range []string{
		"targets (issue 22): model turns ≥ 95% of visitors / model latency; script /ws ≥ 5,000 msg/s",
		"model: a turn is send → the bot's reply frame",
		"model: in the window the fake server answered",
		"model: over the window the machine's CPUs were",
		"run time: ",
		"over the gateway's closed loops the machine's CPUs were",
		"2 rounds of 600ms closed loops of the echo server and the gateway, the gateway first in every other round",
		"CPUs busy on the two alone",
	} {
		if !strings.Contains(out, note) {
			t.Errorf("no note %q in:\n%s", note, out)
		}
	}
	if withPostgres {
		for _, figure := range []string{
			"throughput /ws (script brain, PostgreSQL)",
			"latency p50 / p99 at that load (PostgreSQL)",
			"latency p50 / p99 at 100 msg/s offered (PostgreSQL)",
			"throughput /ws (script brain, PostgreSQL, two instances)",
			"latency p50 / p99 at 100 msg/s offered (PostgreSQL, two instances)",
			"postgres: gateways on a throwaway PostgreSQL",
		} {
			if !strings.Contains(out, figure) {
				t.Errorf("no %q in:\n%s", figure, out)
			}
		}
	}
	if strings.Contains(out, "ERR") {
		t.Errorf("a figure failed:\n%s", out)
	}
	t.Logf("\n%s", out)
}

func TestSplit(t *testing.T) {
	p := usage{busy: 9 * time.Second, idle: time.Second, server: 6 * time.Second, client: 2 * time.Second}
	if got, want := p.split("gateway", "load client"), "90% busy: gateway 60%, load client 20%, the rest 10%"; got != want {
		t.Errorf("split = %q, want %q", got, want)
	}
	if got := (usage{}).split("echo", "load client"); got != "no CPU reading" {
		t.Errorf("empty split = %q", got)
	}
}

func TestCeiling(t *testing.T) {
	// 5 s on 2 CPUs; 10,000 answers at 180 µs of the server's and 20 µs
	// of the client's CPU each: 2 CPU-seconds a second / 200 µs.
	p := usage{wall: 5 * time.Second, busy: 9 * time.Second, idle: time.Second,
		server: 1800 * time.Millisecond, client: 200 * time.Millisecond}
	want := "per answered message, 180 µs of the gateway's CPU and 20 µs of the load client's: with the 2 CPUs busy on the two alone, about 10,000/s"
	if got := p.ceiling("gateway", 10000); got != want {
		t.Errorf("ceiling = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		name    string
		p       usage
		answers int
	}{
		{"no answers", p, 0},
		{"no CPU reading", usage{wall: time.Second}, 10},
		{"no wall time", usage{busy: time.Second, server: time.Second}, 10},
	} {
		if got := tt.p.ceiling("gateway", tt.answers); got != "" {
			t.Errorf("%s: ceiling = %q, want none", tt.name, got)
		}
	}
}

func TestQuantile(t *testing.T) {
	tests := []struct {
		in   []int
		q    float64
		want int
	}{
		{nil, 0.5, 0},
		{[]int{7}, 0.99, 7},
		{[]int{1, 2, 3, 4}, 0.5, 2},
		{[]int{4, 3, 2, 1}, 0.99, 4},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.9, 9},
	}
	for _, tc := range tests {
		d := make([]time.Duration, len(tc.in))
		for i, v := range tc.in {
			d[i] = time.Duration(v)
		}
		if got := quantile(d, tc.q); got != time.Duration(tc.want) {
			t.Errorf("quantile(%v, %v) = %d, want %d", tc.in, tc.q, got, tc.want)
		}
	}
}

func TestAnswer(t *testing.T) {
	tests := []struct {
		f    inFrame
		seq  int
		isOK bool
	}{
		{inFrame{Type: "message", Text: "Matty Atlas heard: " + messageText(12), From: fromBot()}, 12, true},
		{inFrame{Type: "send", Text: messageText(3)}, 3, true},
		{inFrame{Type: "message", Text: messageText(3)}, 0, false}, // a person's message, not an answer
		{inFrame{Type: "ack"}, 0, false},
		{inFrame{Type: "message", Text: "no number", From: fromBot()}, 0, false},
	}
	for _, tc := range tests {
		seq, ok := answer(&tc.f)
		if ok != tc.isOK || ok && seq != tc.seq {
			t.Errorf("answer(%+v) = %d, %v; want %d, %v", tc.f, seq, ok, tc.seq, tc.isOK)
		}
	}
}

func fromBot() (f struct {
	Kind string `json:"kind"`
}) {
	f.Kind = "bot"
	return f
}

func TestThousands(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%d) = %q, want %q", in, got, want)
		}
	}
}

// TestRoundsAdd: the rounds of the closed loop add up to one phase as
// long as all of them, so the throughput is over all the rounds.
func TestRoundsAdd(t *testing.T) {
	a := loadFigures{
		closed:    loadResult{completed: 100, answers: 120, window: 4 * time.Second, latencies: []time.Duration{1, 2}},
		closedUse: usage{wall: 5 * time.Second, server: time.Second},
	}
	b := loadFigures{
		closed:    loadResult{completed: 300, answers: 330, window: 4 * time.Second, latencies: []time.Duration{3}, failures: 1, firstFailure: errNoAnswers},
		closedUse: usage{wall: 5 * time.Second, server: 2 * time.Second},
	}
	a.add(b)
	if got := a.closed.throughput(); got != 50 {
		t.Errorf("throughput = %v, want 50 (400 in 8 s)", got)
	}
	if a.closed.answers != 450 || len(a.closed.latencies) != 3 || a.closed.failures != 1 || a.closed.firstFailure != errNoAnswers {
		t.Errorf("closed = %+v", a.closed)
	}
	if u := a.closedUse; u.wall != 10*time.Second || u.server != 3*time.Second {
		t.Errorf("use = %+v", u)
	}
	if got := share(29.96, 100); got != "30.0%" {
		t.Errorf("share = %s", got)
	}
	if got := share(29.5, 100); got != "29.5%" {
		t.Errorf("share = %s", got)
	}
}
