//go:build unix

package exec

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A umask that even takes the owner's write bit leaves every mode as
// documented: they are set, not requested.
func TestWorkdirUnderUmask(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a", "work")
	old := syscall.Umask(0o277)
	b := newBrain(t, Config{Command: fake(), WorkRoot: root})
	_, err := b.Reply(context.Background(), task("d"))
	syscall.Umask(old)
	if err != nil {
		t.Fatalf("Reply: %v", err)
	}
	dir := sessionDir(t, b, "s1")
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{
		{filepath.Dir(root), 0o700}, {root, 0o700}, {dir, 0o700},
		{filepath.Join(root, keyFile), 0o600}, {filepath.Join(dir, "notes.md"), 0o600},
	} {
		if fi, err := os.Stat(c.path); err != nil || fi.Mode().Perm() != c.mode {
			t.Errorf("%s: %v, mode %v; want %v", c.path, err, fi.Mode().Perm(), c.mode)
		}
	}
}
