package sqlite

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFreshDatabase: a new database gets every migration, its references
// check, and only its owner may read the file.
func TestFreshDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	names, _ := fs.Glob(migrations, "migrations/*.sql")
	var version int
	if err := s.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil || version != len(names) {
		t.Errorf("user_version = %d, %v; want %d", version, err, len(names))
	}
	rows, err := s.r.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		t.Fatal(err)
	}
	if rows.Next() {
		t.Error("a fresh database has a broken reference")
	}
	rows.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("database file mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

// TestMigrationWithABrokenReferenceIsRolledBack: a migration runs with
// foreign keys off, and one that leaves a reference to a missing row is
// rolled back whole, leaving the schema version as it was.
func TestMigrationWithABrokenReferenceIsRolledBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	conn := rawConn(t, path)
	bad := `CREATE TABLE extra (id INTEGER PRIMARY KEY);
		INSERT INTO turns (session_id, message_id, text, created_at) VALUES ('no-such-session', 12345, 'x', 0);`
	err = migration(ctx, conn, bad, 99)
	if err == nil || !strings.Contains(err.Error(), "refers to a missing row") {
		t.Fatalf("migration = %v, want a broken reference", err)
	}
	var version, extra int
	conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version)
	conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'extra'").Scan(&extra)
	if version == 99 || extra != 0 {
		t.Errorf("after the failed migration: version %d, table extra present %v", version, extra != 0)
	}
}

// TestNewerSchemaRefused: a database written by a newer binary is not
// opened.
func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := rawConn(t, path).ExecContext(ctx, "PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "newer") {
		if s != nil {
			s.Close()
		}
		t.Errorf("open a newer schema: %v", err)
	}
}

// rawConn is a connection of its own to the database at path.
func rawConn(t *testing.T, path string) *sql.Conn {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
