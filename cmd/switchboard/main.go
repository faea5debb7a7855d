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

const usage = `switchboard — a chat gateway for teams of AI bots

Usage:
  switchboard serve   [--config DIR]   run the gateway
  switchboard check   [--config DIR]   validate bots.yaml and users.yaml
  switchboard version                  print the version

The config directory defaults to $SWITCHBOARD_CONFIG, else the working
directory.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return runServe(rest, stdout, stderr)
	case "check":
		return runCheck(rest, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "switchboard", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "switchboard: unknown command %q\n\n%s", cmd, usage)
	return 2
}

// configFlag adds --config to fs with the documented default.
func configFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("SWITCHBOARD_CONFIG")
	if def == "" {
		def = "."
	}
	return fs.String("config", def, "directory holding bots.yaml and users.yaml")
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := configFlag(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := config.Load(*dir)
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				fmt.Fprintln(stdout, e.Error())
			}
			fmt.Fprintf(stdout, "%d error(s)\n", len(errs))
		} else {
			fmt.Fprintln(stdout, err)
		}
		return 1
	}
	fmt.Fprintf(stdout, "ok: %d bot(s), %d user(s) in %s\n", len(cfg.Bots), len(cfg.Users.Users), cfg.Dir)
	return 0
}

func runServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := configFlag(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
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

	m := &Main{ConfigDir: *dir, Logger: logger, Stdout: stdout}
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
