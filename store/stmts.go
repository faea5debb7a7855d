package store

import (
	"context"
	"database/sql"
	"sync"

	"github.com/switchboard-chat/switchboard/gateway"
)

// Statements are prepared once per pool and reused: preparing a statement
// costs SQLite more than running most of ours. These are the readers'; the
// committer keeps its own (see conn).

// stmtKey names a statement of one pool.
type stmtKey struct {
	db    *sql.DB
	query string
}

// stmtCache holds the prepared statements of a store.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[stmtKey]*sql.Stmt
}

// cached returns the prepared statement for query on db, if any.
func (s *SQLite) cached(db *sql.DB, query string) (*sql.Stmt, bool) {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	st, ok := s.stmts.stmts[stmtKey{db, query}]
	return st, ok
}

// prep returns the prepared statement for query on db, preparing it on
// first use.
func (s *SQLite) prep(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	if st, ok := s.cached(db, query); ok {
		return st, nil
	}
	// Prepared without holding the lock: preparing may wait for a
	// connection.
	st, err := db.PrepareContext(context.WithoutCancel(ctx), query)
	if err != nil {
		return nil, err
	}
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	if prev, ok := s.stmts.stmts[stmtKey{db, query}]; ok {
		st.Close()
		return prev, nil
	}
	if s.stmts.stmts == nil {
		s.stmts.stmts = make(map[stmtKey]*sql.Stmt)
	}
	s.stmts.stmts[stmtKey{db, query}] = st
	return st, nil
}

// closeStmts releases every prepared statement.
func (s *SQLite) closeStmts() {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	for _, st := range s.stmts.stmts {
		st.Close()
	}
	s.stmts.stmts = nil
}

// query runs a read on the reader pool.
func (s *SQLite) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := s.prep(ctx, s.r, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRow runs a one-row read on the reader pool.
func (s *SQLite) queryRow(ctx context.Context, q string, args ...any) scanner {
	st, err := s.prep(ctx, s.r, q)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// errRow is a row whose query could not be prepared.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// txn is a write transaction on the committer's connection; one serves
// every write of a batch.
type txn struct {
	c *conn
	s *SQLite
}

// onStored runs fn after the commit that makes this write durable, after
// the callbacks the batch's writes asked for before it.
func (t *txn) onStored(fn func()) { t.s.hooks = append(t.s.hooks, hook{fn: fn}) }

// onLinked adds m, just linked to session, to the session's recent
// window after the commit: onStored's commonest callback, kept as data
// rather than a closure.
func (t *txn) onLinked(session string, m *gateway.Message) {
	t.s.hooks = append(t.s.hooks, hook{session: session, msg: *m})
}

// hook is a stored callback: fn, or for the commonest one, a message
// added to a session's recent window (onLinked), which is kept as data
// rather than a closure so that the committer's reused array holds it
// and a message costs no allocation for it.
type hook struct {
	fn      func()
	session string
	msg     gateway.Message
}

// run runs the callback.
func (h *hook) run(s *SQLite) {
	if h.fn != nil {
		h.fn()
		return
	}
	s.recent.appendMessage(h.session, &h.msg)
}

// A statement in a shared transaction must not be interrupted by its
// caller's context: an interrupted statement rolls back the whole
// transaction, the other writes of the batch with it. So statements run
// without the caller's context; the committer checks each caller's
// context before running its write. The ctx parameters are kept for the
// shape of database/sql's methods.

// ExecContext runs a statement in the transaction.
func (t *txn) ExecContext(_ context.Context, q string, args ...any) (sql.Result, error) {
	return t.c.exec(q, args...)
}

// QueryRowContext runs a one-row query in the transaction.
func (t *txn) QueryRowContext(_ context.Context, q string, args ...any) scanner {
	return t.c.queryRow(q, args...)
}

// QueryContext runs a query in the transaction.
func (t *txn) QueryContext(_ context.Context, q string, args ...any) (*rows, error) {
	return t.c.query(q, args...)
}
