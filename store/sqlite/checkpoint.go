package sqlite

import (
	"database/sql"
	"time"
)

// Checkpoints copy the WAL back into the database file and sync it. Left
// to SQLite, the writer runs one inside a commit whenever the WAL passes
// a thousand pages, copy and sync included, while every write waits. So
// a connection of its own copies the WAL back beside the writer every
// checkpointEvery: a passive checkpoint never holds the writer up. The
// writer's own automatic checkpoint stays as a backstop, for a WAL of
// backstopPages.
const (
	checkpointEvery = 250 * time.Millisecond
	backstopPages   = 16384 // 64 MiB of 4 KiB pages
)

// checkpointLoop runs passive checkpoints on db until the store closes.
func (s *Store) checkpointLoop(db *sql.DB) {
	defer close(s.checkpointed)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		// A failed checkpoint is left to the next one, and to the
		// backstop.
		db.Exec("PRAGMA wal_checkpoint(PASSIVE)")
	}
}
