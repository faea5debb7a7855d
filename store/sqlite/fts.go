package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// BuildTags are the build tags every build of Switchboard uses (the
// Makefile's TAGS): sqlite_fts5 compiles go-sqlite3's SQLite with its
// full-text search, FTS5, which the insights of SPEC §10.4 are searched
// with. Tests and tools that run `go build` themselves pass it with
// -tags.
const BuildTags = "sqlite_fts5"

// ErrNoFTS5 is wrapped by Open's error when this binary's SQLite has no
// FTS5: it was built without the sqlite_fts5 tag.
var ErrNoFTS5 = errors.New("this binary's SQLite has no full-text search (FTS5): build it with -tags " + BuildTags +
	" (make build, make test and every make target do)")

// checkFTS5 refuses a SQLite built without FTS5, before any migration
// runs, with the reason, rather than with the "no such module: fts5" of
// the migration that needs it.
func checkFTS5(ctx context.Context, conn *sql.Conn) error {
	var on bool
	if err := conn.QueryRowContext(ctx, `SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&on); err != nil {
		return fmt.Errorf("read SQLite's compile options: %w", err)
	}
	if !on {
		return ErrNoFTS5
	}
	return nil
}
