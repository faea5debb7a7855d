package store

import (
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
