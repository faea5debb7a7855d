// Command switchboard runs and manages a Switchboard gateway: one process
// that connects a team of AI bots to Telegram, Discord and a web widget.
//
// This is the only package that picks concrete platforms, brains and the
// store; everything else depends on the core's interfaces.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/switchboard-chat/switchboard/config"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit code: 0 done, 1
// failed, 2 a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "--version", "-v":
		name = "version"
	case "help", "-h", "--help":
		if len(rest) == 0 {
			fmt.Fprint(stdout, usage())
			return 0
		}
		// "help serve" is "serve --help".
		name, rest = rest[0], []string{"--help"}
		if name == "db" && len(rest) > 0 {
			name = "db copy"
		}
	}
	// "db" has one subcommand: "db copy" is its name.
	if name == "db" {
		if len(rest) == 0 || rest[0] != "copy" {
			fmt.Fprintf(stderr, "switchboard db: the command is db copy\n\n%s", dbCopyCommand.usageLine())
			return 2
		}
		name, rest = "db copy", rest[1:]
	}
	if c := lookupCommand(name); c != nil {
		return runCommand(c, rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "switchboard: unknown command %q\n\n%s", name, usage())
	return 2
}

var serveCommand = &command{
	name:     "serve",
	synopsis: "[--config DIR]",
	summary:  "run the gateway",
	about: fmt.Sprintf(`
Runs the gateway: the web widget, /ws, the admin API, the dashboard
and /metrics on gateway.listen (bots.yaml; default %s), and
the Telegram and Discord connections of the bots whose token variables
are set. Edits to bots.yaml and users.yaml take effect while it runs;
an edit that does not validate is rejected whole and logged. It refuses
to start on a configuration with errors, and stops on SIGINT or SIGTERM.`, config.DefaultListen),
	env: `
SWITCHBOARD_CONFIG       the default of --config
SWITCHBOARD_ADMIN_TOKEN  the admin API and dashboard token; unset: one is
                         made for the run and printed in the dashboard URL
SWITCHBOARD_LOG_LEVEL    debug, info, warn or error (default info)
SWITCHBOARD_CPUPROFILE   write a CPU profile of the run to this file
SWITCHBOARD_MEMPROFILE   write an allocation profile to this file at exit
Token and secret variables are named in bots.yaml (keys ending in _env).`,
	flags: func(fs *flag.FlagSet) { configFlag(fs) },
	run:   runServe,
}

var checkCommand = &command{
	name:     "check",
	synopsis: "[--config DIR]",
	summary:  "validate bots.yaml and users.yaml",
	about: `
Validates bots.yaml and users.yaml as serve would load them, and prints
every problem on a line of its own as FILE:LINE: KEY: message, errors
and warnings ("warning: …") in file order. Every script template is run
against the data it receives, so a misspelt field such as .User.Nmae is
an error here rather than an apology at run time.

Exit status: 0 when the configuration is valid (warnings allowed), 1
when it has errors or cannot be read, 2 on a usage error.`,
	env: `
SWITCHBOARD_CONFIG  the default of --config`,
	flags: func(fs *flag.FlagSet) { configFlag(fs) },
	run:   runCheck,
}

var versionCommand = &command{
	name:    "version",
	summary: "print the version",
	about:   "Prints the version of this binary.",
	run: func(_ *flag.FlagSet, _ []string, stdout, _ io.Writer) int {
		fmt.Fprintln(stdout, "switchboard", version)
		return 0
	},
}

// runCheck validates the configuration and prints every problem.
func runCheck(fs *flag.FlagSet, _ []string, stdout, _ io.Writer) int {
	dir := fs.Lookup("config").Value.String()
	cfg, err := config.Load(dir, configChecks()...)
	var problems config.Errors
	switch {
	case errors.As(err, &problems):
	case err != nil:
		fmt.Fprintln(stdout, err)
		return 1
	default:
		problems = cfg.Warnings
	}
	nerr := 0
	for _, p := range problems {
		fmt.Fprintln(stdout, p.Error())
		if !p.Warning {
			nerr++
		}
	}
	if nerr > 0 {
		summary := count(nerr, "error")
		if n := len(problems) - nerr; n > 0 {
			summary += ", " + count(n, "warning")
		}
		fmt.Fprintln(stdout, summary)
		return 1
	}
	fmt.Fprintf(stdout, "ok: %s, %s in %s", count(len(cfg.Bots), "bot"), count(len(cfg.Users.Users), "user"), cfg.Dir)
	if len(problems) > 0 {
		fmt.Fprintf(stdout, " (%s)", count(len(problems), "warning"))
	}
	fmt.Fprintln(stdout)
	return 0
}

// count is "1 error", "2 errors", "0 warnings".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// runServe runs the gateway until a signal.
func runServe(fs *flag.FlagSet, _ []string, stdout, stderr io.Writer) int {
	dir := fs.Lookup("config").Value.String()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel()}))
	// First, before any brain's program can start.
	if err := makeNonDumpable(); err != nil {
		logger.Warn("the gateway could not make itself non-dumpable: programs of its own user can read its environment", "err", err)
	}
	if path := os.Getenv("SWITCHBOARD_CPUPROFILE"); path != "" {
		stopProfile, err := startCPUProfile(path)
		if err != nil {
			fmt.Fprintln(stderr, "switchboard:", err)
			return 1
		}
		defer stopProfile()
	}
	if path := os.Getenv("SWITCHBOARD_MEMPROFILE"); path != "" {
		defer writeAllocProfile(path, stderr)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	m := &Main{ConfigDir: dir, Logger: logger, Stdout: stdout}
	if err := m.Run(ctx); err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			fmt.Fprintln(stderr, "switchboard: the configuration has errors; fix them and start again:")
			for _, e := range errs {
				fmt.Fprintln(stderr, "  "+e.Error())
			}
		} else {
			fmt.Fprintln(stderr, "switchboard:", err)
		}
		return 1
	}
	<-ctx.Done()
	stop() // a second signal now kills the process the usual way
	logger.Info("shutting down")
	if err := m.Close(); err != nil {
		logger.Error("shutdown", "err", err)
		return 1
	}
	return 0
}

// startCPUProfile writes a CPU profile of the process to path until the
// returned function is called (SWITCHBOARD_CPUPROFILE; see
// docs/operations.md).
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeAllocProfile writes what the process allocated, from its start, to
// path (SWITCHBOARD_MEMPROFILE; see docs/operations.md).
func writeAllocProfile(path string, stderr io.Writer) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "switchboard: alloc profile:", err)
	}
}

// logLevel reads SWITCHBOARD_LOG_LEVEL (debug, info, warn, error).
func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("SWITCHBOARD_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}
