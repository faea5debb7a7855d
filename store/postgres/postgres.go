// Package postgres is Switchboard's store on a PostgreSQL server
// (github.com/jackc/pgx/v5 through a pgxpool), for a deployment that
// outgrows one SQLite file. Its schema means what the SQLite store's
// means, with PostgreSQL's types; its migrations are embedded and
// applied at open. It implements every store contract of the core
// (store/storetest checks them).
//
// It is written for several gateway processes sharing one database:
// every write is one plain transaction on a pooled connection, nothing
// about rows is remembered between calls (only the results of this
// process's own writes whose commit went unanswered: unsure.go), IDs
// come from sequences, a
// platform message is stored once by its unique key (INSERT … ON
// CONFLICT DO NOTHING), and the turns of a session are queued under a
// lock of the session's row, so that a session's turns commit in the
// order of their IDs whichever process stores them.
package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/retention"
)

// The core's store contracts.
var (
	_ gateway.Store        = (*Store)(nil)
	_ gateway.SessionStore = (*Store)(nil)
	_ outbox.Store         = (*Store)(nil)
	_ retention.Store      = (*Store)(nil)
)

// Store is the PostgreSQL store. It is safe for concurrent use, and
// several Stores (in several processes) may share one database.
type Store struct {
	pool *pgxpool.Pool
	// where names the server and database, without the password, for
	// messages.
	where string
	log   *slog.Logger
	// gate lets work that finishes what was accepted have the pool's
	// connections before new intake (gate.go).
	gate *gate
	// unsure holds what this process's writes whose COMMIT failed would
	// have stored (unsure.go).
	unsure unsure
	// commitFault makes the next commit report a failure after it took
	// effect (tests).
	commitFault atomic.Bool
	// instance names this gateway process among those sharing the
	// database (cluster.go): it holds session leases and owns outbox
	// entries under this name.
	instance string
	// connConfig makes the process's dedicated connections (cluster.go),
	// whose errors have secret hidden.
	connConfig *pgx.ConnConfig
	secret     string
}

// Option configures Open.
type Option func(*options)

type options struct {
	logger   *slog.Logger
	instance string
}

// WithInstance names the gateway process the store works for (see
// Store.Join); without it the store makes up a name of its own.
func WithInstance(id string) Option {
	return func(o *options) { o.instance = id }
}

// WithLogger sets where the store logs (the migrations it applies).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// Sizes of the connection pool, unless the URL's pool_max_conns says
// otherwise: a turn, a delivery and an intake each hold a connection only
// for one short transaction.
const (
	defaultMaxConns = 20
	// connectTimeout bounds one attempt to connect when the URL gives no
	// connect_timeout: an unreachable server is reported, not waited on.
	connectTimeout = 10 * time.Second
)

// Open connects to the database at rawURL (postgres://…) and migrates
// it. The server unreachable or refusing the connection, or a URL that
// cannot be read, is an error that names the host and never the
// password.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	secret := password(rawURL)
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, hide(fmt.Errorf("store: the PostgreSQL URL cannot be read: %w", err), secret)
	}
	if !strings.Contains(rawURL, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	if o.instance == "" {
		o.instance = NewInstanceID()
	}
	// Every connection says whose it is: what it stores in the outbox is
	// that instance's to deliver, and its announcements carry the name
	// (migrations/0002_cluster.sql).
	cfg.ConnConfig.RuntimeParams["switchboard.instance"] = o.instance
	s := &Store{where: describe(cfg.ConnConfig), log: o.logger, gate: newGate(int(cfg.MaxConns)), instance: o.instance,
		connConfig: cfg.ConnConfig.Copy(), secret: secret}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, hide(fmt.Errorf("store: PostgreSQL %s: %w", s.where, err), secret)
	}
	if err := s.pool.Ping(ctx); err != nil {
		s.pool.Close()
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			// It answered: a wrong password, no such database or user.
			return nil, hide(fmt.Errorf("store: the PostgreSQL server %s refused the connection: %w", s.where, err), secret)
		}
		return nil, hide(fmt.Errorf("store: cannot reach the PostgreSQL server %s: %w", s.where, err), secret)
	}
	if err := s.migrate(ctx); err != nil {
		s.pool.Close()
		return nil, hide(fmt.Errorf("store: PostgreSQL %s: %w", s.where, err), secret)
	}
	return s, nil
}

// Close closes the pool's connections, once every one in use is given
// back. Calling it again does nothing.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// String names the database, without its password.
func (s *Store) String() string { return s.where }

// describe names the server and database of cfg for messages: host and
// port, database, user.
func describe(c *pgx.ConnConfig) string {
	host := c.Host
	if !strings.HasPrefix(host, "/") {
		host = net.JoinHostPort(host, strconv.Itoa(int(c.Port)))
	}
	return fmt.Sprintf("%s (database %q, user %q)", host, c.Database, c.User)
}

// password returns the password a postgres:// URL carries, in its user
// information or its query, or "" when there is none or the URL cannot
// be read.
func password(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return ""
	}
	if p, ok := u.User.Password(); ok {
		return p
	}
	return u.Query().Get("password")
}

// hiddenError is an error whose message has a password replaced; it
// unwraps to the original.
type hiddenError struct {
	err    error
	secret string
}

func (e *hiddenError) Error() string {
	msg := e.err.Error()
	if e.secret == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, e.secret, "xxxxx")
	return strings.ReplaceAll(msg, url.QueryEscape(e.secret), "xxxxx")
}

func (e *hiddenError) Unwrap() error { return e.err }

// hide makes sure err's message never shows secret (pgx's own messages
// redact passwords too; this does not rely on it).
func hide(err error, secret string) error {
	if err == nil {
		return nil
	}
	return &hiddenError{err: err, secret: secret}
}

// querier is what a transaction and the pool both run queries on.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// txn is one transaction (or, for reads that need none, the pool) with
// its context.
type txn struct {
	ctx context.Context
	q   querier
	// gate, set when q is the pool, is passed for each statement; a
	// transaction passed it once for all of its statements.
	gate *gate
}

// errRetry asks write to run its transaction again from the start: it
// lost a race that the next run sees settled (a platform message another
// process stored meanwhile).
var errRetry = errors.New("store: retry the transaction")

// maxTries bounds how often a transaction is run again after losing a
// race or a deadlock.
const maxTries = 10

// write runs fn in a transaction, committed when fn returns nil. A
// transaction PostgreSQL aborted for a deadlock or a serialization
// failure, or one whose fn returned errRetry, runs again, so fn must
// set its results afresh each time it runs.
func (s *Store) write(ctx context.Context, fn func(*txn) error) error {
	return s.run(ctx, finishing, pgx.TxOptions{}, fn)
}

// read runs fn in a read-only transaction whose reads all see one
// snapshot.
func (s *Store) read(ctx context.Context, fn func(*txn) error) error {
	return s.run(ctx, finishing, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// readBatch sends the queries queue puts in a batch in one round trip,
// in a read-only transaction whose reads all see one snapshot, and runs
// their callbacks. It is for reads that need no result of another to
// be sent.
func (s *Store) readBatch(ctx context.Context, queue func(*pgx.Batch)) error {
	if err := s.gate.enter(ctx, finishing); err != nil {
		return err
	}
	defer s.gate.leave()
	b := &pgx.Batch{}
	b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	queue(b)
	b.Queue(`COMMIT`)
	// A failed batch leaves its connection in the failed transaction;
	// the pool closes such a connection rather than reuse it.
	return s.pool.SendBatch(ctx, b).Close()
}

// writeBatch sends the statements queue puts in a batch in one round
// trip, in a read-committed transaction, and runs their callbacks; like
// write, it runs the batch again after a deadlock or serialization
// failure, so queue must reset what its callbacks set.
func (s *Store) writeBatch(ctx context.Context, queue func(*pgx.Batch)) error {
	if err := s.gate.enter(ctx, finishing); err != nil {
		return err
	}
	defer s.gate.leave()
	var err error
	for try := 0; try < maxTries; try++ {
		b := &pgx.Batch{}
		b.Queue(`BEGIN`)
		queue(b)
		b.Queue(`COMMIT`)
		if err = s.pool.SendBatch(ctx, b).Close(); !retryable(err) {
			return err
		}
	}
	return err
}

// run runs fn in a transaction with opts, for work of class c (gate.go),
// again while it fails in a way a new run may not (see retryable), at
// most maxTries times.
func (s *Store) run(ctx context.Context, c class, opts pgx.TxOptions, fn func(*txn) error) error {
	var err error
	for try := 0; try < maxTries; try++ {
		if err = s.once(ctx, c, opts, fn); !retryable(err) {
			return err
		}
		s.log.Debug("store: transaction run again", "try", try+1, "err", err)
	}
	return err
}

// once runs fn in one transaction. A failed COMMIT is a *commitError:
// whether the transaction took effect is not known.
func (s *Store) once(ctx context.Context, c class, opts pgx.TxOptions, fn func(*txn) error) error {
	if err := s.gate.enter(ctx, c); err != nil {
		return err
	}
	defer s.gate.leave()
	tx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(&txn{ctx: ctx, q: tx}); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return &commitError{err: err}
	}
	if s.commitFault.CompareAndSwap(true, false) {
		return &commitError{err: errors.New("connection lost after COMMIT (a test's fault)")}
	}
	return nil
}

// commitError is a COMMIT that failed, usually because the connection
// broke: the server may or may not have committed. See unsure.
type commitError struct{ err error }

func (e *commitError) Error() string { return "commit: " + e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

// retryable reports whether a transaction that failed with err may
// succeed if run again.
func retryable(err error) bool {
	if errors.Is(err, errRetry) {
		return true
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001") // deadlock_detected, serialization_failure
}

// pooled is a txn outside any transaction, for single statements
// (exec, scanOne, each), each its own transaction.
func (s *Store) pooled(ctx context.Context) *txn { return &txn{ctx: ctx, q: s.pool, gate: s.gate} }

// enter passes the gate for one statement on the pool (finishing work);
// a transaction has passed it already.
func (t *txn) enter() (leave func(), err error) {
	if t.gate == nil {
		return func() {}, nil
	}
	if err := t.gate.enter(t.ctx, finishing); err != nil {
		return nil, err
	}
	return t.gate.leave, nil
}

func (t *txn) exec(query string, args ...any) (int64, error) {
	leave, err := t.enter()
	if err != nil {
		return 0, err
	}
	defer leave()
	tag, err := t.q.Exec(t.ctx, query, clean(args)...)
	return tag.RowsAffected(), err
}

// query runs a query in a transaction (a pooled txn reads with each).
func (t *txn) query(query string, args ...any) (pgx.Rows, error) {
	return t.q.Query(t.ctx, query, clean(args)...)
}

// scanOne reads one row into dest; no row is pgx.ErrNoRows.
func (t *txn) scanOne(query string, args []any, dest ...any) error {
	leave, err := t.enter()
	if err != nil {
		return err
	}
	defer leave()
	return t.q.QueryRow(t.ctx, query, clean(args)...).Scan(dest...)
}

// each runs fn on every row of query.
func (t *txn) each(query string, args []any, fn func(pgx.Rows) error) error {
	leave, err := t.enter()
	if err != nil {
		return err
	}
	defer leave()
	rows, err := t.query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// clean returns args with their strings made storable as PostgreSQL
// text, which holds no NUL character and only valid UTF-8: each NUL, and
// each byte that is not UTF-8, becomes U+FFFD. Other values pass as they
// are; args itself is not changed.
func clean(args []any) []any {
	out := args
	for i, a := range args {
		if s, ok := a.(string); ok && (strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s)) {
			if &out[0] == &args[0] {
				out = slices.Clone(args)
			}
			out[i] = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
		}
	}
	return out
}

// Secret returns the named random secret, creating it with n random
// bytes on first use. Every process sharing the database gets the same
// one: the first to store it wins.
func (s *Store) Secret(ctx context.Context, name string, n int) ([]byte, error) {
	var v []byte
	err := s.write(ctx, func(tx *txn) error {
		fresh := make([]byte, n)
		rand.Read(fresh)
		if _, err := tx.exec(`INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`,
			"secret:"+name, fresh); err != nil {
			return err
		}
		return tx.scanOne(`SELECT value FROM meta WHERE key = $1`, []any{"secret:" + name}, &v)
	})
	if err != nil {
		return nil, fmt.Errorf("store: secret: %w", err)
	}
	return v, nil
}

// timeNow is the store's clock for the rows the caller gives no time for.
var timeNow = time.Now

// micros is how times are stored: Unix microseconds, UTC, as in the
// SQLite store, so that a copy between them keeps every time exactly.
func micros(t time.Time) int64 { return t.UTC().UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
