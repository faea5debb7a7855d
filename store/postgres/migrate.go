package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrateLock is the key of the transaction-scoped advisory lock under
// which migrations run: of several processes opening the database at
// once, one applies each migration and the others, waiting for the lock,
// find it applied.
const migrateLock = 0x5377_6264_6d69 // "Swbdmi"

// migrate applies the embedded migrations the database lacks, each in
// its own transaction with its row in schema_migrations.
func (s *Store) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for i, name := range names {
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		if err := s.migration(ctx, i+1, name, string(body), len(names)); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
	}
	return nil
}

// migration applies one migration, version, unless it is applied
// already. A database whose schema is newer than this binary's (known
// is how many migrations it has) is refused.
func (s *Store) migration(ctx context.Context, version int, name, body string, known int) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var newest int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&newest); err != nil {
			return err
		}
		if newest > known {
			return fmt.Errorf("the database's schema (version %d) is newer than this binary's (%d): run a newer switchboard", newest, known)
		}
		var applied bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, version).Scan(&applied); err != nil {
			return err
		}
		if applied {
			return nil
		}
		// The simple protocol runs a file of several statements.
		if _, err := tx.Exec(ctx, body, pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, version, name); err != nil {
			return err
		}
		s.log.Info("store: applied a migration", "database", s.where, "migration", name)
		return nil
	})
}
