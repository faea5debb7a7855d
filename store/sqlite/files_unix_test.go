//go:build unix

package sqlite_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-chat/switchboard/store/sqlite"
)

// withUmask runs fn with the process umask set to mask. The umask is the
// process's: tests that use it must not run in parallel.
func withUmask(mask int, fn func()) {
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	fn()
}

// modes returns the permission bits of the database's three files.
func modes(t *testing.T, path string) map[string]os.FileMode {
	t.Helper()
	out := map[string]os.FileMode{}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(p), err)
		}
		out[filepath.Base(p)] = fi.Mode().Perm()
	}
	return out
}

// TestDatabaseFilesAreTheOwners: with a umask that takes nothing away, a
// new database, its WAL and its shared-memory file are all 0600 (SQLite
// gives the last two the database file's mode).
func TestDatabaseFilesAreTheOwners(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sb.db")
	var logs bytes.Buffer
	withUmask(0, func() {
		s, err := sqlite.Open(context.Background(), path, sqlite.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Secret(context.Background(), "k", 32); err != nil { // a write: the WAL is in use
			t.Fatal(err)
		}
		for name, mode := range modes(t, path) {
			if mode != 0o600 {
				t.Errorf("%s mode = %#o, want 0600", name, mode)
			}
		}
	})
	if logs.Len() != 0 {
		t.Errorf("a new database logged %q; want nothing to report", logs.String())
	}
}

// TestLooseDatabaseFilesAreTightened: a database (and the -wal and -shm
// an earlier run left) readable by others is made 0600 at open, with one
// log line per file.
func TestLooseDatabaseFilesAreTightened(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sb.db")
	withUmask(0, func() {
		s, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		s.Secret(context.Background(), "k", 32)
		s.Close()
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			// Closing the last connection removes the WAL and SHM files:
			// put back loose ones, as a crashed run or a copy leaves.
			if _, err := os.Stat(p); os.IsNotExist(err) {
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var logs bytes.Buffer
		s, err = sqlite.Open(context.Background(), path, sqlite.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Secret(context.Background(), "k", 32); err != nil {
			t.Fatal(err)
		}
		for name, mode := range modes(t, path) {
			if mode != 0o600 {
				t.Errorf("%s mode = %#o, want 0600", name, mode)
			}
		}
		if n := strings.Count(logs.String(), "mode is now 0600"); n != 3 {
			t.Errorf("logged %d tightened files, want 3:\n%s", n, logs.String())
		}
	})
}
