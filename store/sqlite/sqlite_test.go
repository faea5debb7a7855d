package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/switchboard-chat/switchboard/store/sqlite"
	"github.com/switchboard-chat/switchboard/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Factory{
		New: func(t *testing.T) storetest.Store {
			return open(t, filepath.Join(t.TempDir(), "sb.db"))
		},
		Reopen: func(t *testing.T, s storetest.Store) storetest.Store {
			path := s.(*store).path
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, path)
		},
		Check: func(t *testing.T, s storetest.Store) { sqlite.Check(t, s.(*store).Store) },
	})
}

// store is a SQLite store with its path, for Reopen.
type store struct {
	*sqlite.Store
	path string
}

func open(t *testing.T, path string) *store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &store{s, path}
}
