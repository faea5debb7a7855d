package store

import (
	"context"
	"database/sql"
	"sync"
)

// Statements are prepared once per pool and reused: preparing a statement
// costs SQLite more than running most of ours.

// stmtKey names a statement of one pool.
type stmtKey struct {
	db    *sql.DB
	query string
}

// stmtCache holds the prepared statements of a store.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[stmtKey]*sql.Stmt
	// later are writer statements first met inside a transaction: they
	// cannot be prepared then (the transaction holds the only writer
	// connection), so they run unprepared once and are prepared after it.
	later map[string]bool
}

// cached returns the prepared statement for query on db, if any.
func (s *SQLite) cached(db *sql.DB, query string) (*sql.Stmt, bool) {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	st, ok := s.stmts.stmts[stmtKey{db, query}]
	return st, ok
}

// prep returns the prepared statement for query on db, preparing it on
// first use. It must not be called for the writer pool inside a
// transaction.
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

// prepLater notes a writer statement to prepare after the transaction.
func (s *SQLite) prepLater(query string) {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	if s.stmts.later == nil {
		s.stmts.later = make(map[string]bool)
	}
	s.stmts.later[query] = true
}

// prepPending prepares the writer statements noted by prepLater. It is
// called outside transactions.
func (s *SQLite) prepPending(ctx context.Context) {
	s.stmts.mu.Lock()
	var qs []string
	for q := range s.stmts.later {
		qs = append(qs, q)
	}
	s.stmts.later = nil
	s.stmts.mu.Unlock()
	for _, q := range qs {
		s.prep(ctx, s.w, q) // a failure here just leaves it unprepared
	}
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

// exec runs a single write outside a transaction.
func (s *SQLite) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, err := s.prep(ctx, s.w, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// errRow is a row whose query could not be prepared.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// txn is a write transaction whose statements come from the cache.
type txn struct {
	tx *sql.Tx
	s  *SQLite
	// stored are callbacks to run, in order, once the transaction commits.
	stored []func()
}

// onStored runs fn after the commit that makes this write durable.
func (t *txn) onStored(fn func()) { t.stored = append(t.stored, fn) }

// A statement in a shared transaction must not be interrupted by its
// caller's context: go-sqlite3 interrupts the connection, which rolls back
// the whole transaction — the other writes of the batch with it. The
// committer checks each caller's context before running its write.

// ExecContext runs a statement in the transaction.
func (t *txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	ctx = context.WithoutCancel(ctx)
	if st, ok := t.s.cached(t.s.w, q); ok {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	t.s.prepLater(q)
	return t.tx.ExecContext(ctx, q, args...)
}

// QueryRowContext runs a one-row query in the transaction.
func (t *txn) QueryRowContext(ctx context.Context, q string, args ...any) scanner {
	ctx = context.WithoutCancel(ctx)
	if st, ok := t.s.cached(t.s.w, q); ok {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	t.s.prepLater(q)
	return t.tx.QueryRowContext(ctx, q, args...)
}

// QueryContext runs a query in the transaction.
func (t *txn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	ctx = context.WithoutCancel(ctx)
	if st, ok := t.s.cached(t.s.w, q); ok {
		return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	t.s.prepLater(q)
	return t.tx.QueryContext(ctx, q, args...)
}
