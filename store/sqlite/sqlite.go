// Package sqlite is Switchboard's embedded store: one SQLite file
// (github.com/mattn/go-sqlite3) in WAL mode, with foreign keys on and the
// schema's migrations embedded in the binary and applied at open. Writes
// go through one connection, each in a transaction that returns once it
// has committed; reads use a small pool beside it. It implements every
// store contract of the core (store/storetest checks them).
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	_ "github.com/mattn/go-sqlite3" // the database/sql driver "sqlite3"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
)

// The core's store contracts.
var (
	_ gateway.Store        = (*Store)(nil)
	_ gateway.SessionStore = (*Store)(nil)
	_ outbox.Store         = (*Store)(nil)
)

// Store is the SQLite store. It is safe for concurrent use.
type Store struct {
	// Writes run on wc, the one connection of w, with the statements
	// prepared on it, all on writeLoop's goroutine (writer.go).
	w      *sql.DB
	wc     *sql.Conn
	wstmts map[string]*sql.Stmt
	ids    *ids
	// checksOff is set when a write alone left foreign key checks off
	// (writer.go).
	checksOff bool
	writes    chan writeReq
	quit      chan struct{}
	stopped   chan struct{}

	ck           *sql.DB // the checkpointer's connection (checkpoint.go)
	checkpointed chan struct{}

	r      *sql.DB // readers, beside the writer thanks to WAL
	rmu    sync.Mutex
	rstmts map[string]*sql.Stmt

	// sweepMu keeps retention's deletions one at a time.
	sweepMu sync.Mutex

	closeOnce sync.Once
	closeErr  error
}

// readers is the size of the read pool.
const readers = 4

// Open opens (creating if needed) the database at path and migrates it.
// The database's files are its owner's alone (mode 0600, see files.go).
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	if err := secureFiles(path, o.logger); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "5000")
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	w, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	wc, err := w.Conn(ctx)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &Store{
		w: w, wc: wc, wstmts: make(map[string]*sql.Stmt), ids: newIDs(), rstmts: make(map[string]*sql.Stmt),
		writes: make(chan writeReq), quit: make(chan struct{}), stopped: make(chan struct{}),
		checkpointed: make(chan struct{}),
	}
	if err := checkFTS5(ctx, wc); err != nil {
		s.closeWriter()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := s.migrate(ctx); err != nil {
		s.closeWriter()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	q.Set("mode", "ro")
	r, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		s.closeWriter()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	s.r = r
	q.Del("mode")
	ck, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err == nil {
		_, err = wc.ExecContext(ctx, fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", backstopPages))
	}
	if err != nil {
		if ck != nil {
			ck.Close()
		}
		r.Close()
		s.closeWriter()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	ck.SetMaxOpenConns(1)
	s.ck = ck
	go s.writeLoop()
	go s.checkpointLoop(ck)
	return s, nil
}

// Close closes the store's connections. Calling it again returns the
// first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.rmu.Lock()
		for _, st := range s.rstmts {
			st.Close()
		}
		s.rstmts = nil
		s.rmu.Unlock()
		close(s.quit)
		<-s.stopped
		<-s.checkpointed
		s.closeErr = errors.Join(s.r.Close(), s.ck.Close(), s.closeWriter())
	})
	return s.closeErr
}

// closeWriter closes the writer's statements and connection, once no
// write runs.
func (s *Store) closeWriter() error {
	for _, st := range s.wstmts {
		st.Close()
	}
	s.wstmts = nil
	return errors.Join(s.wc.Close(), s.w.Close())
}

// errClosed is returned by calls after Close.
var errClosed = errors.New("store: closed")

// txn is a transaction: a write transaction on the writer connection
// (writer.go), or a read transaction on a reader connection. Queries are
// prepared once per connection and kept: SQLite spends more preparing
// most of them than running them.
type txn struct {
	ctx context.Context
	s   *Store
	// tx is a reader's transaction, nil on the writer.
	tx *sql.Tx
	// unprepared are the queries a reader's transaction used that the
	// readers had not prepared yet (see stmt).
	unprepared []string
	// learnt is what a write learned of the rows ids remembers.
	learnt *ids
	// forgot is what a write deleted of the rows ids remembers.
	forgot *ids
}

// read runs fn in a read transaction on a reader connection: its reads
// see one snapshot of the database.
func (s *Store) read(ctx context.Context, fn func(*txn) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	t := &txn{ctx: ctx, s: s, tx: tx}
	err = fn(t)
	tx.Rollback()
	// Prepared for the next reads once this one has let go of its
	// connection: preparing takes one from the pool.
	for _, q := range t.unprepared {
		s.prepareRead(ctx, q)
	}
	return err
}

// view runs fn, a read, on the writer connection, at the start of the
// next batch's transaction, before its writes (see writer.go). A reader
// connection empties its page cache whenever the database has changed
// since its last read, so under a stream of writes each of its reads
// starts cold; the writer's cache holds what every write touched. The
// reads a turn needs (its turn, history and route) go this way.
func (s *Store) view(ctx context.Context, fn func(*txn) error) error {
	return s.queue(writeReq{ctx: ctx, fn: fn, view: true, done: make(chan error, 1)})
}

// stmt returns query prepared for t's connection. On a reader the first
// use prepares it for this transaction alone, and read prepares it for the
// readers afterwards (preparing for the readers takes a connection of
// the pool, which may all be held by transactions waiting the same way).
func (t *txn) stmt(query string) (*sql.Stmt, error) {
	if t.tx == nil {
		if st, ok := t.s.wstmts[query]; ok {
			return st, nil
		}
		st, err := t.s.wc.PrepareContext(t.ctx, query)
		if err != nil {
			return nil, err
		}
		t.s.wstmts[query] = st
		return st, nil
	}
	t.s.rmu.Lock()
	st, ok := t.s.rstmts[query]
	t.s.rmu.Unlock()
	if ok {
		return t.tx.StmtContext(t.ctx, st), nil
	}
	t.unprepared = append(t.unprepared, query)
	return t.tx.PrepareContext(t.ctx, query)
}

func (t *txn) exec(query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(t.ctx, args...)
}

func (t *txn) query(query string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(t.ctx, args...)
}

// scanOne reads one row into dest; no row is sql.ErrNoRows.
func (t *txn) scanOne(query string, args []any, dest ...any) error {
	st, err := t.stmt(query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(t.ctx, args...).Scan(dest...)
}

// insert runs an INSERT and returns the new row's ID.
func (t *txn) insert(query string, args ...any) (int64, error) {
	res, err := t.exec(query, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// prepareRead prepares query for the readers, unless it is already.
func (s *Store) prepareRead(ctx context.Context, query string) (*sql.Stmt, error) {
	s.rmu.Lock()
	st, ok := s.rstmts[query]
	closed := s.rstmts == nil
	s.rmu.Unlock()
	if ok {
		return st, nil
	}
	if closed {
		return nil, errClosed
	}
	st, err := s.r.PrepareContext(context.WithoutCancel(ctx), query)
	if err != nil {
		return nil, err
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if prev, ok := s.rstmts[query]; ok || s.rstmts == nil {
		st.Close()
		if !ok {
			return nil, errClosed
		}
		return prev, nil
	}
	s.rstmts[query] = st
	return st, nil
}

// query runs a read outside a transaction, on a reader.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.prepareRead(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// scanOne reads one row outside a transaction, on a reader; no row is
// sql.ErrNoRows.
func (s *Store) scanOne(ctx context.Context, query string, args []any, dest ...any) error {
	st, err := s.prepareRead(ctx, query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, args...).Scan(dest...)
}

// Secret returns the named random secret, creating it with n random
// bytes on first use. It survives restarts (anonymous visitors' tokens
// are signed with one).
func (s *Store) Secret(ctx context.Context, name string, n int) ([]byte, error) {
	var v []byte
	err := s.write(ctx, func(tx *txn) error {
		err := tx.scanOne(`SELECT value FROM meta WHERE key = ?`, []any{"secret:" + name}, &v)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		v = make([]byte, n)
		rand.Read(v)
		_, err = tx.exec(`INSERT INTO meta (key, value) VALUES (?, ?)`, "secret:"+name, v)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: secret: %w", err)
	}
	return v, nil
}

// timeNow is the store's clock for the rows the caller gives no time for.
var timeNow = time.Now

// micros is how times are stored: Unix microseconds, UTC.
func micros(t time.Time) int64 { return t.UTC().UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
