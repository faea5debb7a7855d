package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/internal/pgtest"
)

// dbEnv names the variable through which the postgres phase gives the
// gateway its database (gateway.database_env).
const dbEnv = "SWITCHBOARD_BENCH_DATABASE_URL"

// poolConns sizes the gateway's connection pool (the URL's
// pool_max_conns) for a server on this machine, which shares its CPUs
// with the gateway and the load client: the store's default of 20 is
// for a server of its own. On the project's 2-CPU VM, 300 connections in
// a closed loop measured about 455 msg/s with 8, 330 with 20 and 190
// with 40: more backends than CPUs only wait for each other (for the
// lock that extends a growing table, and to be scheduled).
const poolConns = 8

// postgresLoad runs the web phase's load (one closed loop, then the
// fixed rate) against a gateway whose store is PostgreSQL: the throwaway
// server of scripts/ensure-postgres.sh (or $SWITCHBOARD_TEST_POSTGRES),
// with a new database for the run; then against two gateways sharing a
// new database, the connections spread over both. Its figures stand
// beside the web phase's SQLite ones.
func (b *bench) postgresLoad(ctx context.Context) error {
	server, err := postgresServer(ctx)
	if err != nil {
		return err
	}
	one, err := b.onPostgres(ctx, server, 1)
	if err != nil {
		return err
	}
	two, err := b.onPostgres(ctx, server, 2)
	if err != nil {
		return err
	}
	st := b.web.closed.throughput()
	base := func(s string) string {
		if b.web.closed.completed == 0 {
			return "—"
		}
		return "SQLite " + s
	}
	for _, x := range []struct {
		label string
		f     *loadFigures
	}{{"PostgreSQL", &one}, {"PostgreSQL, two instances", &two}} {
		pt := x.f.closed.throughput()
		b.rows = append(b.rows,
			row{
				name:     "throughput /ws (script brain, " + x.label + ")",
				value:    rate(pt),
				baseline: base(fmt.Sprintf("%s (this = %s)", rate(st), share(pt, st))),
				target:   "—", verdict: "—",
			},
			row{
				name:     "latency p50 / p99 at that load (" + x.label + ")",
				value:    ms(quantile(x.f.closed.latencies, 0.5)) + " / " + ms(quantile(x.f.closed.latencies, 0.99)),
				baseline: base(ms(quantile(b.web.closed.latencies, 0.5)) + " / " + ms(quantile(b.web.closed.latencies, 0.99))),
				target:   "—", verdict: "—",
			},
			row{
				name:     fmt.Sprintf("latency p50 / p99 at %s msg/s offered (%s)", thousands(int64(b.opts.rate)), x.label),
				value:    openLatency(&x.f.open),
				baseline: base(openLatency(&b.web.open)),
				target:   "—", verdict: "—",
			},
		)
		if n := x.f.closed.answers; n > 0 {
			b.note("%s: the gateways used %.1f CPU-seconds in the closed loop, %.0f µs per answered message; the machine's CPUs were %s (PostgreSQL's processes are in the rest).",
				x.label, x.f.closedUse.server.Seconds(), microsEach(x.f.closedUse.server, n), x.f.closedUse.split("gateways", "load client"))
		}
	}
	b.note("postgres: gateways on a throwaway PostgreSQL on this machine (scripts/ensure-postgres.sh: fsync, synchronous_commit and full_page_writes off), each run in a new database (so its first seconds run before any statistics), each gateway through a pool of %d connections (pool_max_conns: the server shares this machine's CPUs); one closed loop and the fixed load; with two instances the connections are spread evenly over both, every reply is announced to the other (LISTEN/NOTIFY) and sessions are leased. The SQLite figures beside them are the web phase's. Every statement is a round trip between two processes and all of it shares this machine's CPUs, so two instances here measure the cost of coordination, not the gain of a second machine.", poolConns)
	return nil
}

// onPostgres runs the load against n gateways sharing a new database on
// server.
func (b *bench) onPostgres(ctx context.Context, pgServer string, n int) (loadFigures, error) {
	var f loadFigures
	b.progress("postgres: a new database on %s for %d gateway(s)", redact(pgServer), n)
	dbURL, drop, err := newDatabase(ctx, pgServer)
	if err != nil {
		return f, err
	}
	defer drop()
	if dbURL, err = withPool(dbURL, poolConns); err != nil {
		return f, err
	}
	bots := func(listen string) string {
		return strings.Replace(scriptBots(listen), "  database: bench.db\n", "  database_env: "+dbEnv+"\n", 1)
	}
	var gws []*server
	defer func() {
		for _, gs := range gws {
			if stopErr := gs.stop(); stopErr != nil {
				b.note("gateway shutdown after postgres: %v", stopErr)
			}
		}
	}()
	for range n {
		gs, err := startGateway(ctx, b.bin, b.tmp, bots, dbEnv+"="+dbURL)
		if err != nil {
			return f, err
		}
		gws = append(gws, gs)
	}
	what := fmt.Sprintf("PostgreSQL (%d gateways)", n)
	f, err = b.measureSpread(ctx, gws, true, true)
	if err != nil {
		return f, fmt.Errorf("%s: %w\n%s", what, err, gws[0].logTail())
	}
	for _, x := range []struct {
		who string
		r   *loadResult
	}{{"closed loop", &f.closed}, {"open loop", &f.open}} {
		switch {
		case x.r.failures > 0:
			b.fail(what+" "+x.who, fmt.Errorf("%d failed messages, e.g. %v", x.r.failures, x.r.firstFailure))
		case x.r.completed == 0 && x.r.answers == 0 && (x.r == &f.closed || x.r.unanswered == 0):
			b.fail(what+" "+x.who, errNoAnswers)
		case x.r.completed == 0 && x.r.answers > 0:
			// Answered, but every answer after the window: a machine too
			// busy for this phase's length, not a broken path.
			b.note("%s %s: %d answers, all after the measured window; the machine was too busy to measure it", what, x.who, x.r.answers)
		}
	}
	if f.open.unanswered > 0 {
		// Past the store's rate the queue grows for the whole phase:
		// what was measured is how long the sends had waited by then.
		b.note("%s: %s msg/s offered is more than it answers; %s of its measured messages were still unanswered 5 s after the phase, so its latencies are lower bounds (the wait so far).",
			what, thousands(int64(b.opts.rate)), thousands(int64(f.open.unanswered)))
	}
	return f, nil
}

// postgresServer returns the URL of a server where a database may be
// created.
func postgresServer(ctx context.Context) (string, error) {
	if u := strings.TrimSpace(os.Getenv(pgtest.EnvURL)); u != "" {
		return u, nil
	}
	return pgtest.RunScript(ctx)
}

// newDatabase creates a database with a random name on server and
// returns its URL and the function that drops it.
func newDatabase(ctx context.Context, server string) (string, func(), error) {
	b := make([]byte, 6)
	rand.Read(b)
	name := "sbbench_" + hex.EncodeToString(b)
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE DATABASE " + pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create database on %s: %w", redact(server), err)
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), func() { exec("DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)") }, nil
}

// withPool returns the database URL raw with its pool's size set to n.
func withPool(raw string, n int) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// redact is a server's URL without its password, for progress lines.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
