package store

import (
	"context"
	"path/filepath"
	"testing"
)

// TestSQLiteConfigured checks that SQLite took the process-wide settings
// of sqliteconfig.go: they must be made before its first connection, and
// a store that opens and writes must find its memory statistics off.
func TestSQLiteConfigured(t *testing.T) {
	if configErr != nil {
		t.Fatal(configErr)
	}
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AppendInbound(t.Context(), webRoomInbound("lobby", "m1", "ann", "matty")); err != nil {
		t.Fatal(err)
	}
	if n := memoryUsed(); n != 0 {
		t.Errorf("SQLite counted %d bytes allocated: its memory statistics are on", n)
	}
}

// TestRunWrites: a write through conn.run is done when run returns, and
// its failure is run's error.
func TestRunWrites(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.tx(ctx, func(tx *txn) error {
		if err := tx.c.run(`INSERT INTO meta (key, value) VALUES (?, ?)`, "run-test", "1"); err != nil {
			return err
		}
		var v string
		if err := tx.c.queryRow(`SELECT value FROM meta WHERE key = ?`, "run-test").Scan(&v); err != nil || v != "1" {
			t.Errorf("the row written through run reads %q, %v", v, err)
		}
		if err := tx.c.run(`INSERT INTO meta (key, value) VALUES (?, ?)`, "run-test", "2"); err == nil {
			t.Error("a duplicate key through run: no error")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
