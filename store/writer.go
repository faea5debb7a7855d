package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"reflect"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// The committer talks to its connection below database/sql. database/sql
// costs more per statement than SQLite does for ours: inside a
// transaction every query starts a goroutine to watch the transaction's
// context, and every statement is re-bound to the transaction. The
// committer is the connection's only user, so it needs none of that: it
// holds one connection for the store's lifetime and keeps that
// connection's prepared statements itself.

// conn is the writer connection as the committer uses it, valid only
// inside the function given to sql.Conn.Raw.
type conn struct {
	c     *sqlite3.SQLiteConn
	stmts map[string]*sqlite3.SQLiteStmt
	// args is reused for every statement's arguments: the driver copies
	// them into SQLite when it binds them.
	args []driver.NamedValue
}

// stmt returns the prepared statement for q, preparing it on first use.
func (c *conn) stmt(q string) (*sqlite3.SQLiteStmt, error) {
	if st, ok := c.stmts[q]; ok {
		return st, nil
	}
	st, err := c.c.Prepare(q)
	if err != nil {
		return nil, err
	}
	c.stmts[q] = st.(*sqlite3.SQLiteStmt)
	return c.stmts[q], nil
}

// bound returns the prepared statement for q and its arguments.
func (c *conn) bound(q string, args []any) (*sqlite3.SQLiteStmt, []driver.NamedValue, error) {
	st, err := c.stmt(q)
	if err != nil {
		return nil, nil, err
	}
	nv, err := c.namedValues(args)
	return st, nv, err
}

// exec runs a statement.
func (c *conn) exec(q string, args ...any) (sql.Result, error) {
	st, nv, err := c.bound(q, args)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(context.Background(), nv)
}

// run runs a statement whose result is not needed, in one crossing into
// C for its binding and execution: the driver's query path, which
// (go-sqlite3 1.14.53 and later) takes the statement's first step inside
// Query, so a write through it is done when Query returns
// (TestRunWrites checks it).
func (c *conn) run(q string, args ...any) error {
	st, nv, err := c.bound(q, args)
	if err != nil {
		return err
	}
	r, err := st.QueryContext(context.Background(), nv)
	if err != nil {
		return err
	}
	return r.Close()
}

// query runs a statement that returns rows.
func (c *conn) query(q string, args ...any) (*rows, error) {
	st, nv, err := c.bound(q, args)
	if err != nil {
		return nil, err
	}
	r, err := st.QueryContext(context.Background(), nv)
	if err != nil {
		return nil, err
	}
	return &rows{r: r, dest: make([]driver.Value, len(r.Columns()))}, nil
}

// queryRow runs a statement and returns its first row.
func (c *conn) queryRow(q string, args ...any) row {
	r, err := c.query(q, args...)
	return row{r: r, err: err}
}

// closeStmts finalizes the prepared statements.
func (c *conn) closeStmts() {
	for q, st := range c.stmts {
		st.Close()
		delete(c.stmts, q)
	}
}

// namedValues converts arguments as database/sql would, into c.args.
func (c *conn) namedValues(args []any) ([]driver.NamedValue, error) {
	nv := c.args[:0]
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, fmt.Errorf("store: argument %d: %w", i+1, err)
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	c.args = nv
	return nv, nil
}

// rows iterates a query's result like sql.Rows.
type rows struct {
	r    driver.Rows
	dest []driver.Value
	err  error
	done bool
}

// Next advances to the next row; it is false at the end or on an error
// (see Err). The rows are closed at the end.
func (r *rows) Next() bool {
	if r.done {
		return false
	}
	if err := r.r.Next(r.dest); err != nil {
		if !errors.Is(err, io.EOF) {
			r.err = err
		}
		r.Close()
		return false
	}
	return true
}

// Scan copies the current row into dest.
func (r *rows) Scan(dest ...any) error {
	if len(dest) != len(r.dest) {
		return fmt.Errorf("store: scan: %d destinations for %d columns", len(dest), len(r.dest))
	}
	for i, d := range dest {
		if err := assign(d, r.dest[i]); err != nil {
			return fmt.Errorf("store: scan column %d: %w", i, err)
		}
	}
	return nil
}

// Err is the error that ended the iteration, if any.
func (r *rows) Err() error { return r.err }

// Close releases the statement for its next use. It may be called more
// than once.
func (r *rows) Close() error {
	if r.done {
		return nil
	}
	r.done = true
	return r.r.Close()
}

// row is the first row of a query, like sql.Row.
type row struct {
	r   *rows
	err error
}

// Scan copies the row into dest, or returns sql.ErrNoRows.
func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.r.Close()
	if !r.r.Next() {
		if err := r.r.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	return r.r.Scan(dest...)
}

// assign stores a column's value in a Scan destination: the conversions
// database/sql makes for the types the store scans into.
func assign(dest any, v driver.Value) error {
	switch d := dest.(type) {
	case *any:
		if b, ok := v.([]byte); ok {
			v = append([]byte(nil), b...)
		}
		*d = v
		return nil
	case *string:
		switch v := v.(type) {
		case string:
			*d = v
			return nil
		case []byte:
			*d = string(v)
			return nil
		case int64:
			*d = fmt.Sprint(v)
			return nil
		}
	case *[]byte:
		switch v := v.(type) {
		case []byte:
			*d = append([]byte(nil), v...)
			return nil
		case string:
			*d = []byte(v)
			return nil
		case nil:
			*d = nil
			return nil
		}
	case *int64:
		if v, ok := v.(int64); ok {
			*d = v
			return nil
		}
	case *int:
		if v, ok := v.(int64); ok {
			*d = int(v)
			return nil
		}
	case *bool:
		switch v := v.(type) {
		case int64:
			*d = v != 0
			return nil
		case bool: // a column declared BOOLEAN
			*d = v
			return nil
		}
	case *time.Time: // a column declared DATE, DATETIME or TIMESTAMP
		if v, ok := v.(time.Time); ok {
			*d = v
			return nil
		}
	case *float64:
		switch v := v.(type) {
		case float64:
			*d = v
			return nil
		case int64:
			*d = float64(v)
			return nil
		}
	case sql.Scanner:
		return d.Scan(v)
	}
	return fmt.Errorf("cannot store %T in %s", v, reflect.TypeOf(dest))
}
