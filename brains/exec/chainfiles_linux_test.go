package exec

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// With run_as, artifacts/ and its files are the user's, and the program
// reads them and may clear them; the next turn replaces them anyway.
func TestChainArtifactsRunAs(t *testing.T) {
	runAs := runAsNobody(t)
	dir := sharedTempDir(t)
	prog := script(t, dir, "read.sh", "cat artifacts/competitors.json && rm -r artifacts/* && echo\n")
	old := syscall.Umask(0o077)
	b := newBrain(t, Config{Command: []string{prog}, RunAs: runAs, WorkRoot: filepath.Join(dir, "work")})
	syscall.Umask(old)

	tn := chainTurn(memFiles{"a1": `{"competitors":3}`}, chainStep(1, "Researcher", "a1:competitors.json"))
	if r := reply(t, b, tn); r.Text != `{"competitors":3}` {
		t.Errorf("the run_as program read %q", r.Text)
	}
	if r := reply(t, b, tn); r.Text != `{"competitors":3}` {
		t.Errorf("next turn, after the program emptied artifacts/: read %q", r.Text)
	}
	// A program that leaves them: what the next turn made is checked.
	peek := newBrain(t, Config{Command: []string{script(t, dir, "peek.sh", "cat artifacts/competitors.json\n")}, RunAs: runAs, WorkRoot: filepath.Join(dir, "work")})
	reply(t, peek, tn)
	arts := filepath.Join(sessionDir(t, b, "s1"), "artifacts")
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{
		{arts, 0o700},
		{filepath.Join(arts, "competitors.json"), 0o600},
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; fi.Mode().Perm() != c.mode || uid != 65534 {
			t.Errorf("%s: mode %v owner %d, want %v owner 65534", c.path, fi.Mode().Perm(), uid, c.mode)
		}
	}
}
