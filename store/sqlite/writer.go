package sqlite

import (
	"context"
	"errors"
)

// SQLite has one writer at a time, and each commit writes every page the
// transaction changed. So writes go to one goroutine that owns the
// writer connection and commits the writes that wait for it together,
// one transaction for all of them (group commit): writes of different
// sessions then share the pages they change, and a busy store commits
// less often, not more. Each write runs in a savepoint of its own, so a
// write that fails is rolled back alone, and every caller returns only
// once its write has committed (or failed).

// maxBatch bounds how many writes share one transaction.
const maxBatch = 256

// writeReq is one write waiting for the writer.
type writeReq struct {
	ctx  context.Context
	fn   func(*txn) error
	done chan error
}

// write runs fn in a write transaction: when write returns nil, all of fn
// is stored; otherwise none of it. fn may share its transaction with
// other writes; it must not keep the txn.
func (s *Store) write(ctx context.Context, fn func(*txn) error) error {
	req := writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
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

// commit runs a batch in one transaction and answers each write.
func (s *Store) commit(batch []writeReq) {
	errs := make([]error, len(batch))
	var learnt []*ids
	err := s.exec("BEGIN IMMEDIATE")
	if err == nil {
		for i, r := range batch {
			if errs[i] = r.ctx.Err(); errs[i] == nil {
				t := &txn{ctx: context.WithoutCancel(r.ctx), s: s}
				if errs[i] = s.inSavepoint(t, r.fn); errs[i] == nil && t.learnt != nil {
					learnt = append(learnt, t.learnt)
				}
			}
		}
		if err = s.exec("COMMIT"); err != nil {
			s.exec("ROLLBACK")
		}
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
