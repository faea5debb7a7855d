package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/config"
)

// runCLI runs one command line in-process and returns its exit code and
// output.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// checkBots is a bots.yaml whose five templates (%s) the tests fill in.
const checkBots = `gateway:
  listen: 127.0.0.1:0
bots:
  - id: matty
    name: Matty Atlas
    brain:
      kind: script
      rules:
        - match: '(?i)^hello'
          reply: 'Hi %s'
        - match: '(?i)^report (\w+)'
          reply: Here is the report.
          artifacts:
            - name: report.md
              content: |
                # Report on {{index .Match 1}}
                %s
  - id: finn
    name: Finn Shipley
    brain:
      kind: script
      default: |
        {{with .Delegation}}Task from {{.From}}: %s{{else}}%s{{end}}
        {{range .History}}- {{.From}}: %s
        {{end}}
`

// checkUsers is the users.yaml of the check tests.
const checkUsers = "users:\n  - id: user-bryan\n    name: Bryan\n    identities: [web-bryan]\n"

// validTemplates fill checkBots without a mistake.
var validTemplates = [5]string{"{{.User.Name}}", "by {{.User.Name}} for {{.Bot.Name}}", "{{.Task}}", "{{.Text}}", "{{.Text}}"}

// botsWith returns checkBots with its five templates: the hello reply
// (line 10), the report's second line (17), Finn's delegated and
// ordinary replies (23) and the line of his history (24).
func botsWith(templates [5]string) string {
	bots := checkBots
	for _, tmpl := range templates {
		bots = strings.Replace(bots, "%s", tmpl, 1)
	}
	return bots
}

// withTemplate is validTemplates with template i replaced.
func withTemplate(i int, tmpl string) [5]string {
	t := validTemplates
	t[i] = tmpl
	return t
}

// TestCheckTemplates runs `switchboard check` on templates with and
// without mistakes: each mistake is a line FILE:LINE: KEY: message with
// the closest real field, and valid templates pass.
func TestCheckTemplates(t *testing.T) {
	tests := []struct {
		name      string
		templates [5]string
		code      int
		want      []string // the output's lines
	}{
		{
			name:      "valid",
			templates: validTemplates,
			want:      []string{"ok: 2 bots, 1 user in DIR"},
		},
		{
			name:      "typo in a reply",
			templates: withTemplate(0, "{{.User.Nmae}}"),
			code:      1,
			want: []string{
				"bots.yaml:10: bots[0].brain.rules[0].reply: unknown field .User.Nmae (did you mean .User.Name?)",
				"1 error",
			},
		},
		{
			name:      "a typo in each template",
			templates: [5]string{"{{.Usr.Name}}", "{{.Bot.Nme}}", "{{.Tsak}}", "{{.Txet | upper}}", "{{.Text.Body}}"},
			code:      1,
			want: []string{
				"bots.yaml:10: bots[0].brain.rules[0].reply: unknown field .Usr (did you mean .User?)",
				"bots.yaml:17: bots[0].brain.rules[1].artifacts[0].content: unknown field .Bot.Nme (did you mean .Bot.Name?)",
				"bots.yaml:23: bots[1].brain.default: unknown field .Tsak (here . is .Delegation; did you mean .Task?)",
				"bots.yaml:23: bots[1].brain.default: unknown field .Txet (did you mean .Text?)",
				"bots.yaml:24: bots[1].brain.default: unknown field .Text.Body: .Text is a string, which has no fields",
				"5 errors",
			},
		},
		{
			name:      "inside range",
			templates: withTemplate(4, "{{.Frm}}"),
			code:      1,
			want: []string{
				"bots.yaml:24: bots[1].brain.default: unknown field .Frm (here . is an element of .History; did you mean .From?)",
				"1 error",
			},
		},
		{
			name:      "method-like chain",
			templates: withTemplate(0, "{{.Delegation.Frm}}"),
			code:      1,
			want: []string{
				"bots.yaml:10: bots[0].brain.rules[0].reply: unknown field .Delegation.Frm (did you mean .Delegation.From?)",
				"1 error",
			},
		},
		{
			name:      "helper given the wrong type",
			templates: withTemplate(1, "{{join .Text \", \"}}"),
			code:      1,
			want: []string{
				"bots.yaml:17: bots[0].brain.rules[1].artifacts[0].content: fails on a sample message: at <.Text>: wrong type for value; expected []string; got string",
				"1 error",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeConfig(t, dir, botsWith(tt.templates), checkUsers)
			code, out, _ := runCLI("check", "--config", dir)
			want := strings.ReplaceAll(strings.Join(tt.want, "\n"), "DIR", dir) + "\n"
			if code != tt.code || out != want {
				t.Errorf("exit %d, output:\n%s\nwant exit %d, output:\n%s", code, out, tt.code, want)
			}
		})
	}
}

// TestCheckBaseURLWarning: an openai base_url without /v1 is a warning:
// check prints it and still exits 0; with an error too, it exits 1.
func TestCheckBaseURLWarning(t *testing.T) {
	const bots = `bots:
  - id: llama
    brain:
      kind: openai
      base_url: http://127.0.0.1:11434
      model: llama3.2
`
	dir := t.TempDir()
	writeConfig(t, dir, bots, checkUsers)
	code, out, _ := runCLI("check", "--config", dir)
	want := `bots.yaml:5: bots[0].brain.base_url: warning: "http://127.0.0.1:11434" does not end in an API version such as /v1, ` +
		"so requests go to http://127.0.0.1:11434/chat/completions, which most servers do not serve (Ollama, llama.cpp, vLLM and " +
		"OpenAI answer under /v1, Groq under /openai/v1, OpenRouter under /api/v1, Gemini under /v1beta/openai) " +
		"(did you mean http://127.0.0.1:11434/v1?)\n" +
		"ok: 1 bot, 1 user in " + dir + " (1 warning)\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, output:\n%s\nwant exit 0, output:\n%s", code, out, want)
	}

	writeConfig(t, dir, bots+"    public: maybe\n", checkUsers)
	code, out, _ = runCLI("check", "--config", dir)
	if code != 1 || !strings.Contains(out, "bots.yaml:5: bots[0].brain.base_url: warning: ") ||
		!strings.Contains(out, "bots.yaml:7: bots[0].public: ") || !strings.HasSuffix(out, "1 error, 1 warning\n") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

// serve shares check's validation: a gateway refuses to start on a
// template typo, and a running one rejects an edit that adds one.
func TestServeChecksTemplates(t *testing.T) {
	typo := botsWith(withTemplate(0, "{{.User.Nmae}}"))
	dir := t.TempDir()
	writeConfig(t, dir, typo, checkUsers)
	m := &Main{ConfigDir: dir, Listen: "127.0.0.1:0", Logger: testLogger(t)}
	err := m.Run(context.Background())
	var errs config.Errors
	if !errors.As(err, &errs) || !strings.Contains(errs.Error(), "bots.yaml:10: bots[0].brain.rules[0].reply: unknown field .User.Nmae (did you mean .User.Name?)") {
		t.Fatalf("Run = %v, want the template typo", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "switchboard.db")); err == nil {
		t.Error("a gateway that refused to start created its database")
	}

	good := botsWith(validTemplates)
	writeConfig(t, dir, good, checkUsers)
	logs := &syncBuffer{}
	m = &Main{ConfigDir: dir, Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(logs, nil))}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	before := m.watcher.Current()
	time.Sleep(300 * time.Millisecond) // the watcher's first look
	writeInPlace(t, filepath.Join(dir, "bots.yaml"), typo)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "unknown field .User.Nmae") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "config edit rejected") || !strings.Contains(logs.String(), "unknown field .User.Nmae") {
		t.Fatalf("the edit was not rejected for its typo; log:\n%s", logs)
	}
	if m.watcher.Current() != before {
		t.Error("an edit with a template typo replaced the configuration")
	}
}

// TestHelp: --help and -h on every command exit 0 and print the
// command's usage with its flags' real defaults on standard output.
func TestHelp(t *testing.T) {
	t.Setenv("SWITCHBOARD_CONFIG", "")
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"serve", "--help"}, {"serve", "-h"}, {"help", "serve"},
		{"check", "--help"}, {"check", "-h"}, {"help", "check"},
		{"version", "--help"}, {"version", "-h"}, {"help", "version"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(args...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			var want []string
			switch name := args[len(args)-1]; name {
			case "serve", "check":
				want = []string{"Usage: switchboard " + name + " [--config DIR]\n", "--config DIR", `default: "."`, "-h, --help"}
			case "version":
				want = []string{"Usage: switchboard version\n", "-h, --help"}
			default:
				if len(args) == 2 { // "serve --help" and the like
					want = []string{"Usage: switchboard " + args[0]}
					break
				}
				want = []string{"switchboard serve [--config DIR]", "switchboard check [--config DIR]", "switchboard version"}
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("help lacks %q:\n%s", w, out)
				}
			}
		})
	}
	t.Run("serve names gateway.listen's default", func(t *testing.T) {
		if _, out, _ := runCLI("serve", "--help"); !strings.Contains(out, "gateway.listen (bots.yaml; default "+config.DefaultListen+")") {
			t.Errorf("help:\n%s", out)
		}
	})
	t.Run("the default comes from the environment", func(t *testing.T) {
		t.Setenv("SWITCHBOARD_CONFIG", "/etc/switchboard")
		if _, out, _ := runCLI("check", "--help"); !strings.Contains(out, `default: "/etc/switchboard"`) {
			t.Errorf("help:\n%s", out)
		}
	})
}

// TestUsageErrors: an unknown flag, an argument a command does not take
// and an unknown command exit 2 with the usage on standard error.
func TestUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--bogus"}, []string{"flag provided but not defined: -bogus", "Usage: switchboard serve [--config DIR]"}},
		{[]string{"check", "-x"}, []string{"flag provided but not defined: -x", "Usage: switchboard check [--config DIR]"}},
		{[]string{"check", "configdir"}, []string{`switchboard check: unexpected argument "configdir"`, "Usage: switchboard check"}},
		{[]string{"version", "--short"}, []string{"flag provided but not defined: -short", "Usage: switchboard version"}},
		{[]string{"serve", "--config"}, []string{"flag needs an argument: -config", "Usage: switchboard serve"}},
		{[]string{"frobnicate"}, []string{`switchboard: unknown command "frobnicate"`, "switchboard check [--config DIR]"}},
		{[]string{"help", "frobnicate"}, []string{`switchboard: unknown command "frobnicate"`}},
		{nil, []string{"switchboard serve [--config DIR]"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(tt.args...)
			if code != 2 || out != "" {
				t.Errorf("exit %d, stdout %q", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

// TestBinaryCommandLine runs the built binary: its exit codes for help
// and a bad flag, and serve on an address already taken.
func TestBinaryCommandLine(t *testing.T) {
	bin := buildGatewayBinary(t)
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--help"}, 0, "Usage: switchboard serve"},
		{[]string{"check", "-h"}, 0, "Usage: switchboard check"},
		{[]string{"serve", "--nope"}, 2, "Usage: switchboard serve"},
	} {
		out, err := exec.Command(bin, tt.args...).CombinedOutput()
		if code := exitCode(err); code != tt.code || !strings.Contains(string(out), tt.want) {
			t.Errorf("%v: exit %d, output:\n%s", tt.args, code, out)
		}
	}

	t.Run("address in use", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addr := ln.Addr().String()
		dir := t.TempDir()
		writeConfig(t, dir, strings.Replace(botsWith(validTemplates), "127.0.0.1:0", addr, 1), checkUsers)
		cmd := exec.Command(bin, "serve", "--config", dir)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("serve on a taken address still runs; stderr:\n%s", stderr.String())
		}
		want := "switchboard: gateway.listen " + addr + ": address already in use (another switchboard running?)\n"
		if code := exitCode(err); code != 1 || !strings.HasSuffix(stderr.String(), want) {
			t.Errorf("exit %d, stderr:\n%s\nwant it to end %q", code, stderr.String(), want)
		}
		// It stopped before opening the database of the gateway that
		// holds the address.
		if _, err := os.Stat(filepath.Join(dir, "switchboard.db")); err == nil {
			t.Error("serve created the database before finding the address taken")
		}
	})
}
