//go:build linux

package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDirWatcherIgnoresWritesUntilClose checks the Linux watcher's event
// mask: a file kept open and written to (as SQLite keeps its database and
// WAL beside the config files) reports nothing; closing it after a write,
// creating, renaming and deleting entries report their names.
func TestDirWatcherIgnoresWritesUntilClose(t *testing.T) {
	dir := t.TempDir()
	w, err := newDirWatcher(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	next := func(wait time.Duration) (string, bool) {
		select {
		case name := <-w.Names():
			return name, true
		case err := <-w.Errors():
			t.Fatalf("watcher error: %v", err)
		case <-time.After(wait):
		}
		return "", false
	}

	db, err := os.Create(filepath.Join(dir, "switchboard.db-wal"))
	if err != nil {
		t.Fatal(err)
	}
	if name, ok := next(time.Second); !ok || name != "switchboard.db-wal" {
		t.Fatalf("create: got %q, %v", name, ok)
	}
	for range 100 {
		if _, err := db.Write([]byte("page")); err != nil {
			t.Fatal(err)
		}
	}
	if name, ok := next(200 * time.Millisecond); ok {
		t.Fatalf("writes to a file kept open reported %q", name)
	}
	db.Close()
	if name, ok := next(time.Second); !ok || name != "switchboard.db-wal" {
		t.Fatalf("close after writing: got %q, %v", name, ok)
	}

	tmp := filepath.Join(dir, ".bots.yaml.tmp")
	if err := os.WriteFile(tmp, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, BotsFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, BotsFile)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for {
		name, ok := next(500 * time.Millisecond)
		if !ok {
			break
		}
		seen[name] = true
	}
	if !seen[".bots.yaml.tmp"] || !seen[BotsFile] {
		t.Errorf("write, rename over and delete reported %v; want both names", seen)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}
