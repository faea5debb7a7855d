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
	"strings"
	"syscall"

	"github.com/switchboard-chat/switchboard/store/dbcopy"
)

var dbCopyCommand = &command{
	name:     "db copy",
	synopsis: "--from SRC --to DST",
	summary:  "copy every stored thing between stores",
	about: `
Copies everything a store holds (chats, messages, sessions, turns, the
outbox, delegations, artifacts, rooms and the secrets that sign
anonymous visitors' tokens) from SRC to DST, keeping every ID, and
prints how many rows of each table it copied. Each of SRC and DST is a
SQLite file or a postgres:// URL; $NAME stands for the value of the
environment variable NAME, so that a URL's password stays out of the
command line. Both are first brought to this binary's schema.

Stop every gateway on either database first. A DST that holds data
already is refused and left as it is; a copy that fails leaves DST
empty.

Exit status: 0 when copied, 1 when the copy failed or was refused, 2 on
a usage error.`,
	flags: func(fs *flag.FlagSet) {
		fs.String("from", "", "copy from `SRC`: a SQLite file, a postgres:// URL or $NAME")
		fs.String("to", "", "copy to `DST`: a SQLite file, a postgres:// URL or $NAME")
	},
	run: runDBCopy,
}

// runDBCopy runs `switchboard db copy`.
func runDBCopy(fs *flag.FlagSet, _ []string, stdout, stderr io.Writer) int {
	var ends [2]string
	for i, name := range []string{"from", "to"} {
		v := fs.Lookup(name).Value.String()
		if v == "" {
			fmt.Fprintf(stderr, "switchboard db copy: --%s is required\n\nUsage: switchboard db copy --from SRC --to DST\n", name)
			return 2
		}
		if env, ok := strings.CutPrefix(v, "$"); ok {
			if v = os.Getenv(env); v == "" {
				fmt.Fprintf(stderr, "switchboard db copy: --%s: the environment variable %s is unset or empty\n", name, env)
				return 2
			}
		}
		ends[i] = v
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel()}))
	counts, err := dbcopy.Copy(ctx, ends[0], ends[1], logger)
	if err != nil {
		if errors.Is(err, dbcopy.ErrNotEmpty) {
			fmt.Fprintln(stderr, "switchboard db copy: refused:", err)
		} else {
			fmt.Fprintln(stderr, "switchboard db copy:", err)
		}
		return 1
	}
	total := 0
	for _, c := range counts {
		fmt.Fprintf(stdout, "%-18s %d\n", c.Table, c.Rows)
		total += c.Rows
	}
	fmt.Fprintf(stdout, "copied %d rows\n", total)
	return 0
}
