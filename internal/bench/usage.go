package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// usage is who used the machine's CPUs: a reading, cumulative, or what
// a phase used, the difference of the readings before and after it.
type usage struct {
	// wall is the time since the bench started (of a phase: its length).
	wall time.Duration
	// busy and idle are the machine's CPU time (all CPUs, from
	// /proc/stat); server the server process's; client this process's.
	busy, idle, server, client time.Duration
}

// benchStart is when the readings' wall clock starts.
var benchStart = time.Now()

// readUsage reads the machine, s and this process.
func readUsage(s *server) (usage, error) {
	u := usage{wall: time.Since(benchStart)}
	var err error
	if u.busy, u.idle, err = machineCPU(); err != nil {
		return u, err
	}
	if u.server, err = s.cpuTime(); err != nil {
		return u, err
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return u, err
	}
	u.client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return u, nil
}

// since is what was used from reading before to reading u.
func (u usage) since(before usage) usage {
	return usage{
		wall: u.wall - before.wall,
		busy: u.busy - before.busy, idle: u.idle - before.idle,
		server: u.server - before.server, client: u.client - before.client,
	}
}

// plus is the use of two phases together.
func (u usage) plus(o usage) usage {
	return usage{
		wall: u.wall + o.wall,
		busy: u.busy + o.busy, idle: u.idle + o.idle,
		server: u.server + o.server, client: u.client + o.client,
	}
}

// split says how the machine's CPUs were used in a phase, as shares of
// what they could have done, with server and client naming the server
// process and this one: "96% busy: gateway 74%, load client 21%, the
// rest 1%".
func (p usage) split(server, client string) string {
	total := p.busy + p.idle
	if total <= 0 {
		return "no CPU reading"
	}
	rest := max(p.busy-p.server-p.client, 0)
	return fmt.Sprintf("%.0f%% busy: %s %.0f%%, %s %.0f%%, the rest %.0f%%",
		p.pct(p.busy), server, p.pct(p.server), client, p.pct(p.client), p.pct(rest))
}

// pct is d as a share of what the machine's CPUs could have done in the
// phase, in percent.
func (p usage) pct(d time.Duration) float64 { return 100 * float64(d) / float64(p.busy+p.idle) }

// microsEach is d spread over n (answered messages), in microseconds.
func microsEach(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(n) }

// ceiling says what the CPU spent per answered message comes to: the
// server's and the load client's CPU time per answer, and the rate the
// machine's CPUs (as many as the phase's CPU time says) would reach with
// all of them busy on the two alone: "per answered message, 185 µs of
// the gateway's CPU and 50 µs of the load client's: with the 2 CPUs
// busy on the two alone, about 8,511/s". It is empty without answers or
// a CPU reading.
func (p usage) ceiling(who string, answers int) string {
	if answers <= 0 || p.wall <= 0 || p.busy+p.idle <= 0 {
		return ""
	}
	server := p.server / time.Duration(answers)
	client := p.client / time.Duration(answers)
	if server+client <= 0 {
		return ""
	}
	cpus := float64(p.busy+p.idle) / float64(p.wall)
	most := cpus * float64(time.Second) / float64(server+client)
	return fmt.Sprintf("per answered message, %.0f µs of the %s's CPU and %.0f µs of the load client's: with the %.0f CPUs busy on the two alone, about %s",
		float64(server)/float64(time.Microsecond), who, float64(client)/float64(time.Microsecond), cpus, rate(most))
}

// machineCPU returns the time all CPUs spent busy and idle since boot.
func machineCPU() (busy, idle time.Duration, err error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0, fmt.Errorf("/proc/stat: empty")
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", sc.Text())
	}
	// user nice system idle iowait irq softirq steal (guest time is
	// already in user).
	var ticks [8]int64
	for i := range ticks {
		if ticks[i], err = strconv.ParseInt(fields[i+1], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
	}
	const tick = time.Second / 100
	busyTicks := ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]
	return time.Duration(busyTicks) * tick, time.Duration(ticks[3]+ticks[4]) * tick, nil
}
