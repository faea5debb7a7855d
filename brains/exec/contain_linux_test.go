package exec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/internal/testenv"
)

// These tests run real shell scripts as the brain's programs: what they
// check is what the kernel lets a child do.

// sharedTempDir is a temporary directory other users may pass through
// (0711, and so is the directory above it), for run_as programs.
func sharedTempDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, p := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// script writes a /bin/sh script anyone may run and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// runAsNobody is the run_as user of these tests; switching to it needs
// root.
func runAsNobody(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "run_as needs the gateway (here: the test) to run as root")
	}
	if _, err := lookupAccount("nobody"); err != nil {
		testenv.Missing(t, "no user nobody on this system: %v", err)
	}
	return "nobody"
}

// nonDumpable makes the test process what serve makes the gateway:
// non-dumpable, until the test ends.
func nonDumpable(t *testing.T) {
	t.Helper()
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		t.Fatalf("prctl: %v", err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) })
}

// peekScript tries to read the parent's (the gateway's) environment,
// memory and working directory through /proc, and says what it got.
const peekScript = `echo "ppid: $PPID"
if cat /proc/$PPID/environ >/dev/null 2>&1; then echo "environ: read"; else echo "environ: denied"; fi
if ( exec 3</proc/$PPID/mem ) 2>/dev/null; then echo "mem: opened"; else echo "mem: denied"; fi
if ls /proc/$PPID/cwd/ >/dev/null 2>&1; then echo "cwd: listed"; else echo "cwd: denied"; fi
`

func TestChildCannotReadGatewayProc(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		testenv.Missing(t, "no /proc here: %v", err)
	}
	tests := []struct {
		name  string
		runAs func(*testing.T) string
	}{
		{"gateway's user", func(t *testing.T) string {
			if c := Probe(); c.Root && !c.UserNS {
				// Documented: a root gateway's children are root and
				// hold CAP_SYS_PTRACE; only run_as keeps them out.
				testenv.Missing(t, "the tests run as root and this kernel refuses a user namespace per program (%s)", c.NoUserNS)
			}
			return ""
		}},
		{"run_as nobody", runAsNobody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runAs := tt.runAs(t)
			nonDumpable(t)
			dir := sharedTempDir(t)
			b := newBrain(t, Config{Command: []string{script(t, dir, "peek.sh", peekScript)}, RunAs: runAs, WorkRoot: filepath.Join(dir, "work")})
			r := reply(t, b, turn("hi", ""))
			want := fmt.Sprintf("ppid: %d\nenviron: denied\nmem: denied\ncwd: denied", os.Getpid())
			if r.Text != want {
				t.Errorf("the child reported:\n%s\nwant:\n%s", r.Text, want)
			}
		})
	}
}

func TestSetsidGrandchildIsKilled(t *testing.T) {
	c := Probe()
	if c.Cgroup == "" {
		testenv.Missing(t, "containment here is the process group only, which setsid escapes (documented): %s", c.NoCgroup)
	}
	if _, err := osexec.LookPath("setsid"); err != nil {
		testenv.Missing(t, "no setsid command: %v", err)
	}
	// The grandchild leaves the process group and the session, with
	// nothing of the turn's open (no pipe keeps the turn waiting).
	const escape = `setsid sh -c 'echo $$ > gc.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 &
while [ ! -s gc.pid ]; do sleep 0.05; done
echo started
`
	tests := []struct {
		name    string
		runAs   func(*testing.T) string
		hang    bool
		timeout time.Duration
	}{
		{"timeout", func(*testing.T) string { return "" }, true, 2 * time.Second},
		{"exit", func(*testing.T) string { return "" }, false, time.Minute},
		{"run_as timeout", runAsNobody, true, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runAs := tt.runAs(t)
			dir := sharedTempDir(t)
			body := escape
			if tt.hang {
				body += "exec sleep 1000\n"
			}
			b := newBrain(t, Config{Command: []string{script(t, dir, "escape.sh", body)}, RunAs: runAs, Timeout: tt.timeout, WorkRoot: filepath.Join(dir, "work")})
			done := make(chan error, 1)
			go func() {
				_, err := b.Reply(context.Background(), turn("hi", ""))
				done <- err
			}()
			gc := readPid(t, sessionDir(t, b, "s1"), "gc.pid")
			if sid, err := unix.Getsid(gc); err != nil || sid != gc {
				t.Fatalf("the grandchild's session is %d (%v), want its own (%d): it did not escape", sid, err, gc)
			}
			select {
			case err := <-done:
				if tt.hang && !strings.Contains(fmt.Sprint(err), "timed out") {
					t.Errorf("err = %v, want a timeout", err)
				}
				if !tt.hang && err != nil {
					t.Errorf("Reply: %v", err)
				}
			case <-time.After(tt.timeout + waitDelay + 10*time.Second):
				t.Fatal("the turn did not end")
			}
			waitGone(t, gc)
			checkCgroupsRemoved(t)
		})
	}
}

// checkCgroupsRemoved fails if this process left a turn's cgroup.
func checkCgroupsRemoved(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(Probe().Cgroup)
	if err != nil {
		t.Fatal(err)
	}
	mine := fmt.Sprintf("%d-%s-", os.Getpid(), cgroupRun)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), mine) {
			t.Errorf("cgroup %s left after its turn", e.Name())
		}
	}
}

func TestRunAs(t *testing.T) {
	runAs := runAsNobody(t)
	dir := sharedTempDir(t)
	root := filepath.Join(dir, "work")
	prog := script(t, dir, "peer.sh", `echo "uid: $(id -u) home: $HOME"
if ls .. >/dev/null 2>&1; then echo "list: allowed"; else echo "list: denied"; fi
if cat ../`+keyFile+` >/dev/null 2>&1; then echo "key: read"; else echo "key: denied"; fi
if cat ../s2/mine.txt ../s2-*/mine.txt >/dev/null 2>&1; then echo "other: read"; else echo "other: denied"; fi
echo mine > mine.txt
if [ -f notes.md ]; then cat notes.md > summary.md; fi
`)
	old := syscall.Umask(0o077) // the shared root's 0711 must not depend on it
	b := newBrain(t, Config{Command: []string{prog}, RunAs: runAs, WorkRoot: root})
	syscall.Umask(old)

	s2 := turn("hi", "")
	s2.SessionID = "s2"
	reply(t, b, s2)
	tn := task("d")
	r := reply(t, b, tn)
	want := "uid: 65534 home: " + b.account.home + "\nlist: denied\nkey: denied\nother: denied"
	if r.Text != want {
		t.Errorf("the child reported:\n%s\nwant:\n%s", r.Text, want)
	}
	// Inputs given to the user, outputs collected: the expected one,
	// then what else the task wrote.
	if len(r.Artifacts) != 2 || r.Artifacts[0].Name != "summary.md" || string(r.Artifacts[0].Content) != "we sell bots" ||
		r.Artifacts[1].Name != "mine.txt" {
		t.Errorf("artifacts %s, want summary.md made from the input, then mine.txt", names(r.Artifacts))
	}
	for _, c := range []struct {
		path string
		mode fs.FileMode
		uid  uint32
	}{
		{root, 0o711, 0},
		{filepath.Join(root, keyFile), 0o600, 0},
		{sessionDir(t, b, "s1"), 0o700, 65534},
		{sessionDir(t, b, "s2"), 0o700, 65534},
		{filepath.Join(sessionDir(t, b, "s1"), "notes.md"), 0o600, 65534},
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; fi.Mode().Perm() != c.mode || uid != c.uid {
			t.Errorf("%s: mode %v owner %d, want %v owner %d", c.path, fi.Mode().Perm(), uid, c.mode, c.uid)
		}
	}
}

func TestRunAsTakesOverADirectory(t *testing.T) {
	runAs := runAsNobody(t)
	dir := sharedTempDir(t)
	root := filepath.Join(dir, "work")
	prog := script(t, dir, "w.sh", "cat old.txt && echo new > old.txt\n")
	// The session's directory as a bot without run_as left it.
	before := newBrain(t, Config{Command: []string{"/bin/true"}, WorkRoot: root})
	sd := sessionDir(t, before, "s1")
	os.MkdirAll(filepath.Join(sd, "sub"), 0o700)
	os.WriteFile(filepath.Join(sd, "old.txt"), []byte("old\n"), 0o600)

	b := newBrain(t, Config{Command: []string{prog}, RunAs: runAs, WorkRoot: root})
	if r := reply(t, b, turn("hi", "")); r.Text != "old" {
		t.Errorf("reply %q, want the old file read by the run_as user", r.Text)
	}
	fi, _ := os.Stat(filepath.Join(sd, "sub"))
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 65534 {
		t.Errorf("sub-directory owner %d, want 65534", uid)
	}
}

func TestRunAsChecks(t *testing.T) {
	if _, err := New(Config{Command: []string{"x"}, RunAs: "switchboard-no-such-user"}); err == nil || !strings.Contains(err.Error(), "run_as switchboard-no-such-user") {
		t.Errorf("unknown user: %v", err)
	}
	// A user no test runs as.
	runner := &account{name: "bot-runner", uid: 54321, gid: 54321, groups: []uint32{54321}}
	if _, err := checkRunAs(runner, 1000); err == nil || !strings.Contains(err.Error(), "not root") {
		t.Errorf("non-root gateway: %v", err)
	}
	if a, err := checkRunAs(runner, 54321); a != nil || err != nil {
		t.Errorf("run_as the gateway's own user: %v, %v; want no switch", a, err)
	}
	if a, err := checkRunAs(runner, 0); a != runner || err != nil {
		t.Errorf("root gateway: %v, %v", a, err)
	}
	// A work root run_as cannot reach is refused at once.
	closed := filepath.Join(t.TempDir(), "closed")
	os.Mkdir(closed, 0o700)
	if err := runner.checkReach(filepath.Join(closed, "work", "bot")); err == nil || !strings.Contains(err.Error(), "cannot pass through "+closed+" (mode 0700)") {
		t.Errorf("unreachable root: %v", err)
	}
	for p := closed; p != os.TempDir(); p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	if err := runner.checkReach(filepath.Join(closed, "work", "bot")); err != nil {
		t.Errorf("reachable root: %v", err)
	}
}

func TestHostileSessionID(t *testing.T) {
	var logs logLines
	b := newBrain(t, Config{Command: fake("out=json", "sid=--evil-flag=1"), Logger: logs.logger()})
	r, err := b.Reply(context.Background(), turn("hi", "cli-abc"))
	if !errors.Is(err, errBadSessionID) || r.ResumeID != "" {
		t.Fatalf("Reply = %+v, %v; want errBadSessionID and no resume ID", r, err)
	}
	if strings.Contains(err.Error(), "evil") || len(logs.above("evil")) > 0 {
		t.Errorf("the refused ID is quoted above debug level: %v\n%s", err, logs.above("evil"))
	}
	if !logs.has("level=WARN", "session_id is refused", "starts with '-'") {
		t.Errorf("no warning with the reason:\n%s", logs.buf.String())
	}

	// A hostile ID stored by an earlier version never reaches a command
	// line: the session starts anew.
	b = newBrain(t, Config{Command: fake("new", "session={session}"), ResumeCommand: fake("resume", "session={session}")})
	r = reply(t, b, turn("hi", "--evil-flag=1"))
	if !strings.HasPrefix(r.Text, "turn 1 of ") || strings.Contains(r.Text, "evil") || r.ResumeID == "--evil-flag=1" {
		t.Errorf("reply %q / %q, want a new session", r.Text, r.ResumeID)
	}
}

// TestNoChildOutputAboveDebug: what a program prints may quote the
// conversation (SPEC §8): it is logged at debug level only, and the
// errors the gateway logs above it never carry it.
func TestNoChildOutputAboveDebug(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, marker string
		command      []string
		timeout      time.Duration
	}{
		{"exit with stderr", "stderr-marker", fake("exit=1", "stderr=stderr-marker"), 0},
		{"exit with JSON on stdout", "credit too low", fake("out=iserror", "exit=1"), 0},
		{"is_error", "credit too low", fake("out=iserror"), 0},
		{"hostile subtype", "quoted-words", []string{script(t, dir, "sub.sh", `echo '{"is_error":true,"subtype":"quoted-words here","result":"x"}'`)}, 0},
		{"timeout with stderr", "slow-marker", []string{script(t, dir, "slow.sh", "echo slow-marker >&2\nexec sleep 100\n")}, time.Second},
		{"not JSON enough", "out-marker", []string{script(t, dir, "nores.sh", `echo '{"type":"out-marker"}'`)}, 0},
		{"too long", "long-marker", []string{script(t, dir, "long.sh", "echo long-marker >&2\nhead -c 2000000 /dev/zero | tr '\\0' a\n")}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs logLines
			b := newBrain(t, Config{Command: tt.command, Timeout: tt.timeout, Logger: logs.logger()})
			_, err := b.Reply(context.Background(), turn("hi", ""))
			if err == nil {
				t.Fatal("the turn succeeded")
			}
			if strings.Contains(err.Error(), tt.marker) {
				t.Errorf("the error carries the program's output: %v", err)
			}
			if lines := logs.above(tt.marker); len(lines) > 0 {
				t.Errorf("the program's output is logged above debug:\n%s", strings.Join(lines, ""))
			}
			if !logs.has("level=DEBUG", tt.marker) {
				t.Errorf("the program's output is not in the debug log:\n%s", logs.buf.String())
			}
		})
	}
}

func TestCgroup2Dir(t *testing.T) {
	const hybrid = `25 1 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
35 25 0:30 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
36 25 0:31 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd
`
	const unified = `30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	const container = `612 600 0:26 /system.slice/docker-abc.scope /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw
`
	const spaced = `30 23 0:26 / /mnt/cg\040two rw - cgroup2 cgroup2 rw
`
	tests := []struct {
		name, info, path, want string
	}{
		{"hybrid", hybrid, "/user.slice/a.scope", "/sys/fs/cgroup/unified/user.slice/a.scope"},
		{"unified", unified, "/system.slice/switchboard.service", "/sys/fs/cgroup/system.slice/switchboard.service"},
		{"root", unified, "/", "/sys/fs/cgroup"},
		{"container", container, "/system.slice/docker-abc.scope/app", "/sys/fs/cgroup/app"},
		{"escaped mount point", spaced, "/x", "/mnt/cg two/x"},
		{"outside the mount's root", container, "/other", ""},
		{"no cgroup2", "36 25 0:31 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw\n", "/", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cgroup2Dir([]byte(tt.info), tt.path)
			if tt.want == "" {
				if err == nil {
					t.Errorf("got %q, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestProbe(t *testing.T) {
	c := Probe()
	t.Logf("containment: %v", c.LogAttrs())
	if c.Root != (os.Geteuid() == 0) {
		t.Errorf("Root = %v for euid %d", c.Root, os.Geteuid())
	}
	if (c.Cgroup == "") == (c.NoCgroup == "") {
		t.Errorf("Cgroup %q with reason %q: want exactly one", c.Cgroup, c.NoCgroup)
	}
	if c.Cgroup != "" {
		if _, err := os.Stat(filepath.Join(c.Cgroup, "cgroup.procs")); err != nil {
			t.Errorf("Cgroup %s is no cgroup: %v", c.Cgroup, err)
		}
	}
}

// A FIFO put under an expected name is skipped, not waited on.
func TestFIFOOutputIsNotCollected(t *testing.T) {
	dir := t.TempDir()
	prog := script(t, dir, "fifo.sh", "mkfifo summary.md && echo done\n")
	b := newBrain(t, Config{Command: []string{prog}})
	done := make(chan error, 1)
	var r brains.Reply
	go func() {
		var err error
		r, err = b.Reply(context.Background(), task("d"))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil || len(r.Artifacts) != 0 {
			t.Errorf("Reply = %s, %v; want no artifacts", names(r.Artifacts), err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("collecting outputs blocked on a FIFO")
	}
}
