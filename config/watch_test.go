package config

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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
	w, err := NewWatcher(context.Background(), dir, slog.New(slog.NewTextHandler(logs, nil)))
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
	_, err := NewWatcher(context.Background(), writeDir(t, "", minimalUsers), nil)
	if err == nil || err.Error() != "bots.yaml: file is empty" {
		t.Fatalf("NewWatcher = %v, want the Load error", err)
	}
}

// TestWatcherRefusesLargeEdit: an edit that makes bots.yaml 2 MiB is
// refused unread, quickly (a 55 MB edit once took over a minute and a
// gigabyte), with a log line naming the file and the limit; the last
// good configuration stays.
func TestWatcherRefusesLargeEdit(t *testing.T) {
	w, dir, logs := startWatcher(t)
	old := w.Current()
	start := time.Now()
	writeFile(t, filepath.Join(dir, BotsFile), botsNamed("Huge")+"# "+strings.Repeat("x", 2<<20)+"\n")
	// Generous: the debounce is 100 ms, reading nothing takes no time.
	if !waitFor(2*time.Second, func() bool {
		return logs.contains("level=WARN", "edit rejected", "bots.yaml: the file is", "over the limit of 1 MiB")
	}) {
		t.Fatalf("no rejection within 2s; log:\n%s", logs)
	}
	t.Logf("refused after %v", time.Since(start))
	if w.Current() != old {
		t.Error("config replaced by the refused edit")
	}
}

// TestWatcherRunReturnsDuringALoad: Run returns as soon as its context
// ends, even while a load it started has not finished (here one that
// never does until the test ends, as a parse cannot be interrupted).
func TestWatcherRunReturnsDuringALoad(t *testing.T) {
	dir := writeDir(t, botsNamed("Old"), minimalUsers)
	w, err := NewWatcher(context.Background(), dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	w.load = func(dir string) (*Config, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		return Load(dir)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	writeFile(t, filepath.Join(dir, BotsFile), botsNamed("New"))
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the edit was never loaded")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(10 * time.Second): // SPEC: shutdown within 10 s
		t.Fatal("Run still waits for the load 10s after its context ended")
	}
	if botName(w) != "Old" {
		t.Errorf("an abandoned load was published")
	}
}

// TestWatcherLogsAFewOfManyErrors: a rejected edit with thousands of
// problems logs the first ones and how many more there are.
func TestWatcherLogsAFewOfManyErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("bots:\n")
	for i := range 100 {
		fmt.Fprintf(&b, "  - {id: b%d, colour: red, brain: {kind: script, default: hi}}\n", i)
	}
	got := summary(loadErrors(t, writeDir(t, b.String(), minimalUsers)))
	if !strings.HasSuffix(got, "; and 80 more") || strings.Count(got, "unknown key") != maxLoggedErrors {
		t.Errorf("summary = %q", got)
	}
}
