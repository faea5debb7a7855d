package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/switchboard-chat/switchboard/store/sqlite"
)

// The gateway under test is the real binary, built from this module and
// started as a child process on a generated configuration, so the figures
// include everything an operator runs: config loading, migrations, the
// store, the web adapter and the brains (script, and openai against the
// bench's fake model server).
const gatewayPkg = "github.com/switchboard-chat/switchboard/cmd/switchboard"

// benchWebLimits turns off the widget's limits across connections (SPEC
// §12): the bench's thousands of visitors are anonymous and all on
// loopback, and it measures the gateway, not its limits on one address.
// Each connection's own frame limit (20 a second) stays, and the bench
// sends under it.
const benchWebLimits = `    max_connections_per_ip: 0
    max_messages_per_second_per_person: 0
    max_messages_per_second_per_ip: 0
`

// scriptBots is the bots.yaml of the script phases: two script bots on
// the web, Matty allowed to hand work to Finn. Replies are unique per
// message, so a reply names the message it answers.
func scriptBots(listen string) string {
	return fmt.Sprintf(`
gateway:
  listen: %s
  database: bench.db
  web:
%sbots:
  - id: mattyatlas
    name: Matty Atlas
    aliases: [matty]
    persona: You are Matty Atlas.
    brain:
      kind: script
      default: '{{.Bot.Name}} heard: {{.Text}}'
    platforms:
      web: {}
    delegation:
      allow: [finnshipley]
  - id: finnshipley
    name: Finn Shipley
    aliases: [finn]
    brain:
      kind: script
      default: '{{if .Delegation}}Finn built: {{.Text}}{{else}}Finn heard: {{.Text}}{{end}}'
    platforms:
      web: {}
`, listen, benchWebLimits)
}

// modelBot is the bot of the model phase.
const modelBot = "modelbot"

// modelBots returns the bots.yaml of the model phase: one openai bot on
// the web whose server is the bench's fake model at baseURL, with the
// brain's defaults otherwise (20 messages of history per request, no key).
// A bot with no one to hand work to is offered no tool.
func modelBots(baseURL string) func(listen string) string {
	return func(listen string) string {
		return fmt.Sprintf(`
gateway:
  listen: %s
  database: bench.db
  web:
%sbots:
  - id: %s
    name: Model Bot
    persona: You are Model Bot, a concise assistant.
    brain:
      kind: openai
      base_url: %s
      model: bench
      timeout: 30s
    platforms:
      web: {}
`, listen, benchWebLimits, modelBot, baseURL)
	}
}

// benchUsers is the bench's users.yaml; every bench client is anonymous.
const benchUsers = "users: []\n"

// Environment variables that make this program (or its test binary) an
// echo server child instead of the bench.
const (
	roleEnv   = "SWITCHBOARD_BENCH_ROLE"
	listenEnv = "SWITCHBOARD_BENCH_LISTEN"
)

// buildGateway compiles the gateway into dir and returns the binary's
// path. It runs without -race whatever the caller was built with, with
// the build tags of every build (the Makefile's).
func buildGateway(ctx context.Context, dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building the gateway needs the go command (or pass -bin): %w", err)
	}
	bin := filepath.Join(dir, "switchboard")
	cmd := exec.CommandContext(ctx, goTool, "build", "-tags", sqlite.BuildTags, "-o", bin, gatewayPkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build gateway: %v\n%s", err, out)
	}
	return bin, nil
}

// freePort returns a loopback address that was free a moment ago. A child
// process cannot report the port it bound, so the bench picks one.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

// raiseFileLimit lifts the soft RLIMIT_NOFILE to the hard limit and
// returns it. Calling Setrlimit explicitly also makes exec'd children
// inherit the raised limit (the Go runtime otherwise restores the
// original soft limit for them).
func raiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}

// server is a child process serving /ws and /healthz on addr.
type server struct {
	name    string
	addr    string
	cmd     *exec.Cmd
	logPath string
	started time.Time
	ready   time.Duration
	// waitCh receives cmd.Wait's result once the child exits.
	waitCh chan error
}

// startGateway writes a fresh config dir under parent, its bots.yaml
// made by bots for the address the gateway will listen on, and starts the
// gateway binary on it, with env (NAME=value) added to its environment,
// returning once /healthz answers 200.
func startGateway(ctx context.Context, bin, parent string, bots func(listen string) string, env ...string) (*server, error) {
	dir, err := os.MkdirTemp(parent, "gateway-")
	if err != nil {
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(bots(addr)), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "users.yaml"), []byte(benchUsers), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--config", dir)
	cmd.Env = append(append(os.Environ(), "SWITCHBOARD_ADMIN_TOKEN=bench"), env...)
	return startServer(ctx, "gateway", cmd, addr, filepath.Join(dir, "serve.log"))
}

// startEcho starts this program again as a bare gorilla/websocket echo
// server (see echo.go) and returns once its /healthz answers.
func startEcho(ctx context.Context, parent string) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "echo-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), roleEnv+"=echo", listenEnv+"="+addr)
	return startServer(ctx, "echo", cmd, addr, filepath.Join(dir, "echo.log"))
}

// startServer starts cmd with its output in logPath and waits until
// GET /healthz on addr answers 200; ready is the time from exec to then.
func startServer(ctx context.Context, name string, cmd *exec.Cmd, addr, logPath string) (*server, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	s := &server{name: name, addr: addr, cmd: cmd, logPath: logPath, waitCh: make(chan error, 1)}
	s.started = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	logf.Close() // the child holds its own descriptor
	go func() { s.waitCh <- cmd.Wait() }()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.ready = time.Since(s.started)
				return s, nil
			}
		}
		select {
		case err := <-s.waitCh:
			return nil, fmt.Errorf("%s exited before it was ready: %v\n%s", name, err, s.logTail())
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s not ready after 30s\n%s", name, s.logTail())
		}
	}
}

// stop ends the child with SIGTERM (a graceful shutdown), then SIGKILL
// if it takes longer than the gateway's own 10 s budget.
func (s *server) stop() error {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.waitCh:
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ProcessState != nil && !ee.ProcessState.Success() {
			return nil // killed by our signal or exited non-zero on it: fine for a bench
		}
		return err
	case <-time.After(12 * time.Second):
		s.cmd.Process.Kill()
		<-s.waitCh
		return fmt.Errorf("%s did not stop within 12s of SIGTERM", s.name)
	}
}

// rss reads the child's resident set size in bytes from /proc.
func (s *server) rss() (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("no VmRSS in /proc/<pid>/status")
}

// cpuTime reads the child's user plus system CPU time from
// /proc/<pid>/stat (fields 14 and 15, in USER_HZ ticks: 100 a second on
// Linux).
func (s *server) cpuTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; count from after it.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/<pid>/stat: %q", b)
	}
	var ticks int64
	for _, field := range f[11:13] { // utime, stime
		n, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}

// logTail is the end of the child's output, for error messages.
func (s *server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

// waitIdle waits until the server has been nearly idle (under 10% of a
// CPU) for a quarter of a second, or max has passed, and returns how long
// it waited: a phase that follows another should not measure the backlog
// the first one left (the turns of closed connections still being
// answered, their goroutines exiting).
func (s *server) waitIdle(max time.Duration) (time.Duration, error) {
	const window = 250 * time.Millisecond
	start := time.Now()
	prev, err := s.cpuTime()
	if err != nil {
		return 0, err
	}
	for time.Since(start) < max {
		time.Sleep(window)
		now, err := s.cpuTime()
		if err != nil {
			return 0, err
		}
		if now-prev < window/10 {
			break
		}
		prev = now
	}
	return time.Since(start), nil
}
