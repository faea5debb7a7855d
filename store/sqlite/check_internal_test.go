package sqlite

import (
	"context"
	"testing"
)

// CheckIntegrity fails t if a row of s refers to a missing row (SQLite's
// foreign key check, and the insights' full-text index), or if the writer remembers a conversation, session
// or participant that is gone: deletions run with the checks off, and a
// later write would trust what the writer remembers.
func CheckIntegrity(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	rows, err := s.r.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var table, parent string
		var rowid, fk any
		rows.Scan(&table, &rowid, &parent, &fk)
		t.Errorf("a row of %s (rowid %v) refers to a missing row of %s", table, rowid, parent)
	}
	rows.Close()
	// The insights' full-text index holds a row for each insight and no
	// other (a deleted insight leaves it with a trigger).
	var stray, missing int
	if err := s.r.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM insights_fts WHERE rowid NOT IN (SELECT id FROM insights)),
		(SELECT COUNT(*) FROM insights WHERE id NOT IN (SELECT rowid FROM insights_fts))`).Scan(&stray, &missing); err != nil {
		t.Fatal(err)
	}
	if stray+missing > 0 {
		t.Errorf("the insights' index holds %d rows of deleted insights and misses %d insights", stray, missing)
	}
	// ids belongs to the writer goroutine: read it there.
	err = s.view(ctx, func(tx *txn) error {
		for k, id := range s.ids.convs {
			var n int
			tx.scanOne(`SELECT COUNT(*) FROM conversations WHERE id = ? AND platform = ? AND chat_id = ? AND bot = ?`,
				[]any{id, k.platform, k.chat, k.bot}, &n)
			if n != 1 {
				t.Errorf("the writer remembers conversation %d %+v, which is gone", id, k)
			}
		}
		for k, id := range s.ids.sessions {
			var n int
			tx.scanOne(`SELECT COUNT(*) FROM sessions WHERE id = ? AND bot = ? AND scope = ? AND scope_id = ?`,
				[]any{id, k.Bot, k.Scope, k.ScopeID}, &n)
			if n != 1 {
				t.Errorf("the writer remembers session %s %+v, which is gone", id, k)
			}
		}
		for k := range s.ids.members {
			var n int
			tx.scanOne(`SELECT COUNT(*) FROM participants WHERE conversation_id = ? AND kind = ? AND participant_id = ?`,
				[]any{k.conv, k.kind, k.id}, &n)
			if n != 1 {
				t.Errorf("the writer remembers participant %+v, who is gone", k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
