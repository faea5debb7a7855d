package exec

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The fake CLI is this test binary run again with fakeArg as its first
// argument: TestMain sees it and acts as the CLI instead of running
// tests. (An argument rather than an environment variable: the variable
// would have to be set in this process for the brain to pass it on, and
// would then turn fuzzing workers, which inherit it, into fakes too.)
const fakeArg = "-switchboard-fake-cli"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == fakeArg {
		os.Exit(fakeCLI(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	// A race-enabled fake would sleep a second at exit without GORACE's
	// atexit_sleep_ms=0; brains under test pass GORACE on.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// fake returns a command line running the fake CLI with args, each
// "key" or "key=value":
//
//	new, resume      start (fails if it exists) or continue the state file of the session
//	session=ID       the session the CLI is told about (use {session})
//	out=text|json|jsonl|iserror|noresult|empty|binary   how to print the answer (default text)
//	sid=ID           the session_id printed in JSON; state is kept under it
//	echo             answer with the whole prompt read on stdin
//	env              answer with the environment, one NAME=value a line
//	mcp              answer with the MCP variables, then the mode and text of switchboard-mcp.json
//	produce          write competitors.json (from notes.md) and summary.md
//	artifacts        answer with what artifacts/ holds (artifactsListing)
//	scribble         write mine.txt into artifacts/ (the gateway's directory)
//	symlink=NAME     make NAME a symlink to a file outside the directory
//	stderr=TEXT      print TEXT on stderr; stderrbytes=N prints N bytes
//	exit=N           exit with status N after printing
//	hang             start a grandchild, note both pids in *.pid files, sleep
func fake(args ...string) []string {
	return append([]string{self(), fakeArg}, args...)
}

// self is the test binary's path, absolute so it works from any
// directory.
func self() string {
	p, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return p
}

// fakeCLI is the fake's main.
func fakeCLI(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opt := make(map[string]string)
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		opt[k] = v
	}
	input, _ := io.ReadAll(stdin)
	if _, ok := opt["sleep"]; ok {
		time.Sleep(time.Minute)
		return 0
	}
	if _, ok := opt["hang"]; ok {
		return hang(stdout)
	}
	if s, ok := opt["stderrbytes"]; ok {
		n, _ := strconv.Atoi(s)
		fmt.Fprint(stderr, "START"+strings.Repeat("e", n-8)+"END")
	}
	if s := opt["stderr"]; s != "" {
		fmt.Fprintln(stderr, s)
	}

	session := opt["session"]
	if opt["sid"] != "" {
		session = opt["sid"]
	}
	turn := 0
	_, isNew := opt["new"]
	_, isResume := opt["resume"]
	if isNew || isResume {
		var err error
		if turn, err = step(session, isNew); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
	}

	result := fmt.Sprintf("turn %d of %s", turn, opt["session"])
	if _, ok := opt["echo"]; ok {
		result = string(input)
	}
	if _, ok := opt["env"]; ok {
		env := os.Environ()
		slices.Sort(env)
		result = strings.Join(env, "\n")
	}
	if _, ok := opt["mcp"]; ok {
		result = os.Getenv("SWITCHBOARD_MCP_URL") + "\n" + os.Getenv("SWITCHBOARD_MCP_TOKEN") + "\n"
		if fi, err := os.Stat("switchboard-mcp.json"); err == nil {
			b, _ := os.ReadFile("switchboard-mcp.json")
			result += fmt.Sprintf("%o\n%s", fi.Mode().Perm(), b)
		} else {
			result += "no file"
		}
	}
	if _, ok := opt["artifacts"]; ok {
		result = artifactsListing()
	}
	if _, ok := opt["scribble"]; ok {
		os.WriteFile(filepath.Join("artifacts", "mine.txt"), []byte("mine"), 0o600)
	}
	if _, ok := opt["produce"]; ok {
		notes, _ := os.ReadFile("notes.md")
		js, _ := json.Marshal(map[string]string{"notes": string(notes)})
		os.WriteFile("competitors.json", js, 0o600)
		os.WriteFile("summary.md", []byte("# Summary\n"), 0o600)
	}
	if name := opt["symlink"]; name != "" {
		// The work root is a test's temporary directory.
		secret, _ := filepath.Abs(filepath.Join("..", "outside.txt"))
		os.WriteFile(secret, []byte("outside"), 0o600)
		os.Symlink(secret, name)
	}

	switch opt["out"] {
	case "", "text":
		fmt.Fprintln(stdout, result)
	case "json":
		json.NewEncoder(stdout).Encode(map[string]any{"type": "result", "result": result, "session_id": opt["sid"]})
	case "jsonl":
		fmt.Fprintln(stdout, `{"type":"system","subtype":"init"}`)
		json.NewEncoder(stdout).Encode(map[string]any{"type": "result", "result": result, "session_id": opt["sid"]})
	case "iserror":
		fmt.Fprintln(stdout, `{"type":"result","subtype":"error_during_execution","is_error":true,"result":"credit too low"}`)
	case "noresult":
		fmt.Fprintln(stdout, `{"type":"result","session_id":"x"}`)
	case "binary":
		stdout.Write([]byte{0xff, 0xfe, 0x00, 0x01})
	case "empty":
	}
	if s := opt["exit"]; s != "" {
		n, _ := strconv.Atoi(s)
		return n
	}
	return 0
}

// artifactsListing describes artifacts/ in the working directory:
// "dir MODE", then "NAME MODE CONTENT" a file, by name; "no artifacts"
// when it is missing, "artifacts is MODE" when it is no directory.
func artifactsListing() string {
	fi, err := os.Lstat("artifacts")
	switch {
	case err != nil:
		return "no artifacts"
	case !fi.IsDir():
		return "artifacts is " + fi.Mode().String()
	}
	lines := []string{fmt.Sprintf("dir %o", fi.Mode().Perm())}
	entries, _ := os.ReadDir("artifacts")
	for _, e := range entries {
		info, _ := e.Info()
		b, _ := os.ReadFile(filepath.Join("artifacts", e.Name()))
		lines = append(lines, fmt.Sprintf("%s %o %s", e.Name(), info.Mode().Perm(), b))
	}
	return strings.Join(lines, "\n")
}

// step advances the fake's per-session state file in the working
// directory and returns the turn number.
func step(session string, isNew bool) (int, error) {
	path := session + ".state"
	b, err := os.ReadFile(path)
	switch {
	case isNew && err == nil:
		return 0, fmt.Errorf("session %s already exists", session)
	case !isNew && err != nil:
		return 0, fmt.Errorf("no conversation found with session ID: %s", session)
	}
	n, _ := strconv.Atoi(string(b))
	n++
	return n, os.WriteFile(path, []byte(strconv.Itoa(n)), 0o600)
}

// hang starts a grandchild that shares stdout (so it holds the pipe, as a
// stray tool process would), writes both pids, and sleeps.
func hang(stdout io.Writer) int {
	gc := osexec.Command(self(), fakeArg, "sleep")
	gc.Stdout = stdout
	if err := gc.Start(); err != nil {
		return 9
	}
	os.WriteFile("grandchild.pid", []byte(strconv.Itoa(gc.Process.Pid)), 0o600)
	os.WriteFile("child.pid", []byte(strconv.Itoa(os.Getpid())), 0o600)
	time.Sleep(time.Minute)
	return 0
}
