//go:build unix

package exec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid runs; a zombie does not count.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err) // no /proc (macOS): trust kill
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// readPid waits for the fake to write name in dir and returns the pid.
func readPid(t *testing.T, dir, name string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && len(b) > 0 {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the fake never wrote %s", name)
	return 0
}

// containments are the ways a turn's processes may be held here: the
// process group always, a cgroup where the host allows.
func containments(t *testing.T) map[string]string {
	t.Helper()
	modes := map[string]string{"process group": ""}
	if cg := Probe().Cgroup; cg != "" {
		modes["cgroup"] = cg
	}
	return modes
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	for name, cgroup := range containments(t) {
		t.Run(name, func(t *testing.T) {
			b := newBrain(t, Config{Command: fake("hang"), Timeout: 2 * time.Second})
			b.cgroup = cgroup
			start := time.Now()
			_, err := b.Reply(context.Background(), turn("hi", ""))
			elapsedUnder(t, start, 2*time.Second+waitDelay+time.Second)
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 2s") {
				t.Fatalf("err = %v, want a timeout", err)
			}
			dir := sessionDir(t, b, "s1")
			waitGone(t, readPid(t, dir, "child.pid"))
			waitGone(t, readPid(t, dir, "grandchild.pid"))
		})
	}
}

func TestCancelKillsProcessGroup(t *testing.T) {
	for name, cgroup := range containments(t) {
		t.Run(name, func(t *testing.T) {
			b := newBrain(t, Config{Command: fake("hang")})
			b.cgroup = cgroup
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := b.Reply(ctx, turn("hi", ""))
				done <- err
			}()
			dir := sessionDir(t, b, "s1")
			child, grandchild := readPid(t, dir, "child.pid"), readPid(t, dir, "grandchild.pid")
			if !alive(grandchild) {
				t.Fatal("the grandchild is not running before the cancel")
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", err)
				}
			case <-time.After(waitDelay + 3*time.Second):
				t.Fatal("Reply did not return after cancel")
			}
			waitGone(t, child)
			waitGone(t, grandchild)
		})
	}
}

// waitGone waits for pid to exit (a zombie counts as gone: its reaper may
// be slow or absent in a container).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("process %d still running", pid)
}

// elapsedUnder fails the test when start is more than d ago.
func elapsedUnder(t *testing.T, start time.Time, d time.Duration) {
	t.Helper()
	if e := time.Since(start); e > d {
		t.Errorf("took %v, want under %v", e, d)
	}
}
