// Package dbcopy copies everything a Switchboard store holds from one
// database to another, a SQLite file to a PostgreSQL database or back
// (SPEC §11: `switchboard db copy`), keeping every ID, secret and token,
// so that anonymous visitors keep their identities. It runs while every
// gateway on either database is stopped.
//
// The source is read from one snapshot; the target is written in one
// transaction, so a copy that fails leaves it empty. A target that holds
// data already is refused before anything in it changes.
package dbcopy

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"
	_ "github.com/mattn/go-sqlite3"    // the database/sql driver "sqlite3"

	"github.com/switchboard-chat/switchboard/store/postgres"
	"github.com/switchboard-chat/switchboard/store/sqlite"
	"github.com/switchboard-chat/switchboard/world/shared"
)

// Count is how many rows of a table a copy wrote.
type Count struct {
	Table string
	Rows  int
}

// ErrNotEmpty is wrapped by the error of a copy into a database that
// holds data already.
var ErrNotEmpty = errors.New("the target already holds data")

// db is one side of a copy: a SQLite file or a PostgreSQL database.
type db struct {
	// name is a SQLite path or a postgres:// URL.
	name     string
	postgres bool
}

// parse names one side: a postgres:// (or postgresql://) URL, else a
// SQLite path.
func parse(s string) db {
	l := strings.ToLower(s)
	return db{name: s, postgres: strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")}
}

// String names the database without a password.
func (d db) String() string {
	if !d.postgres {
		return d.name
	}
	u, err := url.Parse(d.name)
	if err != nil {
		return "(a PostgreSQL URL that cannot be read)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Copy copies every row from the store at from to the store at to, each
// a SQLite path or a postgres:// URL, and returns how many rows of each
// table it copied. Both databases are first brought to this binary's
// schema, as serve would; the target must hold no data (ErrNotEmpty).
func Copy(ctx context.Context, from, to string, log *slog.Logger) ([]Count, error) {
	if log == nil {
		log = slog.Default()
	}
	src, dst := parse(from), parse(to)
	if from == to {
		return nil, fmt.Errorf("--from and --to are the same database, %s", src)
	}
	if err := src.mustHold(ctx); err != nil {
		return nil, err
	}
	if err := dst.mustBeEmpty(ctx); err != nil {
		return nil, err
	}
	for _, d := range []db{src, dst} {
		if err := d.migrate(ctx, log); err != nil {
			return nil, err
		}
		if err := d.mustBeIdle(ctx); err != nil {
			return nil, err
		}
	}
	in, err := src.open()
	if err != nil {
		return nil, err
	}
	defer in.Close()
	out, err := dst.open()
	if err != nil {
		return nil, err
	}
	defer out.Close()

	rtx, err := in.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: src.snapshot()})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", src, err)
	}
	defer rtx.Rollback()
	wtx, err := out.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", dst, err)
	}
	defer wtx.Rollback()
	// The target must still be empty once its transaction holds it.
	if n, err := dst.rows(ctx, wtx); err != nil || n > 0 {
		return nil, cmp.Or(err, fmt.Errorf("%s: %w", dst, ErrNotEmpty))
	}
	var counts []Count
	for _, t := range tables {
		n, err := copyTable(ctx, t, src, rtx, dst, wtx)
		if err != nil {
			return nil, fmt.Errorf("copy %s: %w", t.name, err)
		}
		counts = append(counts, Count{Table: t.name, Rows: n})
	}
	if dst.postgres {
		if err := moveSequences(ctx, wtx); err != nil {
			return nil, err
		}
	} else if err := sqlite.RebuildInsightIndex(ctx, wtx); err != nil {
		// PostgreSQL's index is a column the database computes; SQLite's
		// is written by the store, which this copy bypassed.
		return nil, fmt.Errorf("write %s: %w", dst, err)
	}
	if err := wtx.Commit(); err != nil {
		return nil, fmt.Errorf("write %s: %w", dst, err)
	}
	if dst.postgres {
		// Statistics now, rather than at autovacuum's first visit: a
		// gateway started on the copy plans with them at once.
		if _, err := out.ExecContext(ctx, `ANALYZE`); err != nil {
			log.Warn("db copy: ANALYZE of the target failed; autovacuum runs it later", "err", err)
		}
	}
	return counts, nil
}

// mustBeIdle checks that no gateway runs on d, when d can tell: a
// PostgreSQL database lists its live instances.
func (d db) mustBeIdle(ctx context.Context) error {
	if !d.postgres {
		return nil
	}
	conn, err := pgx.Connect(ctx, d.name)
	if err != nil {
		return fmt.Errorf("%s: %w", d, err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM instances WHERE switchboard_alive(id)`).Scan(&n); err != nil {
		return fmt.Errorf("%s: %w", d, err)
	}
	if n > 0 {
		return fmt.Errorf("%s: %d gateway(s) are running on it (GET /api/v1/instances lists them); stop every gateway before copying", d, n)
	}
	return nil
}

// snapshot is the isolation level under which a transaction's reads see
// one snapshot (SQLite's transactions always do).
func (d db) snapshot() sql.IsolationLevel {
	if d.postgres {
		return sql.LevelRepeatableRead
	}
	return sql.LevelDefault
}

// open opens d through database/sql.
func (d db) open() (*sql.DB, error) {
	if d.postgres {
		return sql.Open("pgx", d.name)
	}
	q := url.Values{}
	q.Set("_busy_timeout", "5000")
	q.Set("_foreign_keys", "on")
	s, err := sql.Open("sqlite3", "file:"+d.name+"?"+q.Encode())
	if err == nil {
		s.SetMaxOpenConns(1)
	}
	return s, err
}

// migrate opens d's store, which brings its schema to this binary's,
// and closes it.
func (d db) migrate(ctx context.Context, log *slog.Logger) error {
	if d.postgres {
		s, err := postgres.Open(ctx, d.name, postgres.WithLogger(log))
		if err != nil {
			return err
		}
		return s.Close()
	}
	s, err := sqlite.Open(ctx, d.name, sqlite.WithLogger(log))
	if err != nil {
		return err
	}
	return s.Close()
}

// mustHold checks that d is a Switchboard store: a SQLite file that
// exists, a PostgreSQL database with the store's tables. Nothing is
// created in a database that is not one.
func (d db) mustHold(ctx context.Context) error {
	if !d.postgres {
		if _, err := os.Stat(d.name); err != nil {
			return fmt.Errorf("the source %s: %w", d, err)
		}
		return nil
	}
	conn, err := pgx.Connect(ctx, d.name)
	if err != nil {
		return fmt.Errorf("the source %s: %w", d, err)
	}
	defer conn.Close(ctx)
	var has bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('messages') IS NOT NULL`).Scan(&has); err != nil {
		return fmt.Errorf("the source %s: %w", d, err)
	}
	if !has {
		return fmt.Errorf("the source %s holds no Switchboard data (no table messages)", d)
	}
	return nil
}

// mustBeEmpty checks, without changing d, that d holds no rows of the
// store's tables (a database that does not exist yet, or has no tables,
// is empty).
func (d db) mustBeEmpty(ctx context.Context) error {
	var n int
	var err error
	if d.postgres {
		var conn *pgx.Conn
		if conn, err = pgx.Connect(ctx, d.name); err != nil {
			return fmt.Errorf("the target %s: %w", d, err)
		}
		defer conn.Close(ctx)
		n, err = d.rows(ctx, pgxQuerier{conn})
	} else {
		fi, serr := os.Stat(d.name)
		switch {
		case errors.Is(serr, os.ErrNotExist) || serr == nil && fi.Size() == 0:
			return nil
		case serr != nil:
			return fmt.Errorf("the target %s: %w", d, serr)
		}
		var s *sql.DB
		if s, err = sql.Open("sqlite3", "file:"+d.name+"?mode=ro&_busy_timeout=5000"); err != nil {
			return fmt.Errorf("the target %s: %w", d, err)
		}
		defer s.Close()
		n, err = d.rows(ctx, s)
	}
	if err != nil {
		return fmt.Errorf("the target %s: %w", d, err)
	}
	if n > 0 {
		return fmt.Errorf("%s: %w (%d rows); copy into a new, empty database", d, ErrNotEmpty, n)
	}
	return nil
}

// querier runs a query: a *sql.DB, a *sql.Tx or a pgx connection.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// pgxQuerier reads one value through a pgx connection, for rows.
type pgxQuerier struct{ conn *pgx.Conn }

func (q pgxQuerier) count(ctx context.Context, query string) (int, error) {
	var n int
	err := q.conn.QueryRow(ctx, query).Scan(&n)
	return n, err
}

// rows counts the rows of the store's tables in d that exist.
func (d db) rows(ctx context.Context, q any) (int, error) {
	total := 0
	for _, t := range tables {
		exists := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '` + t.name + `'`
		if d.postgres {
			exists = `SELECT COUNT(*) FROM (SELECT to_regclass('` + t.name + `') AS r) x WHERE r IS NOT NULL`
		}
		for i, query := range []string{exists, `SELECT COUNT(*) FROM ` + t.name} {
			var n int
			var err error
			switch q := q.(type) {
			case pgxQuerier:
				n, err = q.count(ctx, query)
			case querier:
				err = q.QueryRowContext(ctx, query).Scan(&n)
			}
			if err != nil {
				return 0, err
			}
			if i == 0 && n == 0 {
				break // no such table
			}
			if i == 1 {
				total += n
			}
		}
	}
	return total, nil
}

// copyTable copies t's rows from src (read in rtx) to dst (written in
// wtx) and returns how many it copied. A delegation's parent may come
// after it in the source's order: parents are set once every
// delegation is written.
func copyTable(ctx context.Context, t table, src db, rtx *sql.Tx, dst db, wtx *sql.Tx) (int, error) {
	order := t.order
	if !src.postgres && t.sqliteOrder != "" {
		order = t.sqliteOrder
	}
	rows, err := rtx.QueryContext(ctx, `SELECT `+strings.Join(t.cols, ", ")+` FROM `+t.name+` ORDER BY `+order)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	marks := make([]string, len(t.cols))
	for i := range marks {
		marks[i] = "?"
		if dst.postgres {
			marks[i] = "$" + strconv.Itoa(i+1)
		}
	}
	insert, err := wtx.PrepareContext(ctx, `INSERT INTO `+t.name+` (`+strings.Join(t.cols, ", ")+`) VALUES (`+strings.Join(marks, ", ")+`)`)
	if err != nil {
		return 0, err
	}
	defer insert.Close()
	parent := slices.Index(t.cols, "parent_id")
	var parents [][2]any // delegation ID, parent ID
	n := 0
	vals := make([]any, len(t.cols))
	ptrs := make([]any, len(t.cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		for i, c := range t.cols {
			if slices.Contains(t.objects, c) {
				if vals[i], err = object(vals[i], dst.postgres); err != nil {
					return n, fmt.Errorf("row %v: %s: %w", vals[0], c, err)
				}
				continue
			}
			vals[i] = convert(vals[i], slices.Contains(t.bools, c), t.name == "meta" && c == "value", dst.postgres)
		}
		if parent >= 0 && vals[parent] != nil {
			parents = append(parents, [2]any{vals[0], vals[parent]})
			vals[parent] = nil
		}
		if _, err := insert.ExecContext(ctx, vals...); err != nil {
			return n, fmt.Errorf("row %v: %w", vals[0], err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return n, err
	}
	set := `UPDATE delegations SET parent_id = ? WHERE id = ?`
	if dst.postgres {
		set = `UPDATE delegations SET parent_id = $1 WHERE id = $2`
	}
	for _, p := range parents {
		if _, err := wtx.ExecContext(ctx, set, p[1], p[0]); err != nil {
			return n, fmt.Errorf("parent of %v: %w", p[0], err)
		}
	}
	return n, nil
}

// convert makes a value read from one store what the other's column
// takes: a boolean from SQLite's 0 or 1 and back, bytes for meta's
// values, and, for PostgreSQL's text (which holds no NUL and only
// UTF-8), U+FFFD for each NUL or byte that is not UTF-8, as the
// PostgreSQL store writes them.
func convert(v any, boolean, bytes, toPostgres bool) any {
	switch x := v.(type) {
	case int64:
		if boolean && toPostgres {
			return x != 0
		}
		if bytes {
			return []byte(strconv.FormatInt(x, 10))
		}
	case bool:
		if !toPostgres {
			if x {
				return int64(1)
			}
			return int64(0)
		}
	case string:
		if bytes {
			return []byte(x)
		}
		if toPostgres && (strings.IndexByte(x, 0) >= 0 || !utf8.ValidString(x)) {
			return strings.ReplaceAll(strings.ToValidUTF8(x, "\uFFFD"), "\x00", "\uFFFD")
		}
	case []byte:
		if x == nil {
			return []byte{}
		}
	}
	return v
}

// object makes a JSON object read from either store (JSONB's bytes,
// SQLite's text) the text the target's column takes, as its store writes
// it: in the written form of shared.CanonicalAttributes, without NUL for
// PostgreSQL.
func object(v any, toPostgres bool) (any, error) {
	var raw []byte
	switch x := v.(type) {
	case string:
		raw = []byte(x)
	case []byte:
		raw = x
	default:
		return nil, fmt.Errorf("a JSON object read as %T", v)
	}
	write := shared.CanonicalAttributes
	if toPostgres {
		write = postgres.StorableAttributes
	}
	b, err := write(raw)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// moveSequences moves each identity column's sequence past the copied
// IDs, so the rows the store makes next get new ones.
func moveSequences(ctx context.Context, tx *sql.Tx) error {
	for _, t := range tables {
		if t.identity == "" {
			continue
		}
		q := fmt.Sprintf(`SELECT setval(pg_get_serial_sequence('%s', '%s'), COALESCE(MAX(%s), 0) + 1, false) FROM %s`,
			t.name, t.identity, t.identity, t.name)
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sequence of %s: %w", t.name, err)
		}
	}
	return nil
}
