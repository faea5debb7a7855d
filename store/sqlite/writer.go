package sqlite

import (
	"context"
	"errors"
	"fmt"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// SQLite has one writer at a time, and each commit writes every page the
// transaction changed. So writes go to one goroutine that owns the
// writer connection and commits the writes that wait for it together,
// one transaction for all of them (group commit): writes of different
// sessions then share the pages they change, and a busy store commits
// less often, not more. Each write runs in a savepoint of its own, so a
// write that fails is rolled back alone, and every caller returns only
// once its write has committed (or failed).
//
// The same goroutine runs the views (see Store.view), at the start of a
// batch's transaction, before its writes: a view sees only what is
// committed. That is all it may rely on: whoever waited for a write to
// be stored before asking for a view asked after that write's batch
// committed, and the writes of the view's own batch were not waited
// for.

// maxBatch bounds how many writes share one transaction.
const maxBatch = 256

// writeReq is one write (or view) waiting for the writer.
type writeReq struct {
	ctx  context.Context
	fn   func(*txn) error
	view bool
	// alone runs the write in a transaction of its own, with foreign
	// keys off (see writeAlone).
	alone bool
	done  chan error
}

// write runs fn in a write transaction: when write returns nil, all of fn
// is stored; otherwise none of it. fn may share its transaction with
// other writes; it must not keep the txn.
func (s *Store) write(ctx context.Context, fn func(*txn) error) error {
	return s.queue(writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)})
}

// writeAlone runs fn in a write transaction of its own, with SQLite's
// foreign key checks off, for deletions (retention.go): SQLite checks
// the deletion of a row by looking for the rows that refer to it, and
// most references (a message's session links, turns, outbox entries)
// have no index to look them up by, so every deleted message would cost
// a scan of each of those tables. fn must itself delete or update every
// row that refers to what it deletes. What fn forgets of the rows ids
// remembers (txn.forget) is forgotten once it has committed.
func (s *Store) writeAlone(ctx context.Context, fn func(*txn) error) error {
	return s.queue(writeReq{ctx: ctx, fn: fn, alone: true, done: make(chan error, 1)})
}

// commitAlone runs one writeAlone write.
func (s *Store) commitAlone(r writeReq) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	// Outside a transaction: SQLite ignores the pragma inside one.
	if err := s.exec("PRAGMA foreign_keys = OFF"); err != nil {
		return err
	}
	t := &txn{ctx: context.WithoutCancel(r.ctx), s: s}
	err := s.exec("BEGIN IMMEDIATE")
	if err == nil {
		if err = r.fn(t); err == nil {
			err = s.exec("COMMIT")
		}
		if err != nil && s.inTransaction() {
			s.exec("ROLLBACK")
		}
	}
	// The writer's other writes rely on the checks: if they cannot be
	// turned on again, no write may run until they are (see commit).
	if ferr := s.exec("PRAGMA foreign_keys = ON"); ferr != nil {
		s.checksOff = true
		err = errors.Join(err, ferr)
	}
	if t.forgot != nil {
		// Forgotten whether or not the write committed: a cache that
		// forgets too much only looks up again.
		s.ids.drop(t.forgot)
	}
	return err
}

// queue hands req to the writer and waits for its answer.
func (s *Store) queue(req writeReq) error {
	ctx := req.ctx
	select {
	case s.writes <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.quit:
		return errClosed
	}
	// Once taken, the write is waited for even if ctx ends, so the
	// caller never takes a stored write for a failed one.
	return <-req.done
}

// writeLoop commits the writes that wait, a batch at a time, until the
// store closes.
func (s *Store) writeLoop() {
	defer close(s.stopped)
	for {
		var batch []writeReq
		select {
		case r := <-s.writes:
			batch = append(batch, r)
		case <-s.quit:
			return
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case r := <-s.writes:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		s.commit(batch)
	}
}

// commit runs a batch: its views and writes in one transaction, views
// first, then each of its writes alone (see writeAlone).
func (s *Store) commit(batch []writeReq) {
	if s.checksOff {
		// A write alone could not turn the checks back on (see
		// commitAlone): no write runs without them.
		err := s.exec("PRAGMA foreign_keys = ON")
		if err != nil {
			for _, r := range batch {
				r.done <- fmt.Errorf("store: foreign key checks are off and cannot be turned on: %w", err)
			}
			return
		}
		s.checksOff = false
	}
	var writes, views, alone []writeReq
	for _, r := range batch {
		switch {
		case r.view:
			views = append(views, r)
		case r.alone:
			alone = append(alone, r)
		default:
			writes = append(writes, r)
		}
	}
	if len(views)+len(writes) > 0 {
		s.commitShared(views, writes)
	}
	for _, r := range alone {
		r.done <- s.commitAlone(r)
	}
}

// commitShared runs views and writes in one transaction.
func (s *Store) commitShared(views, writes []writeReq) {
	begin := "BEGIN"
	if len(writes) > 0 {
		begin = "BEGIN IMMEDIATE"
	}
	err := s.exec(begin)
	for _, r := range views {
		switch {
		case err != nil:
			r.done <- err
		case r.ctx.Err() != nil:
			r.done <- r.ctx.Err()
		default:
			r.done <- r.fn(&txn{ctx: context.WithoutCancel(r.ctx), s: s})
		}
	}
	if len(writes) == 0 {
		if err == nil {
			s.exec("ROLLBACK") // views write nothing
		}
		return
	}
	if err == nil && !s.inTransaction() {
		err = errViewRolledBack // a failed read can end the transaction
	}
	s.commitWrites(writes, err)
}

var errViewRolledBack = errors.New("store: the batch's transaction ended while reading")

// commitWrites runs writes in the transaction commit began (begun is
// the error of beginning it), commits them, and answers each.
func (s *Store) commitWrites(batch []writeReq, begun error) {
	errs := make([]error, len(batch))
	var learnt []*ids
	err := begun
	for i, r := range batch {
		if err != nil {
			break
		}
		if errs[i] = r.ctx.Err(); errs[i] != nil {
			continue
		}
		t := &txn{ctx: context.WithoutCancel(r.ctx), s: s}
		if errs[i] = s.inSavepoint(t, r.fn); errs[i] == nil {
			if t.learnt != nil {
				learnt = append(learnt, t.learnt)
			}
			continue
		}
		// Some failures (a full disk, an I/O error) make SQLite roll
		// back the whole transaction: the batch has failed, writes
		// before this one included.
		if !s.inTransaction() {
			err = errs[i]
		}
	}
	switch {
	case err == nil:
		if err = s.exec("COMMIT"); err != nil {
			s.exec("ROLLBACK")
		}
	case s.inTransaction():
		s.exec("ROLLBACK")
	}
	if err == nil {
		for _, l := range learnt {
			s.ids.merge(l)
		}
	}
	for i, r := range batch {
		if err != nil && errs[i] == nil {
			errs[i] = err
		}
		r.done <- errs[i]
	}
}

// inTransaction reports whether the writer connection is in a
// transaction.
func (s *Store) inTransaction() bool {
	in := true
	s.wc.Raw(func(dc any) error {
		if c, ok := dc.(*sqlite3.SQLiteConn); ok {
			in = !c.AutoCommit()
		}
		return nil
	})
	return in
}

// inSavepoint runs one write of a batch in a savepoint, rolled back if
// the write fails. Its statements run to the end whatever happens to its
// caller's context (t's has no end): an interrupted statement would roll
// back the whole batch.
func (s *Store) inSavepoint(t *txn, fn func(*txn) error) error {
	if err := s.exec("SAVEPOINT write"); err != nil {
		return err
	}
	err := fn(t)
	if err != nil {
		if rerr := s.exec("ROLLBACK TO write"); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if rerr := s.exec("RELEASE write"); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return err
}

// exec runs a statement of the writer's own (BEGIN, COMMIT, a savepoint)
// on the writer connection.
func (s *Store) exec(query string) error {
	st, err := (&txn{ctx: context.Background(), s: s}).stmt(query)
	if err != nil {
		return err
	}
	_, err = st.Exec()
	return err
}
