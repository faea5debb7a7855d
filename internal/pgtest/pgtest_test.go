package pgtest

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestNewDatabase creates two databases, writes to each through pgx, checks
// that neither sees the other's table, and that both are gone once the
// subtest that made them has ended.
func TestNewDatabase(t *testing.T) {
	ctx := context.Background()
	var names []string
	t.Run("two databases", func(t *testing.T) {
		for i, word := range []string{"first", "second"} {
			u := NewDatabase(t)
			conn, err := pgx.Connect(ctx, u)
			if err != nil {
				t.Fatalf("connect %d: %v", i, err)
			}
			t.Cleanup(func() { conn.Close(ctx) })
			var name string
			if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
			var others int
			err = conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'words'").Scan(&others)
			if err != nil || others != 0 {
				t.Fatalf("database %d sees %d tables named words before creating one (err %v)", i, others, err)
			}
			if _, err := conn.Exec(ctx, "CREATE TABLE words (w text NOT NULL)"); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, "INSERT INTO words VALUES ($1)", word); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := conn.QueryRow(ctx, "SELECT string_agg(w, ',') FROM words").Scan(&got); err != nil || got != word {
				t.Fatalf("database %d holds %q (err %v), want %q", i, got, err, word)
			}
		}
		if names[0] == names[1] || !strings.HasPrefix(names[0], "sbtest_") {
			t.Fatalf("database names %q", names)
		}
	})
	if len(names) != 2 {
		t.Fatal("the subtest made no databases")
	}
	// The connections above were still open when the databases were
	// dropped: DROP … WITH (FORCE) closed them.
	conn, err := pgx.Connect(ctx, ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var left int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = ANY($1)", names).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d of the databases %q remain after their test", left, names)
	}
}

// TestNewDatabaseParallel creates databases from parallel tests, as test
// binaries running at once do.
func TestNewDatabaseParallel(t *testing.T) {
	for i := range 4 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			conn, err := pgx.Connect(context.Background(), NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			if _, err := conn.Exec(context.Background(), "CREATE TABLE t (id bigint PRIMARY KEY)"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestScriptTwice checks that a second run of the script, while the
// cluster runs, prints the same URL, the one the tests use.
func TestScriptTwice(t *testing.T) {
	want := ServerURL(t)
	if os.Getenv(EnvURL) != "" {
		t.Skipf("$%s names the server; the script is not used", EnvURL)
	}
	for range 2 {
		got, err := RunScript(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("the script printed %s, then %s", want, got)
		}
	}
}

// TestScriptOwnCluster runs the script with a state directory and a
// temporary directory of its own, so it starts a cluster of its own:
// concurrent first calls start one cluster and print one URL; a server
// killed with SIGKILL is replaced by the next call; stop stops it and
// deletes its files.
func TestScriptOwnCluster(t *testing.T) {
	shared := ServerURL(t) // fails or skips when PostgreSQL cannot run here
	if os.Getenv(EnvURL) != "" {
		t.Skipf("$%s names the server; the script is not used", EnvURL)
	}
	ctx := context.Background()
	state := t.TempDir()
	// The clusters' directory: the postgres user, who owns a cluster when
	// the tests run as root, must reach it, and t.TempDir's is private.
	tmp, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	env := []string{"SWITCHBOARD_PG_STATE=" + state, "TMPDIR=" + tmp}
	start := func() (string, error) {
		out, err := runScript(ctx, env)
		if err != nil {
			return "", err
		}
		return lastURL(out)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			runScript(ctx, env, "stop")
		}
	})

	urls := make([]string, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range urls {
		wg.Go(func() { urls[i], errs[i] = start() })
	}
	wg.Wait()
	for i := range urls {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if urls[i] != urls[0] {
			t.Fatalf("concurrent calls printed different URLs: %q", urls)
		}
	}
	if urls[0] == shared {
		t.Fatalf("the own state directory gave the shared cluster's URL %s", urls[0])
	}
	dir := recorded(t, state, "dir")
	if got := clusters(t, tmp); len(got) != 1 || got[0] != dir {
		t.Fatalf("the state records %s; the clusters made are %q", dir, got)
	}
	ping(t, urls[0])

	// A killed server leaves its files; the next call replaces it.
	pid := postmasterPID(t, dir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	again, err := start()
	if err != nil {
		t.Fatal(err)
	}
	ping(t, again)
	newDir := recorded(t, state, "dir")
	if got := clusters(t, tmp); len(got) != 1 || got[0] != newDir || newDir == dir {
		t.Errorf("after the restart the state records %s (was %s); the clusters are %q", newDir, dir, got)
	}

	pid = postmasterPID(t, newDir)
	if _, err := runScript(ctx, env, "stop"); err != nil {
		t.Fatalf("stop: %v", err)
	}
	stopped = true
	waitGone(t, pid)
	if got := clusters(t, tmp); len(got) != 0 {
		t.Errorf("stop left %q", got)
	}
	if _, err := os.Stat(filepath.Join(state, "cluster")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stop left the state file: %v", err)
	}
}

// recorded returns a key of the script's state file.
func recorded(t *testing.T, state, key string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, "cluster"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+"="); ok {
			return v
		}
	}
	t.Fatalf("the state file has no %s: %s", key, data)
	return ""
}

// clusters lists the cluster directories the script made in tmp.
func clusters(t *testing.T, tmp string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(tmp, "switchboard-pg.*"))
	if err != nil {
		t.Fatal(err)
	}
	return matches
}

// postmasterPID reads the server's process ID from its data directory.
func postmasterPID(t *testing.T, dir string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitGone waits for a process to exit.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); errors.Is(err, os.ErrNotExist) {
			return
		}
	}
	t.Fatalf("process %d still runs", pid)
}

// ping connects to the server at u and runs a query.
func ping(t *testing.T, u string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("connect %s: %v", u, err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 on %s: %d, %v", u, one, err)
	}
	if p, _ := url.Parse(u); p == nil || p.Hostname() != "127.0.0.1" {
		t.Errorf("the URL %s is not on 127.0.0.1", u)
	}
}

// TestScriptUsage checks that an unknown command is refused.
func TestScriptUsage(t *testing.T) {
	script, err := scriptPath()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", script, "restart").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "usage:") {
		t.Errorf("restart: %v, %s", err, out)
	}
}

// TestUnavailable runs this test binary again with a server URL that is
// not one: the test that asks for a database is skipped, saying why, and
// under CI=true it fails instead.
func TestUnavailable(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		NewDatabase(t)
		t.Error("NewDatabase returned without a server")
		return
	}
	for _, tt := range []struct{ ci, want string }{
		{"", "--- SKIP: TestUnavailable"},
		{"false", "--- SKIP: TestUnavailable"},
		{"true", "--- FAIL: TestUnavailable"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUnavailable$", "-test.v")
		cmd.Env = append(os.Environ(), "PGTEST_CHILD=1", "CI="+tt.ci, EnvURL+"=mysql://db.example")
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), tt.want) || !strings.Contains(string(out), "not a postgres://") {
			t.Errorf("CI=%q: want %q with the reason, got:\n%s", tt.ci, tt.want, out)
		}
	}
}
