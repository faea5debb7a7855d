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
	// MaxStdout is the most bytes of stdout read; a longer answer fails.
	MaxStdout = 8 << 20
	// StderrTail is how much of the end of stderr is kept for the log and
	// the error.
	StderrTail = 4 << 10
)

// waitDelay is how long a killed run may take to release its output
// pipes before they are closed under it.
const waitDelay = 2 * time.Second

// baseEnv are the variables of the gateway's environment every program
// gets.
var baseEnv = []string{"PATH", "HOME", "LANG", "TMPDIR"}

// ExitError is a run that ended with a non-zero status.
type ExitError struct {
	Program string
	Code    int
	// Stderr is the tail of what the program wrote on stderr.
	Stderr string
}

// Error names the program, its status and its stderr tail.
func (e *ExitError) Error() string {
	msg := fmt.Sprintf("exec %s: exit status %d", e.Program, e.Code)
	if e.Stderr != "" {
		msg += "; stderr: " + e.Stderr
	}
	return msg
}

// run starts args in dir with input on stdin and returns its stdout.
// The program leads a process group of its own, so ending the run (ctx
// done) kills it and every process it started.
func (b *Brain) run(ctx context.Context, log *slog.Logger, dir string, args []string, input string) ([]byte, error) {
	stdout := &capped{max: MaxStdout}
	stderr := &tailBuffer{max: StderrTail}
	cmd := osexec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = b.environ()
	cmd.Stdin = strings.NewReader(input)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = waitDelay
	ownGroup(cmd)

	start := time.Now()
	err := cmd.Run()
	log = log.With("program", args[0], "elapsed", time.Since(start).Round(time.Millisecond))
	switch {
	case err != nil && ctx.Err() != nil:
		if cmd.Process != nil {
			// A child that outlived the leader may still hold the group.
			killGroup(cmd.Process.Pid)
		}
		cause := ctx.Err()
		msg := "cancelled"
		if errors.Is(cause, context.DeadlineExceeded) {
			msg = fmt.Sprintf("timed out after %s", b.timeout)
		}
		log.Warn("exec brain run killed", "reason", msg, "stderr", stderr.String())
		return nil, fmt.Errorf("exec %s: %s: %w%s", args[0], msg, cause, stderrSuffix(stderr))
	case err != nil:
		var exit *osexec.ExitError
		if errors.As(err, &exit) {
			e := &ExitError{Program: args[0], Code: exit.ExitCode(), Stderr: stderr.String()}
			if e.Stderr == "" {
				// Some CLIs report failures on stdout (is_error JSON).
				e.Stderr = "(empty); stdout: " + tail(stdout.Bytes(), 512)
			}
			log.Warn("exec brain run failed", "exit", e.Code, "stderr", stderr.String())
			return nil, e
		}
		log.Warn("exec brain run did not start", "err", err)
		return nil, fmt.Errorf("exec %s: %w", args[0], err)
	case stdout.overflow:
		return nil, fmt.Errorf("exec %s: output is over %d bytes", args[0], MaxStdout)
	}
	if s := stderr.String(); s != "" {
		log.Debug("exec brain stderr", "stderr", s)
	}
	return stdout.Bytes(), nil
}

// environ is the program's whole environment: the base variables and the
// configured names that are set in the gateway's. It is never nil, since
// a nil Env would hand the program all of the gateway's.
func (b *Brain) environ() []string {
	env := []string{}
	seen := make(map[string]bool)
	for _, name := range append(baseEnv[:len(baseEnv):len(baseEnv)], b.env...) {
		if seen[name] {
			continue
		}
		seen[name] = true
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// stderrSuffix is "; stderr: …" when there was any.
func stderrSuffix(t *tailBuffer) string {
	if s := t.String(); s != "" {
		return "; stderr: " + s
	}
	return ""
}
