// Package exec is the brain that runs a program per turn: typically an
// agent CLI (claude -p, codex exec, llm, …) that keeps its own sessions.
//
// A session's first turn runs Command with every "{session}" in its
// arguments replaced by a new UUID; later turns run ResumeCommand with
// "{session}" replaced by the stored resume ID, which is the CLI's own
// session_id when it printed one and the UUID otherwise. The program is
// started directly, never through a shell. It reads the assembled prompt
// (package prompt, flattened) on stdin and writes its answer on stdout,
// as plain text or as a JSON object with "result" and "session_id" (the
// shape of claude -p --output-format json).
//
// Each session has a working directory under WorkRoot, named so that it
// cannot be guessed (workdir.go), where a delegated task's input
// artifacts are written before the run and from which the files the task
// expects are collected after it. When the turn's space has an artifact
// chain (SPEC §10.7), the newest output of each name of its steps is a
// file under artifacts/ there, which the brain replaces every turn
// (chainfiles.go). The program sees only PATH, HOME,
// LANG, TMPDIR and the variables Config.Env names of the gateway's
// environment; it runs as Config.RunAs when set, and every process it
// starts is killed when the turn ends (see Containment).
//
// A turn with actions (brains.Turn.Actions) and a brain with Tools gets
// them as MCP tools while it runs: the endpoint and a bearer token of its
// own in SWITCHBOARD_MCP_URL and SWITCHBOARD_MCP_TOKEN, and the same in
// switchboard-mcp.json in its working directory (tools.go). Both are dead
// once the turn ends.
package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/brains/prompt"
)

// Placeholder is replaced in command arguments by the session's ID.
const Placeholder = "{session}"

// DefaultTimeout bounds a turn when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Minute

// Config is an exec brain's settings.
type Config struct {
	// Command is the program and its arguments for a session's first
	// turn. Arguments may contain Placeholder.
	Command []string
	// ResumeCommand is run for later turns; empty means Command. When it
	// contains Placeholder the program is taken to remember the session,
	// and resumed turns carry only the history it has not seen.
	ResumeCommand []string
	// Env names variables of the gateway's environment passed to the
	// program, besides PATH, HOME, LANG and TMPDIR. Unset ones are
	// skipped.
	Env []string
	// Timeout bounds one turn, retries included; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// WorkRoot holds one working directory per session; empty means
	// DefaultWorkRoot().
	WorkRoot string
	// Logger receives run failures and stderr; nil means slog.Default().
	Logger *slog.Logger
	// ContextMessages is the most history messages in a prompt; 0 keeps
	// what the gateway passes.
	ContextMessages int
	// RunAs, a user name or numeric user ID, runs the program as that
	// user (the gateway must run as root); its HOME is that user's home
	// directory and its working directories are given to it. Empty: the
	// gateway's own user.
	RunAs string
	// Tools, when set, serves a turn's actions to the program as MCP
	// tools: a turn with actions gets EnvMCPURL and EnvMCPToken in its
	// environment and MCPConfigFile in its working directory.
	Tools Tools
}

// DefaultWorkRoot is the WorkRoot used when none is configured:
// switchboard-exec under the system's temporary directory.
func DefaultWorkRoot() string {
	return filepath.Join(os.TempDir(), "switchboard-exec")
}

// Brain runs one program per turn. It is safe for concurrent use; turns
// of one session must not overlap (brains.Brain promises they do not).
type Brain struct {
	command   []string
	resume    []string
	resumable bool
	env       []string
	timeout   time.Duration
	root      string
	log       *slog.Logger
	window    int
	// account is the run_as user; nil runs programs as the gateway's.
	account *account
	// tools serves turns' actions (nil: programs get none).
	tools Tools
	// cgroup is Containment.Cgroup, and userNS whether programs run in
	// a user namespace of their own (a root gateway, no run_as).
	cgroup string
	userNS bool

	keyMu sync.Mutex
	key   []byte // names working directories (workdir.go), loaded once

	// runs tracks, per session directory, the delegation whose files it
	// holds, so outputs left by an earlier task are not taken for this
	// one's (see outputs.go).
	mu   sync.Mutex
	runs map[string]*delegationRun
}

var _ brains.Brain = (*Brain)(nil)

// New checks cfg and returns a brain. It does not look the program up:
// a CLI installed later works without a restart, and a missing one fails
// its turns with a clear error.
func New(cfg Config) (*Brain, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("exec brain: command is empty")
	}
	resume := cfg.ResumeCommand
	if len(resume) == 0 {
		resume = cfg.Command
	} else if resume[0] == "" {
		return nil, errors.New("exec brain: resume_command has an empty program")
	}
	for _, name := range cfg.Env {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return nil, fmt.Errorf("exec brain: env: %q is not a variable name", name)
		}
	}
	b := &Brain{
		command:   slices.Clone(cfg.Command),
		resume:    slices.Clone(resume),
		resumable: slices.ContainsFunc(resume, func(a string) bool { return strings.Contains(a, Placeholder) }),
		env:       slices.Clone(cfg.Env),
		timeout:   cfg.Timeout,
		root:      cfg.WorkRoot,
		log:       cfg.Logger,
		window:    cfg.ContextMessages,
		runs:      make(map[string]*delegationRun),
		tools:     cfg.Tools,
	}
	if b.timeout <= 0 {
		b.timeout = DefaultTimeout
	}
	if b.root == "" {
		b.root = DefaultWorkRoot()
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if cfg.RunAs != "" {
		acc, err := lookupAccount(cfg.RunAs)
		if err != nil {
			return nil, fmt.Errorf("exec brain: %w", err)
		}
		if b.account, err = checkRunAs(acc, os.Geteuid()); err != nil {
			return nil, fmt.Errorf("exec brain: %w", err)
		}
	}
	if b.account != nil {
		if err := b.account.checkReach(b.root); err != nil {
			return nil, fmt.Errorf("exec brain: %w", err)
		}
	}
	c := Probe()
	b.cgroup = c.Cgroup
	b.userNS = c.UserNS && b.account == nil
	return b, nil
}

// RunsAsRoot reports whether the brain's programs run as root: the
// gateway is root and the bot has no run_as (or run_as names root).
// They can then read every file root can, the database included.
func (b *Brain) RunsAsRoot() bool {
	if b.account != nil {
		return b.account.isRoot()
	}
	return os.Geteuid() == 0
}

// Reply runs the program for t and returns its answer. The reply's
// ResumeID is the ID the next turn should resume. A resumed run that
// exits non-zero (the CLI may have lost the session) is tried once more
// as a new session, which gets the whole recent history. Errors name the
// program and carry the tail of its stderr; a run cut short by the
// timeout or ctx wraps context.DeadlineExceeded or ctx's error.
func (b *Brain) Reply(ctx context.Context, t brains.Turn) (brains.Reply, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	log := b.log.With("brain", "exec", "bot", t.Bot.ID, "session", t.SessionID)

	dir, err := b.workdir(log, t.SessionID)
	if err != nil {
		return brains.Reply{}, err
	}
	dr, err := b.prepare(dir, t.Delegation)
	if err != nil {
		return brains.Reply{}, err
	}
	if err := b.placeArtifacts(ctx, log, dir, t.Shared, t.Files); err != nil {
		return brains.Reply{}, err
	}
	// The turn's actions, for as long as it runs (both tries below).
	env, closeTools, err := b.openTools(log, dir, t.Actions)
	if err != nil {
		return brains.Reply{}, fmt.Errorf("exec brain: tools: %w", err)
	}
	defer closeTools()

	resumeID := t.ResumeID
	if resumeID != "" {
		if err := checkSessionID(resumeID); err != nil {
			// Stored before session IDs were checked: never put it on a
			// command line.
			log.Warn("stored resume ID refused; starting a new session", "err", err)
			resumeID = ""
		}
	}
	out, id, err := b.turn(ctx, log, dir, t, resumeID, env)
	var exit *ExitError
	if errors.As(err, &exit) && resumeID != "" && ctx.Err() == nil {
		log.Warn("resumed run failed; starting a new session", "resume_id", resumeID, "err", err)
		out, id, err = b.turn(ctx, log, dir, t, "", env)
	}
	if err != nil {
		return brains.Reply{}, err
	}

	reply := brains.Reply{Text: out.text, ResumeID: id}
	if out.sessionID != "" {
		reply.ResumeID = out.sessionID
	}
	if t.Delegation != nil {
		if reply.Artifacts, err = dr.collect(log, t.Delegation.Expected); err != nil {
			return brains.Reply{}, err
		}
	}
	if reply.Text == "" && len(reply.Artifacts) == 0 {
		return brains.Reply{}, fmt.Errorf("exec %s: %w", b.command[0], brains.ErrEmptyReply)
	}
	return reply, nil
}

// turn runs the program once: the first-turn command when resumeID is
// empty, else the resume command, with env added to its environment. It
// returns the parsed output and the ID the run was given.
func (b *Brain) turn(ctx context.Context, log *slog.Logger, dir string, t brains.Turn, resumeID string, env []string) (output, string, error) {
	args, id := b.resume, resumeID
	if resumeID == "" {
		args, id = b.command, uuid.NewString()
	}
	args = substitute(args, id)
	text := prompt.Build(b.visible(t, resumeID != ""), prompt.Options{ContextMessages: b.window, Workdir: true}).Text()
	stdout, err := b.run(ctx, log, dir, args, text, env)
	if err != nil {
		return output{}, "", err
	}
	out, err := parseOutput(stdout)
	if err != nil {
		// The output is the program's words: the debug log only.
		log.Warn("exec brain output rejected", "program", args[0], "err", err)
		log.Debug("exec brain output rejected", "program", args[0], "stdout", tail(stdout, 512))
		return output{}, "", fmt.Errorf("exec %s: %w", args[0], err)
	}
	return out, id, nil
}

// visible is t as the program should see it. A program that resumes its
// own session already holds the conversation up to its last reply, so a
// resumed turn carries only what came after it (delegation results, hand-
// offs answered without it); the rest would be a duplicate.
func (b *Brain) visible(t brains.Turn, resumed bool) brains.Turn {
	if !resumed || !b.resumable {
		return t
	}
	for i := len(t.History) - 1; i >= 0; i-- {
		if e := t.History[i]; e.Kind == "bot" && e.From == t.Bot.Name {
			t.History = t.History[i+1:]
			break
		}
	}
	return t
}

// substitute replaces Placeholder in every argument.
func substitute(args []string, id string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, Placeholder, id)
	}
	return out
}
