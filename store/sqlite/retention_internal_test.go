package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/switchboard-chat/switchboard/store/storetest"
)

// TestContractInSmallSteps runs the store contract with deletions split
// into the smallest plans and transactions: a plan of three messages, a
// transaction of two, one visitor finished per transaction.
func TestContractInSmallSteps(t *testing.T) {
	defer func(b, v, p int) { deleteBatch, visitorsPerWrite, planMessages = b, v, p }(deleteBatch, visitorsPerWrite, planMessages)
	deleteBatch, visitorsPerWrite, planMessages = 2, 1, 3
	paths := map[storetest.Store]string{}
	open := func(t *testing.T, path string) storetest.Store {
		s, err := Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		paths[s] = path
		return s
	}
	storetest.Run(t, storetest.Factory{
		New: func(t *testing.T) storetest.Store { return open(t, filepath.Join(t.TempDir(), "sb.db")) },
		Reopen: func(t *testing.T, s storetest.Store) storetest.Store {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, paths[s])
		},
		Check: func(t *testing.T, s storetest.Store) { CheckIntegrity(t, s.(*Store)) },
	})
}
