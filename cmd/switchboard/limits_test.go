//go:build unix

package main

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// limitsBots is a small valid bots.yaml.
const limitsBots = `
gateway:
  listen: %s
  database: limits.db
bots:
  - id: mattyatlas
    brain: {kind: script, default: hi}
    platforms:
      web: {}
`

// hugeBots is a bots.yaml of 2 MiB: valid, with a long comment.
func hugeBots(addr string) string {
	return fmt.Sprintf(limitsBots, addr) + "# " + strings.Repeat("x", 2<<20) + "\n"
}

// slowBots is a bots.yaml just under 1 MiB that takes seconds to parse
// and is then rejected: 15,000 bots, each with an unknown key and an
// invalid ID. (Before its 30,000 problems were checked against each
// other in linear time, it took minutes.)
func slowBots(addr string) string {
	var b strings.Builder
	fmt.Fprintf(&b, limitsBots, addr)
	for i := 0; b.Len() < 1<<20-100; i++ {
		fmt.Fprintf(&b, "  - {id: B%d, x: 1, brain: {kind: exec}}\n", i)
	}
	return b.String()
}

// TestConfigOver1MiB: a 2 MiB bots.yaml is refused unread by check, by
// serve at start, and, as a live edit, quickly, with the last good
// configuration kept.
func TestConfigOver1MiB(t *testing.T) {
	bin := buildGatewayBinary(t)
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	writeConfig(t, dir, hugeBots(addr), "users: []\n")
	const refused = "bots.yaml: the file is 2097"
	const limit = "over the limit of 1 MiB (1048576 bytes); it was not read"

	out, err := exec.Command(bin, "check", "--config", dir).CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), refused) || !strings.Contains(string(out), limit) {
		t.Errorf("check: exit %d, output:\n%s", code, out)
	}
	cmd := exec.Command(bin, "serve", "--config", dir)
	out, err = cmd.CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), refused) {
		t.Errorf("serve: exit %d, output:\n%s", code, out)
	}

	writeConfig(t, dir, fmt.Sprintf(limitsBots, addr), "users: []\n")
	gw := startGatewayProcess(t, bin, dir, addr)
	start := time.Now()
	writeConfig(t, dir, hugeBots(addr), "users: []\n")
	// Generous: the watcher waits 100 ms for the files to settle, and
	// reads nothing of them.
	deadline := start.Add(2 * time.Second)
	for !strings.Contains(gw.log(), "config edit rejected") {
		if time.Now().After(deadline) {
			t.Fatalf("the 2 MiB edit was not refused within 2s:\n%s", gw.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("refused after %v", time.Since(start))
	if log := gw.log(); !strings.Contains(log, refused) || !strings.Contains(log, limit) {
		t.Errorf("the log does not name the file and the limit:\n%s", log)
	}
	if status, body := apiGetAt(t, addr, "/api/v1/bots", "crash-test"); status != 200 || len(items(body)) != 1 {
		t.Errorf("bots after the refused edit: %d %v", status, body)
	}
}

// TestSigtermDuringConfigParse: SIGTERM while the gateway parses a
// config edit ends it within 10 s (SPEC: shutdown within 10 s), without
// waiting for the parse.
func TestSigtermDuringConfigParse(t *testing.T) {
	bin := buildGatewayBinary(t)
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	writeConfig(t, dir, fmt.Sprintf(limitsBots, addr), "users: []\n")
	t.Setenv("SWITCHBOARD_LOG_LEVEL", "debug")
	gw := startGatewayProcess(t, bin, dir, addr)
	slow := slowBots(addr)
	if len(slow) > 1<<20 {
		t.Fatalf("the slow edit is %d bytes, over the limit", len(slow))
	}
	writeConfig(t, dir, slow, "users: []\n")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(gw.log(), "config change seen; loading it") {
		if time.Now().After(deadline) {
			t.Fatalf("the edit was never loaded:\n%s", gw.log())
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	if err := gw.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gw.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("still running 10s after SIGTERM:\n%s", gw.log())
	}
	t.Logf("exited %v after SIGTERM; the parse had %s", time.Since(start),
		map[bool]string{true: "ended (rejected) before", false: "not ended"}[strings.Contains(gw.log(), "config edit rejected")])
	if code := gw.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d:\n%s", code, gw.log())
	}
}

// exitCode is a command's exit code from its error.
func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
