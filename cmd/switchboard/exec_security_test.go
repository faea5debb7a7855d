package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/internal/testenv"
)

// execSecurityBots are exec bots running shell scripts that try what a
// hostile brain would (SPEC §12). %[1]s is the listen address, %[2]s the
// scripts' directory, %[3]s the run_as bot (or nothing).
const execSecurityBots = `
gateway:
  listen: %[1]s
  database: sec.db
bots:
  - id: peek
    name: Peek
    brain: {kind: exec, command: [%[2]s/peek.sh]}
    platforms: {web: {}}
  - id: escaper
    name: Escaper
    brain: {kind: exec, command: [%[2]s/escape.sh], timeout: 2s}
    platforms: {web: {}}
%[3]s`

// peekNobodyBot is peek run as nobody; %s is the scripts' directory.
const peekNobodyBot = `  - id: peeknobody
    name: Peek Nobody
    brain: {kind: exec, command: [%s/peek.sh], run_as: nobody}
    platforms: {web: {}}
`

// peekScript reports what the child could read of its parent, the
// gateway, through /proc; a token it found would be in the reply.
const peekScript = `#!/bin/sh
echo "ppid: $PPID"
if cat /proc/$PPID/environ >/dev/null 2>&1; then echo "environ: read"; else echo "environ: denied"; fi
cat /proc/$PPID/environ 2>/dev/null | tr '\0' '\n' | grep -i token
if ( exec 3</proc/$PPID/mem ) 2>/dev/null; then echo "mem: opened"; else echo "mem: denied"; fi
if ls .. >/dev/null 2>&1; then echo "sessions: listed"; else echo "sessions: denied"; fi
`

// escapeScript starts a grandchild that leaves the process group and the
// session (setsid), then hangs until the turn's timeout.
const escapeScript = `#!/bin/sh
setsid sh -c 'echo $$ > gc.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 &
while [ ! -s gc.pid ]; do sleep 0.05; done
cp gc.pid "$(dirname "$0")/gc.pid"
exec sleep 1000
`

// TestExecChildrenContained runs the real binary, as serve does (non-
// dumpable, containment probed), with exec bots whose programs try to
// read the gateway's environment and memory through /proc, list other
// sessions' directories, and leave a setsid grandchild behind. The
// gateway runs as the tests' user; when that is root, bots run without
// run_as (a user namespace) and with run_as nobody, and a second gateway
// runs as nobody, so its program is of its own user and only the
// gateway being non-dumpable keeps it out.
func TestExecChildrenContained(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		testenv.Missing(t, "no /proc here: %v", err)
	}
	secret := randomHex(t)
	t.Setenv("SB_TEST_TELEGRAM_TOKEN", secret)
	root := os.Geteuid() == 0
	var nobody *user.User
	if root {
		nobody, _ = user.Lookup("nobody")
	}
	bin := buildGatewayBinary(t)
	// run_as nobody must pass through the test's directories.
	passable(t, filepath.Dir(bin))

	t.Run("gateway's user", func(t *testing.T) {
		extra := ""
		if nobody != nil {
			extra = peekNobodyBot
		}
		g := startSecurityGateway(t, bin, extra, nil)
		bots := []string{"peek"}
		if extra != "" {
			bots = append(bots, "peeknobody")
		}
		for _, bot := range bots {
			t.Run(bot, func(t *testing.T) {
				if bot == "peek" && root && !strings.Contains(g.logs, "userns=true") {
					// Documented: without a user namespace a root gateway's
					// children hold CAP_SYS_PTRACE; only run_as keeps them
					// out, and the gateway says so.
					if !strings.Contains(g.logs, "can read the gateway's environment") {
						t.Errorf("root without a user namespace and no warning:\n%s", g.logs)
					}
					testenv.Missing(t, "the tests run as root and this kernel refuses a user namespace per program")
				}
				// Without run_as the program is the work root's owner (or
				// root): no directory protection holds against it
				// (documented).
				g.checkPeek(t, bot, secret, bot == "peek")
			})
		}
		t.Run("setsid", func(t *testing.T) {
			if !strings.Contains(g.logs, "kill=cgroup") {
				testenv.Missing(t, "containment here is the process group only (documented), which setsid escapes")
			}
			if _, err := osexec.LookPath("setsid"); err != nil {
				testenv.Missing(t, "no setsid command: %v", err)
			}
			if got := g.ask("escaper"); !strings.HasPrefix(got, "Sorry, Escaper couldn't answer") {
				t.Errorf("reply %q, want the apology for the timeout", got)
			}
			b, err := os.ReadFile(filepath.Join(g.dir, "gc.pid"))
			if err != nil {
				t.Fatal(err)
			}
			gc, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			deadline := time.Now().Add(5 * time.Second)
			for syscall.Kill(gc, 0) == nil && !zombie(gc) {
				if time.Now().After(deadline) {
					t.Fatalf("the setsid grandchild %d outlived its turn", gc)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	})

	t.Run("same user", func(t *testing.T) {
		if nobody == nil {
			testenv.Missing(t, "covered above: the tests do not run as root, so the gateway and its programs share a user")
		}
		uid, _ := strconv.Atoi(nobody.Uid)
		gid, _ := strconv.Atoi(nobody.Gid)
		g := startSecurityGateway(t, bin, "", &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)})
		g.checkPeek(t, "peek", secret, true)
	})
}

// securityGateway is a running binary with the exec security bots.
type securityGateway struct {
	*gatewayProcess
	dir, logs string
	c         *client
}

// startSecurityGateway writes the bots and their scripts to a new
// directory and runs bin on it, as cred's user when not nil.
func startSecurityGateway(t *testing.T, bin, extra string, cred *syscall.Credential) *securityGateway {
	t.Helper()
	dir := t.TempDir()
	passable(t, dir)
	addr := freeLoopbackAddr(t)
	if extra != "" {
		extra = fmt.Sprintf(extra, dir)
	}
	files := map[string]string{
		"bots.yaml":  fmt.Sprintf(execSecurityBots, addr, dir, extra),
		"users.yaml": "users: []\n",
		"peek.sh":    peekScript,
		"escape.sh":  escapeScript,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o755)
		if cred != nil {
			os.Chown(p, int(cred.Uid), int(cred.Gid))
		}
	}
	if cred != nil {
		os.Chown(dir, int(cred.Uid), int(cred.Gid))
	}
	p := &gatewayProcess{cmd: osexec.Command(bin, "serve", "--config", dir), out: &processOutput{}, exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "SWITCHBOARD_ADMIN_TOKEN=crash-test")
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if cred != nil {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(12 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(p.log(), "switchboard serving") {
		select {
		case <-p.exited:
			t.Fatalf("gateway exited at start:\n%s", p.log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not ready after 15s:\n%s", p.log())
		}
	}
	g := &securityGateway{gatewayProcess: p, dir: dir, logs: p.log(), c: dial(t, addr, nil)}
	if !strings.Contains(g.logs, "exec brains: containment") {
		t.Errorf("no containment line at start:\n%s", g.logs)
	}
	return g
}

// ask sends "hi" to bot and returns its reply.
func (g *securityGateway) ask(bot string) string {
	g.c.t.Helper()
	g.c.send(map[string]any{"type": "send", "bot": bot, "text": "hi", "client_id": bot + randomHex(g.c.t)})
	g.c.expect("ack")
	return g.c.expect("message")["text"].(string)
}

// checkPeek asks bot, a peek.sh bot, what it could read of the gateway.
func (g *securityGateway) checkPeek(t *testing.T, bot, secret string, listed bool) {
	t.Helper()
	got := g.ask(bot)
	want := fmt.Sprintf("ppid: %d\nenviron: denied\nmem: denied\nsessions: denied", g.cmd.Process.Pid)
	if listed {
		want = strings.Replace(want, "sessions: denied", "sessions: listed", 1)
	}
	if got != want {
		t.Errorf("the child reported:\n%s\nwant:\n%s", got, want)
	}
	for _, s := range []string{secret, "crash-test"} {
		if strings.Contains(got, s) {
			t.Errorf("a token reached the child: %s", got)
		}
	}
}

// passable lets other users pass through dir and the directory above it
// (a test's temporary directories are 0700).
func passable(t *testing.T, dir string) {
	t.Helper()
	for _, p := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
}

// zombie reports whether pid has exited and awaits its reaper.
func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return err == nil && i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func randomHex(t *testing.T) string {
	t.Helper()
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TestHostileSessionID: a CLI that prints a session_id made to read as a
// flag gets the bot's apology, a logged reason, and never that flag on a
// later command line.
func TestHostileSessionID(t *testing.T) {
	dir := t.TempDir()
	argsLog := filepath.Join(dir, "args.log")
	cli := filepath.Join(dir, "sly.sh")
	os.WriteFile(cli, []byte(`#!/bin/sh
echo "$*" >> `+argsLog+`
echo '{"type":"result","result":"hi","session_id":"--evil-flag=1"}'
`), 0o755)
	bots := fmt.Sprintf(`
gateway: {database: test.db}
bots:
  - id: sly
    name: Sly
    brain:
      kind: exec
      command: [%[1]s, --session-id, '{session}']
      resume_command: [%[1]s, --resume, '{session}']
    platforms: {web: {}}
`, cli)
	os.WriteFile(filepath.Join(dir, "bots.yaml"), []byte(bots), 0o644)
	os.WriteFile(filepath.Join(dir, "users.yaml"), []byte("users: []\n"), 0o644)
	var logs processOutput
	m := &Main{ConfigDir: dir, Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := dial(t, m.Addr(), nil)
	for i := range 2 {
		c.send(map[string]any{"type": "send", "bot": "sly", "text": "hi", "client_id": strconv.Itoa(i)})
		c.expect("ack")
		if got := c.expect("message")["text"]; got != "Sorry, Sly couldn't answer just now. Please try again in a moment." {
			t.Errorf("turn %d: reply %q, want the apology", i, got)
		}
	}
	b, _ := os.ReadFile(argsLog)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("the CLI ran %d times:\n%s", len(lines), b)
	}
	for _, l := range lines {
		// The resume ID was never stored: each turn starts anew.
		if !strings.HasPrefix(l, "--session-id ") || strings.Contains(l, "evil") {
			t.Errorf("command line %q, want a new session's, never the hostile ID", l)
		}
	}
	var reason bool
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "level=DEBUG") {
			continue
		}
		if strings.Contains(line, "evil") {
			t.Errorf("the hostile ID is logged above debug: %s", line)
		}
		reason = reason || strings.Contains(line, "level=WARN") && strings.Contains(line, "session_id is refused: it starts with '-'")
	}
	if !reason {
		t.Errorf("no warning with the reason:\n%s", logs.String())
	}
}
