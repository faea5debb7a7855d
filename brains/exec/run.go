package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"strings"
	"time"
)

// Limits on what a run may print.
const (
	// MaxStdout is the most bytes of stdout read; a longer answer fails
	// (SPEC §12: an exec child's captured output is bounded at 1 MiB).
	MaxStdout = 1 << 20
	// StderrTail is how much of the end of stderr is kept for the debug
	// log.
	StderrTail = 4 << 10
)

// waitDelay is how long a killed run may take to release its output
// pipes before they are closed under it.
const waitDelay = 2 * time.Second

// baseEnv are the variables of the gateway's environment every program
// gets.
var baseEnv = []string{"PATH", "HOME", "LANG", "TMPDIR"}

// ExitError is a run that ended with a non-zero status. Its message names
// the program and the status only: what the program printed may quote
// the conversation, so it goes to the debug log, never into an error
// that is logged above it (SPEC §8).
type ExitError struct {
	Program string
	Code    int
	// Stderr is the tail of what the program wrote on stderr.
	Stderr string
}

// Error names the program and its status.
func (e *ExitError) Error() string {
	return fmt.Sprintf("exec %s: exit status %d (its stderr is logged at debug level)", e.Program, e.Code)
}

// run starts args in dir with input on stdin and the variables extra
// added to its environment, and returns its stdout.
// The program runs contained (see Containment): ending the run, by its
// own exit or by ctx, kills every process it started.
func (b *Brain) run(ctx context.Context, log *slog.Logger, dir string, args []string, input string, extra []string) ([]byte, error) {
	stdout := &capped{max: MaxStdout}
	stderr := &tailBuffer{max: StderrTail}
	cmd := osexec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(b.environ(), extra...)
	cmd.Stdin = strings.NewReader(input)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = waitDelay
	release, err := b.contain(cmd)
	if err != nil {
		log.Warn("exec brain run not started: containment failed", "program", args[0], "err", err)
		return nil, fmt.Errorf("exec %s: %w", args[0], err)
	}

	start := time.Now()
	err = cmd.Run()
	// Whatever the program left running dies with the turn.
	release(log)
	log = log.With("program", args[0], "elapsed", time.Since(start).Round(time.Millisecond))
	if s := stderr.String(); s != "" {
		log.Debug("exec brain stderr", "stderr", s)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		cause := ctx.Err()
		msg := "cancelled"
		if errors.Is(cause, context.DeadlineExceeded) {
			msg = fmt.Sprintf("timed out after %s", b.timeout)
		}
		log.Warn("exec brain run killed", "reason", msg)
		return nil, fmt.Errorf("exec %s: %s: %w", args[0], msg, cause)
	case err != nil:
		var exit *osexec.ExitError
		if errors.As(err, &exit) {
			e := &ExitError{Program: args[0], Code: exit.ExitCode(), Stderr: stderr.String()}
			if e.Stderr == "" {
				// Some CLIs report failures on stdout (is_error JSON).
				log.Debug("exec brain stdout of a failed run", "stdout", tail(stdout.Bytes(), 512))
			}
			log.Warn("exec brain run failed", "exit", e.Code)
			return nil, e
		}
		log.Warn("exec brain run did not start", "err", err)
		return nil, fmt.Errorf("exec %s: %w", args[0], err)
	case stdout.overflow:
		log.Warn("exec brain output too long", "limit", MaxStdout)
		return nil, fmt.Errorf("exec %s: output is over %d bytes", args[0], MaxStdout)
	}
	return stdout.Bytes(), nil
}

// environ is the program's whole environment: the base variables and the
// configured names that are set in the gateway's; with run_as, HOME is
// that user's home directory. It is never nil, since
// a nil Env would hand the program all of the gateway's.
func (b *Brain) environ() []string {
	env := []string{}
	seen := make(map[string]bool)
	for _, name := range append(baseEnv[:len(baseEnv):len(baseEnv)], b.env...) {
		if seen[name] {
			continue
		}
		seen[name] = true
		if name == "HOME" && b.account != nil {
			// The gateway's home is not the program's to write in.
			env = append(env, "HOME="+b.account.home)
			continue
		}
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}
