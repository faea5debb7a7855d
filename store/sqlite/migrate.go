package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrate applies the embedded migrations newer than the database's
// user_version, each in its own transaction. Foreign keys are off while a
// migration runs, so it can rebuild a table others refer to (SQLite's
// procedure for the changes ALTER TABLE cannot make), and are checked
// before it commits: a migration that breaks a reference is rolled back.
func (s *Store) migrate(ctx context.Context) error {
	conn := s.wc
	var version int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	if version > len(names) {
		return fmt.Errorf("database schema %d is newer than this binary's %d", version, len(names))
	}
	for i := version; i < len(names); i++ {
		body, err := migrations.ReadFile(names[i])
		if err != nil {
			return err
		}
		if err := migration(ctx, conn, string(body), i+1); err != nil {
			return fmt.Errorf("migration %s: %w", names[i], err)
		}
	}
	return nil
}

// migration runs one migration's statements and sets user_version to
// version, in one transaction, with foreign keys off until it ends.
func migration(ctx context.Context, conn *sql.Conn, body string, version int) (err error) {
	// Not in a transaction: SQLite ignores the pragma inside one.
	if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys = OFF"); err != nil {
		return err
	}
	defer func() {
		if _, kerr := conn.ExecContext(ctx, "PRAGMA foreign_keys = ON"); err == nil {
			err = kerr
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return err
	}
	var table, parent string
	var rowid, fk any
	err = tx.QueryRowContext(ctx, "PRAGMA foreign_key_check").Scan(&table, &rowid, &parent, &fk)
	switch {
	case err == nil && rowid == nil: // a WITHOUT ROWID table
		return fmt.Errorf("a row of %s refers to a missing row of %s", table, parent)
	case err == nil:
		return fmt.Errorf("a row of %s (rowid %v) refers to a missing row of %s", table, rowid, parent)
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", version)); err != nil {
		return err
	}
	return tx.Commit()
}
