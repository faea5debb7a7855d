package main

import (
	"strings"
	"testing"
)

// TestTerminalHelp: chat, send and conv answer --help, -h and `help
// CMD` with exit 0, their usage, an example and their flags' real
// defaults; an unknown flag is exit 2.
func TestTerminalHelp(t *testing.T) {
	t.Setenv("SWITCHBOARD_SERVER", "")
	want := map[string][]string{
		"chat": {"Usage: switchboard chat BOT [BOT…] | --conv ID\n", "switchboard chat finnshipley", "--conv ID", `default: "1m0s"`},
		"send": {`Usage: switchboard send BOT "text"|- [--timeout 60s] [--json]`, "echo \"hello\" | switchboard send", `default: "1m0s"`, "--json"},
		"conv": {"Usage: switchboard conv new NAME --with BOT,BOT [--open] | list | show ID [--limit N] | join ID | invite ID USER",
			"switchboard conv new standup --with", "--with IDs", `default: "20"`},
	}
	for name, w := range want {
		for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {"help", name}, {name, "x", "--help"}} {
			code, out, errOut := runCLI(args...)
			if code != 0 || errOut != "" {
				t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
			}
			for _, s := range append(w, `--server URL`, `default: "http://127.0.0.1:8080"`, "--token TOKEN", "--as NAME", "SWITCHBOARD_ADMIN_TOKEN", "-h, --help") {
				if !strings.Contains(out, s) {
					t.Errorf("%v: help lacks %q:\n%s", args, s, out)
				}
			}
		}
		if code, out, errOut := runCLI(name, "--bogus"); code != 2 || out != "" || !strings.Contains(errOut, "Usage: switchboard "+name) {
			t.Errorf("%s --bogus: exit %d, %q", name, code, errOut)
		}
	}
	if _, out, _ := runCLI("--help"); !strings.Contains(out, "switchboard chat BOT [BOT…] | --conv ID") || !strings.Contains(out, "one message; print the reply, exit") {
		t.Errorf("usage:\n%s", out)
	}
}
