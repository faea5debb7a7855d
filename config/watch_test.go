package config

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// liveWithin is how soon a valid edit must be live (SPEC §2).
const liveWithin = 2 * time.Second

// botsNamed is a valid bots.yaml whose one bot has the given name.
func botsNamed(name string) string {
	return "bots:\n  - id: a\n    name: " + name + "\n    brain: {kind: script, default: hi}\n"
}

// startWatcher runs a Watcher on a directory holding botsNamed("Old")
// until the test ends, and returns it with its directory and log.
func startWatcher(t *testing.T) (*Watcher, string, *logBuffer) {
	t.Helper()
	dir := writeDir(t, botsNamed("Old"), minimalUsers)
	logs := &logBuffer{}
	w, err := NewWatcher(dir, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	// Let Run's first reload pass, so that edits below are seen as events.
	time.Sleep(3 * debounceQuiet)
	return w, dir, logs
}

// botName returns the name of bot a in the watcher's current Config.
func botName(w *Watcher) string {
	b, _ := w.Current().Bot("a")
	return b.Name
}

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// TestWatcherPicksUpValidEdits checks both ways editors save files.
func TestWatcherPicksUpValidEdits(t *testing.T) {
	tests := []struct {
		name string
		save func(t *testing.T, path, content string)
	}{
		{"write in place", writeFile},
		{"rename over", func(t *testing.T, path, content string) {
			tmp := filepath.Join(filepath.Dir(path), ".bots.yaml.swp")
			writeFile(t, tmp, content)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink swap (..data, as Kubernetes mounts)", func(t *testing.T, path, content string) {
			// bots.yaml → ..data/bots.yaml; ..data → a new directory.
			dir := filepath.Dir(path)
			gen := func(n string) string {
				d := filepath.Join(dir, "..gen"+n)
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
				return d
			}
			old := gen("1")
			if err := os.Rename(path, filepath.Join(old, BotsFile)); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("..gen1", filepath.Join(dir, "..data")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join("..data", BotsFile), path); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * debounceQuiet)
			writeFile(t, filepath.Join(gen("2"), BotsFile), content)
			if err := os.Symlink("..gen2", filepath.Join(dir, "..data_tmp")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete and recreate", func(t *testing.T, path, content string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * debounceQuiet) // a reload sees the file missing
			writeFile(t, path, content)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, dir, _ := startWatcher(t)
			start := time.Now()
			tt.save(t, filepath.Join(dir, BotsFile), botsNamed("New"))
			if !waitFor(liveWithin, func() bool { return botName(w) == "New" }) {
				t.Fatalf("edit not live after %v; name = %q", liveWithin, botName(w))
			}
			t.Logf("live after %v", time.Since(start))
		})
	}
}

// TestWatcherKeepsLastGood checks that an invalid edit and a truncated
// file are logged and ignored, and that a later valid edit still lands.
func TestWatcherKeepsLastGood(t *testing.T) {
	tests := []struct {
		name, content, logged string
	}{
		{"invalid edit", botsNamed("Bad") + "    colour: red\n", "bots.yaml:5: bots[0].colour: unknown key"},
		{"empty file", "", "bots.yaml: file is empty"},
		{"users.yaml broken", "", "users.yaml: file is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, dir, logs := startWatcher(t)
			old := w.Current()
			file := BotsFile
			if tt.name == "users.yaml broken" {
				file = UsersFile
			}
			writeFile(t, filepath.Join(dir, file), tt.content)
			if !waitFor(liveWithin, func() bool { return logs.contains("level=WARN", "edit rejected", tt.logged) }) {
				t.Fatalf("no warning with %q; log:\n%s", tt.logged, logs)
			}
			if w.Current() != old {
				t.Fatalf("config replaced by an invalid edit")
			}
			// Fix the file: the next valid edit is live again.
			writeFile(t, filepath.Join(dir, UsersFile), minimalUsers)
			writeFile(t, filepath.Join(dir, BotsFile), botsNamed("Fixed"))
			if !waitFor(liveWithin, func() bool { return botName(w) == "Fixed" }) {
				t.Fatalf("valid edit after a bad one not live; name = %q", botName(w))
			}
		})
	}
}

// TestWatcherSubscribers checks that subscribers see old and new after a
// valid reload, and nothing for a rejected one.
func TestWatcherSubscribers(t *testing.T) {
	w, dir, _ := startWatcher(t)
	type change struct{ old, new string }
	var mu sync.Mutex
	var got []change
	for range 2 {
		w.Subscribe(func(old, new *Config) {
			mu.Lock()
			defer mu.Unlock()
			if w.Current() != new {
				t.Error("subscriber called before the new Config was published")
			}
			got = append(got, change{old.Bots[0].Name, new.Bots[0].Name})
		})
	}
	writeFile(t, filepath.Join(dir, BotsFile), "bots: [")
	time.Sleep(4 * debounceQuiet)
	writeFile(t, filepath.Join(dir, BotsFile), botsNamed("New"))
	ok := waitFor(liveWithin, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 2
	})
	mu.Lock()
	defer mu.Unlock()
	if !ok || got[0] != (change{"Old", "New"}) || got[1] != got[0] {
		t.Fatalf("subscribers saw %v, want two Old→New", got)
	}
}

// TestNewWatcherInvalid checks that NewWatcher refuses an invalid start.
func TestNewWatcherInvalid(t *testing.T) {
	_, err := NewWatcher(writeDir(t, "", minimalUsers), nil)
	if err == nil || err.Error() != "bots.yaml: file is empty" {
		t.Fatalf("NewWatcher = %v, want the Load error", err)
	}
}
