package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBatchFailsWhole: a write that makes SQLite roll back the whole
// transaction (here the database is full) fails its batch: no write of
// the batch is stored, every one of them says so, a view in the batch
// saw none of them, and the next batch writes as usual.
func TestBatchFailsWhole(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var pages int
	if err := s.view(ctx, func(tx *txn) error { return tx.scanOne("PRAGMA page_count", nil, &pages) }); err != nil {
		t.Fatal(err)
	}
	if err := s.write(ctx, func(tx *txn) error {
		_, err := tx.exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages+3))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The three writes queue behind a held one, so they share a batch.
	hold := make(chan struct{})
	held := make(chan error, 1)
	go func() { held <- s.write(ctx, func(*txn) error { <-hold; return nil }) }()
	time.Sleep(50 * time.Millisecond)
	values := []string{"a", strings.Repeat("x", 1<<20), "c"}
	results := make([]chan error, len(values))
	for i, v := range values {
		results[i] = make(chan error, 1)
		go func() {
			results[i] <- s.write(ctx, func(tx *txn) error {
				_, err := tx.exec(`INSERT INTO meta (key, value) VALUES (?, ?)`, fmt.Sprint("k", i), v)
				return err
			})
		}()
		time.Sleep(20 * time.Millisecond)
	}
	// A view in the same batch sees none of its writes.
	seen := make(chan int, 1)
	go func() {
		var n int
		if err := s.view(ctx, func(tx *txn) error {
			return tx.scanOne(`SELECT COUNT(*) FROM meta WHERE key LIKE 'k%'`, nil, &n)
		}); err != nil {
			t.Error(err)
		}
		seen <- n
	}()
	time.Sleep(20 * time.Millisecond)
	close(hold)
	<-held
	if n := <-seen; n != 0 {
		t.Errorf("a view in the batch saw %d of its writes, want none", n)
	}
	for i := range values {
		err := <-results[i]
		var n int
		if serr := s.scanOne(ctx, `SELECT COUNT(*) FROM meta WHERE key = ?`, []any{fmt.Sprint("k", i)}, &n); serr != nil {
			t.Fatal(serr)
		}
		if err == nil || n != 0 {
			t.Errorf("write %d: error %v, stored %v; want an error and nothing stored", i, err, n == 1)
		}
	}
	if err := s.write(ctx, func(tx *txn) error {
		_, err := tx.exec(`INSERT INTO meta (key, value) VALUES ('after', 'ok')`)
		return err
	}); err != nil {
		t.Errorf("a write after the failed batch: %v", err)
	}
}

// TestIDsForgetPastBound: the writer's ids start afresh once they hold
// more than maxIDs entries, keeping what the latest write learned.
func TestIDsForgetPastBound(t *testing.T) {
	c := newIDs()
	for i := range maxIDs + 1 {
		l := newIDs()
		l.members[memberKey{conv: int64(i), kind: "user", id: "ann"}] = true
		c.merge(l)
	}
	if n := len(c.members); n != maxIDs+1 {
		t.Fatalf("%d members remembered, want %d", n, maxIDs+1)
	}
	l := newIDs()
	l.convs[convKey{"web", "lobby", ""}] = 7
	c.merge(l)
	if len(c.members) != 0 || c.convs[convKey{"web", "lobby", ""}] != 7 {
		t.Errorf("after the bound: %d members, lobby = %d; want none and 7", len(c.members), c.convs[convKey{"web", "lobby", ""}])
	}
}
