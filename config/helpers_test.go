package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// minimalBots and minimalUsers are the smallest valid files; a test that
// is about one file pairs it with the other's minimal version.
const (
	minimalBots = `bots:
  - id: a
    brain: {kind: script, default: hi}
`
	minimalUsers = `users: []
`
)

// writeDir writes bots.yaml and users.yaml into a new temporary directory.
func writeDir(t *testing.T, bots, users string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, BotsFile), bots)
	writeFile(t, filepath.Join(dir, UsersFile), users)
	return dir
}

// writeFile writes content to path in place, as os.WriteFile does:
// truncate, then write.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// loadErrors loads dir and returns its validation errors, failing the
// test if the load succeeds or fails for another reason.
func loadErrors(t *testing.T, dir string) Errors {
	t.Helper()
	cfg, err := Load(dir)
	if err == nil {
		t.Fatalf("Load succeeded, want errors; bots: %+v", cfg.Bots)
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Load error is %T (%v), want Errors", err, err)
	}
	return errs
}

// mustLoad loads dir and fails the test on any error.
func mustLoad(t *testing.T, dir string) *Config {
	t.Helper()
	cfg, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg
}

// findError returns the error of file at key, or fails the test listing
// what was reported instead.
func findError(t *testing.T, errs Errors, file, key string) Error {
	t.Helper()
	for _, e := range errs {
		if e.File == file && e.Key == key {
			return e
		}
	}
	t.Fatalf("no error for %s %q; got:\n%v", file, key, errs)
	return Error{}
}

// logBuffer is a bytes.Buffer safe for a slog handler and a test to share.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// contains reports whether the log holds a line with every part.
func (b *logBuffer) contains(parts ...string) bool {
	for _, line := range strings.Split(b.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
