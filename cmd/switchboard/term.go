package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"github.com/switchboard-chat/switchboard/cliclient"
)

// The terminal commands (chat, send, conv; SPEC §9) share how they reach
// the gateway: --server, --token, --as.

// stdin is what send - and chat read; tests replace it.
var stdin io.Reader = os.Stdin

// termEnv is the environment section of the terminal commands' help.
const termEnv = `
SWITCHBOARD_ADMIN_TOKEN  the default of --token: the gateway's admin token
SWITCHBOARD_SERVER       the default of --server`

// clientFlags adds --server, --token and --as to fs, with their defaults
// as they are in this process.
func clientFlags(fs *flag.FlagSet) {
	server := os.Getenv("SWITCHBOARD_SERVER")
	if server == "" {
		server = cliclient.DefaultServer
	}
	fs.String("server", server, "the gateway's `URL`: $SWITCHBOARD_SERVER when set")
	fs.String("token", "", "the gateway's admin `TOKEN`; when empty, $SWITCHBOARD_ADMIN_TOKEN (never shown here)")
	fs.String("as", loginName(), "speak as cli-`NAME`, which users.yaml may list among a person's identities; the default is the login name")
}

// loginName is the user's login name, made a valid cli name.
func loginName() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if s := cliclient.Sanitize(name); s != "" {
		return s
	}
	return "me"
}

// flagOptions reads --server, --token (else SWITCHBOARD_ADMIN_TOKEN) and
// --as.
func flagOptions(fs *flag.FlagSet) (cliclient.Options, error) {
	token := fs.Lookup("token").Value.String()
	if token == "" {
		token = os.Getenv("SWITCHBOARD_ADMIN_TOKEN")
	}
	as := fs.Lookup("as").Value.String()
	if as == "" || cliclient.Sanitize(as) != as {
		return cliclient.Options{}, fmt.Errorf("--as %q: a name is letters, digits and . _ @ - (at most 64), starting with a letter or digit", as)
	}
	return cliclient.Options{Server: fs.Lookup("server").Value.String(), Token: token, As: as}, nil
}

// dialFlags dials the gateway as the flags say. Its error is one line
// that names the fix.
func dialFlags(ctx context.Context, fs *flag.FlagSet) (*cliclient.Conn, error) {
	o, err := flagOptions(fs)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return cliclient.Dial(ctx, o)
}

// parseInterleaved parses fs's flags wherever they are among args and
// returns the other arguments in order; everything after "--" is an
// argument.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError prints a command's one-line reason and usage and returns 2.
// (It takes the name and synopsis, not the command, which refers to the
// function that calls it.)
func usageError(stderr io.Writer, name, synopsis, format string, args ...any) int {
	c := command{name: name, synopsis: synopsis}
	fmt.Fprintf(stderr, "switchboard %s: %s\n\n%s", name, fmt.Sprintf(format, args...), c.usageLine())
	fmt.Fprintf(stderr, "Run 'switchboard %s --help' for more.\n", name)
	return 2
}
