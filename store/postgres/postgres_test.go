package postgres_test

import (
	"context"
	"testing"

	"github.com/switchboard-chat/switchboard/internal/pgtest"
	"github.com/switchboard-chat/switchboard/store/postgres"
	"github.com/switchboard-chat/switchboard/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Factory{
		New: func(t *testing.T) storetest.Store {
			return open(t, pgtest.NewDatabase(t))
		},
		Reopen: func(t *testing.T, s storetest.Store) storetest.Store {
			url := s.(*store).url
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, url)
		},
	})
}

// store is a PostgreSQL store with its URL, for Reopen.
type store struct {
	*postgres.Store
	url string
}

func open(t *testing.T, url string) *store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &store{s, url}
}
