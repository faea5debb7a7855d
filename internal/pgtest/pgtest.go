// Package pgtest gives tests a PostgreSQL database of their own.
//
// The server is the throwaway cluster of scripts/ensure-postgres.sh, which
// this package runs once per test binary (installing PostgreSQL when it is
// missing, starting the cluster when it is not running), or the server
// named by $SWITCHBOARD_TEST_POSTGRES. Each NewDatabase call creates a
// database with a random name on it and drops it when the test ends, so
// tests and test binaries running at once never see each other's rows.
//
// When no server can be had, a test that asks for one fails under CI=true
// and is skipped, with the reason, otherwise: CI must run the PostgreSQL
// tests, while a developer without PostgreSQL can still run the rest.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchboard-chat/switchboard/internal/testenv"
)

// EnvURL names the variable that, when set, holds the URL of a server to
// use instead of the throwaway cluster. Its user must be allowed to create
// and drop databases.
const EnvURL = "SWITCHBOARD_TEST_POSTGRES"

// Script is the path of the script that starts the throwaway cluster,
// relative to the module's root.
const Script = "scripts/ensure-postgres.sh"

// scriptTimeout bounds one run of the script: an install of Debian's
// postgresql package takes a minute or two, a start a few seconds.
const scriptTimeout = 10 * time.Minute

var server struct {
	once sync.Once
	url  string
	err  error
}

// ServerURL returns the URL of the server on which tests create their
// databases, starting the throwaway cluster on the first call in this test
// binary. It fails t under CI=true, and skips it otherwise, when there is
// no server.
func ServerURL(t testing.TB) string {
	t.Helper()
	server.once.Do(func() {
		if u := os.Getenv(EnvURL); u != "" {
			server.url, server.err = u, checkURL(u)
			if server.err != nil {
				server.err = fmt.Errorf("$%s: %w", EnvURL, server.err)
			}
			return
		}
		server.url, server.err = RunScript(context.Background())
	})
	if server.err != nil {
		unavailable(t, server.err)
	}
	return server.url
}

// unavailable ends t for want of a server: a failure under CI=true, a skip
// otherwise.
func unavailable(t testing.TB, err error) {
	t.Helper()
	testenv.Missing(t, "PostgreSQL unavailable: %v", err)
}

// RunScript runs scripts/ensure-postgres.sh, which starts the throwaway
// cluster unless it runs already, and returns the URL the script printed
// as its last line. The error of a failed run carries the end of what the
// script said.
func RunScript(ctx context.Context) (string, error) {
	out, err := runScript(ctx, nil)
	if err != nil {
		return "", err
	}
	return lastURL(out)
}

// lastURL returns the URL on the last line of the script's output.
func lastURL(out string) (string, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	u := strings.TrimSpace(lines[len(lines)-1])
	if err := checkURL(u); err != nil {
		return "", fmt.Errorf("%s printed %q as its last line: %w", Script, u, err)
	}
	return u, nil
}

// runScript runs the script with args and the variables env added to this
// process's environment, and returns its standard output.
func runScript(ctx context.Context, env []string, args ...string) (string, error) {
	script, err := scriptPath()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The server the script starts must not hold the pipes open; should it,
	// Wait gives up on them after this long rather than hang.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w: %s", Script, err, tail(stderr.String()))
	}
	return stdout.String(), nil
}

// tail returns the last lines of a script's standard error, for an error
// message.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}

// checkURL reports whether u is a postgres:// URL with a host.
func checkURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return errors.New("not a URL")
	}
	if p.Scheme != "postgres" && p.Scheme != "postgresql" || p.Host == "" {
		return errors.New("not a postgres://host/… URL")
	}
	return nil
}

// scriptPath finds the script by walking up from the working directory,
// which go test sets to the package's directory, to the module's root.
func scriptPath() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, Script)
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("the module at %s has no %s", dir, Script)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory, so no %s", Script)
		}
		dir = parent
	}
}

// NewDatabase creates an empty database with a random name and returns its
// URL; the database is dropped when the test and its subtests end, with
// any connections to it still open closed by the server.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := ServerURL(t)
	name := "sbtest_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := exec1(ctx, admin, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// FORCE ends the sessions a test left open (PostgreSQL 13 and later).
		if err := exec1(ctx, admin, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("pgtest: %v", err) // checked when the URL was found
	}
	u.Path = "/" + name
	return u.String()
}

// exec1 runs one statement on its own connection to the server at url.
// CREATE and DROP DATABASE cannot run in a transaction, and a fresh
// connection runs them outside one.
func exec1(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// randomHex returns n random bytes as hexadecimal.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}
