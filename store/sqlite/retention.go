package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-chat/switchboard/retention"
)

var _ retention.Store = (*Store)(nil)

// Deleting by retention (SPEC §12) goes in two steps. A plan is read on
// a reader, from one snapshot: what to delete, and every row that
// refers to it, found by scanning the tables whose references have no
// index (retention_plan.go). Then the plan is carried out on the writer
// in small transactions of their own, with foreign key checks off (see
// writeAlone), each deleting rows by their keys (retention_delete.go):
// the writer is never held for long, and no deletion costs a scan.
//
// Rows written after the snapshot are looked for in each transaction,
// by what can be found cheaply: rows with IDs above the snapshot's
// newest (a new turn or outbox entry of a message being deleted), a
// pending turn or an open delegation of a visitor (then left for
// later), a visitor's new message (then they are back, and kept).

// Sizes of the work (variables for the tests that take small steps).
var (
	// deleteBatch bounds the messages one transaction deletes, with
	// what hangs on them: a few milliseconds of the writer's time.
	deleteBatch = 256
	// visitorsPerWrite bounds the visitors one transaction finishes.
	visitorsPerWrite = 32
	// planMessages bounds the messages one plan holds; more are left to
	// the next plan.
	planMessages = 100_000
)

// DeleteIdleVisitors implements retention.Store.
func (s *Store) DeleteIdleVisitors(ctx context.Context, idleSince time.Time, listed func(string) bool) (retention.Counts, error) {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	var total retention.Counts
	skipped := map[string]bool{} // visitors left for a later call
	for {
		var p *plan
		err := s.read(ctx, func(t *txn) (err error) {
			p, err = t.planVisitors(micros(idleSince), listed, skipped)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("store: delete idle visitors: plan: %w", err)
		}
		c, err := s.carryOut(ctx, p, skipped)
		total = total.Add(c)
		if err != nil {
			return total, fmt.Errorf("store: delete idle visitors: %w", err)
		}
		if !p.truncated {
			return total, nil
		}
	}
}

// DeleteMessagesBefore implements retention.Store.
func (s *Store) DeleteMessagesBefore(ctx context.Context, before time.Time) (retention.Counts, error) {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	var total retention.Counts
	after := int64(0) // plans go up the message IDs
	for {
		var p *plan
		err := s.read(ctx, func(t *txn) (err error) {
			p, err = t.planMessages(micros(before), after)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("store: delete messages: plan: %w", err)
		}
		c, err := s.carryOut(ctx, p, nil)
		total = total.Add(c)
		if err != nil {
			return total, fmt.Errorf("store: delete messages: %w", err)
		}
		if !p.truncated {
			return total, nil
		}
		after = p.msgs[len(p.msgs)-1].id
	}
}

// carryOut deletes what p plans, a transaction at a time, and adds the
// visitors it had to leave to skipped (nil for old messages).
func (s *Store) carryOut(ctx context.Context, p *plan, skipped map[string]bool) (retention.Counts, error) {
	var total retention.Counts
	newest := p.maxMsg
	for _, w := range p.writes() {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var c retention.Counts
		var left []string
		err := s.writeAlone(ctx, func(t *txn) error {
			c, left = retention.Counts{}, nil
			d := &deleter{t: t, p: p, c: &c, newest: newest}
			if err := d.run(w); err != nil {
				return err
			}
			left = d.left
			return t.scanOne(`SELECT COALESCE(MAX(id), 0) FROM messages`, nil, &newest)
		})
		if err != nil {
			return total, err
		}
		total = total.Add(c)
		for _, v := range left {
			skipped[v] = true
		}
	}
	return total, nil
}
