package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/switchboard-chat/switchboard/world/shared"
)

// The shared context of a space (migration 0020): events, entities and
// facts in tables of their own; the artifact chain read from the
// space's finished hand-offs.

var _ shared.Store = (*Store)(nil)

// storedTime is the time a row is stored with: t, or the store's clock
// when t is zero, at whole microseconds.
func storedTime(t time.Time) time.Time {
	if t.IsZero() {
		t = timeNow()
	}
	return fromMicros(micros(t))
}

// AddEvent implements shared.Store.
func (s *Store) AddEvent(ctx context.Context, e shared.Event) (shared.Event, error) {
	e.Time = storedTime(e.Time)
	err := s.write(ctx, func(tx *txn) (err error) {
		e.ID, err = tx.insert(`INSERT INTO context_events (space, bot, text, created_at) VALUES (?, ?, ?, ?)`,
			e.Space, e.Bot, e.Text, micros(e.Time))
		return err
	})
	if err != nil {
		return shared.Event{}, fmt.Errorf("store: add event: %w", err)
	}
	return e, nil
}

// MergeEntity implements shared.Store: the attributes stored are read
// and merged in the write's own transaction, so two merges into one
// entity keep the keys of both.
func (s *Store) MergeEntity(ctx context.Context, e shared.Entity) (shared.Entity, error) {
	add, err := shared.CanonicalAttributes(e.Attributes)
	if err != nil {
		return shared.Entity{}, fmt.Errorf("store: merge entity: %w", err)
	}
	e.UpdatedAt = storedTime(e.UpdatedAt)
	err = s.write(ctx, func(tx *txn) error {
		var old string
		err := tx.scanOne(`SELECT attributes FROM context_entities WHERE space = ? AND name = ?`, []any{e.Space, e.Name}, &old)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		merged, err := shared.MergeAttributes(json.RawMessage(old), add)
		if err != nil {
			return fmt.Errorf("entity %q's stored attributes: %w", e.Name, err)
		}
		e.Attributes = merged
		if err := shared.CheckMerged(merged); err != nil {
			return err
		}
		_, err = tx.exec(`INSERT INTO context_entities (space, name, attributes, updated_by, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (space, name) DO UPDATE SET attributes = excluded.attributes, updated_by = excluded.updated_by,
			updated_at = excluded.updated_at`, e.Space, e.Name, string(merged), e.UpdatedBy, micros(e.UpdatedAt))
		return err
	})
	if err != nil {
		return shared.Entity{}, fmt.Errorf("store: merge entity: %w", err)
	}
	return e, nil
}

// PutFact implements shared.Store.
func (s *Store) PutFact(ctx context.Context, f shared.Fact) (shared.Fact, error) {
	f.Time = storedTime(f.Time)
	err := s.write(ctx, func(tx *txn) error {
		_, err := tx.exec(`INSERT INTO context_facts (space, subject, predicate, object, confidence, bot, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (space, subject, predicate) DO UPDATE SET object = excluded.object, confidence = excluded.confidence,
			bot = excluded.bot, created_at = excluded.created_at`,
			f.Space, f.Subject, f.Predicate, f.Object, f.Confidence, f.Bot, micros(f.Time))
		return err
	})
	if err != nil {
		return shared.Fact{}, fmt.Errorf("store: put fact: %w", err)
	}
	return f, nil
}

// SharedContext implements shared.Store, reading one snapshot.
func (s *Store) SharedContext(ctx context.Context, space string, l shared.Limits) (shared.Context, error) {
	var c shared.Context
	err := s.read(ctx, func(tx *txn) error {
		c = shared.Context{}
		var err error
		if c.Events, err = tx.events(space, l.Events); err != nil {
			return fmt.Errorf("events: %w", err)
		}
		if c.Entities, err = tx.entities(space, l.Entities); err != nil {
			return fmt.Errorf("entities: %w", err)
		}
		if c.Facts, err = tx.facts(space, l.Facts, l.MinConfidence); err != nil {
			return fmt.Errorf("facts: %w", err)
		}
		if c.Chain, err = tx.chain(space, l.Chain); err != nil {
			return fmt.Errorf("chain: %w", err)
		}
		return nil
	})
	if err != nil {
		return shared.Context{}, fmt.Errorf("store: shared context of %q: %w", space, err)
	}
	return c, nil
}

// rowsOf reads the rows of query, newest first, with scan, and returns
// them oldest first; a limit below 1 reads none.
func rowsOf[T any](t *txn, limit int, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	out := []T{}
	if limit < 1 {
		return out, nil
	}
	rows, err := t.query(query, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

func (t *txn) events(space string, limit int) ([]shared.Event, error) {
	return rowsOf(t, limit, func(row scanner) (shared.Event, error) {
		var e shared.Event
		var created int64
		err := row.Scan(&e.ID, &e.Space, &e.Bot, &e.Text, &created)
		e.Time = fromMicros(created)
		return e, err
	}, `SELECT id, space, bot, text, created_at FROM context_events WHERE space = ? ORDER BY id DESC LIMIT ?`, space)
}

func (t *txn) entities(space string, limit int) ([]shared.Entity, error) {
	return rowsOf(t, limit, func(row scanner) (shared.Entity, error) {
		var e shared.Entity
		var attrs string
		var updated int64
		if err := row.Scan(&e.Space, &e.Name, &attrs, &e.UpdatedBy, &updated); err != nil {
			return e, err
		}
		e.UpdatedAt = fromMicros(updated)
		// Stored in the written form already; read into it all the
		// same, so that a row written otherwise (by hand) reads alike.
		var err error
		if e.Attributes, err = shared.CanonicalAttributes(json.RawMessage(attrs)); err != nil {
			return e, fmt.Errorf("entity %q: %w", e.Name, err)
		}
		return e, nil
	}, `SELECT space, name, attributes, updated_by, updated_at FROM context_entities WHERE space = ?
		ORDER BY updated_at DESC, name DESC LIMIT ?`, space)
}

func (t *txn) facts(space string, limit int, minConfidence float64) ([]shared.Fact, error) {
	return rowsOf(t, limit, func(row scanner) (shared.Fact, error) {
		var f shared.Fact
		var created int64
		err := row.Scan(&f.Space, &f.Subject, &f.Predicate, &f.Object, &f.Confidence, &f.Bot, &created)
		f.Time = fromMicros(created)
		return f, err
	}, `SELECT space, subject, predicate, object, confidence, bot, created_at FROM context_facts
		WHERE space = ? AND confidence >= ? ORDER BY created_at DESC, subject DESC, predicate DESC LIMIT ?`, space, minConfidence)
}

// chain reads the newest limit steps of space's artifact chain: its
// hand-offs that ended done or failed, numbered over all of them in the
// order they ended, with their inputs and outputs. The conditions on
// kind and status are written as the index delegations_chain's, which
// SQLite then uses.
func (t *txn) chain(space string, limit int) ([]shared.Step, error) {
	if limit < 1 {
		return []shared.Step{}, nil
	}
	var total int
	if err := t.scanOne(`SELECT COUNT(*) FROM delegations
		WHERE space = ? AND kind = 'handoff' AND (status = 'done' OR status = 'failed')`, []any{space}, &total); err != nil {
		return nil, err
	}
	steps, err := rowsOf(t, limit, func(row scanner) (shared.Step, error) {
		var st shared.Step
		var ended int64
		err := row.Scan(&st.DelegationID, &st.Producer, &st.Task, &st.Status, &ended)
		st.Time = fromMicros(ended)
		return st, err
	}, `SELECT id, to_bot, task, status, COALESCE(ended_at, updated_at) FROM delegations
		WHERE space = ? AND kind = 'handoff' AND (status = 'done' OR status = 'failed')
		ORDER BY ended_at DESC, id DESC LIMIT ?`, space)
	if err != nil || len(steps) == 0 {
		return steps, err
	}
	// Numbered from the oldest of all: the newest is the last.
	ids := make([]string, len(steps))
	index := make(map[string]int, len(steps))
	for i := range steps {
		steps[i].Step = total - len(steps) + 1 + i
		steps[i].Inputs, steps[i].Outputs = []shared.File{}, []shared.File{}
		ids[i], index[steps[i].DelegationID] = steps[i].DelegationID, i
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	files := func(query string, add func(st *shared.Step, f shared.File)) error {
		rows, err := t.query(query, string(list))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d string
			var f shared.File
			if err := rows.Scan(&d, &f.ID, &f.Name, &f.MediaType, &f.Size, &f.SHA256); err != nil {
				return err
			}
			add(&steps[index[d]], f)
		}
		return rows.Err()
	}
	// Inputs in the order the hand-off named them; outputs in the order
	// they were stored (as a record reads them).
	if err := files(`SELECT i.delegation_id, a.id, a.name, a.media_type, a.size, a.sha256 FROM delegation_inputs i JOIN artifacts a ON a.id = i.artifact_id
		WHERE i.delegation_id IN (SELECT value FROM json_each(?)) ORDER BY i.delegation_id, i.position`,
		func(st *shared.Step, f shared.File) { st.Inputs = append(st.Inputs, f) }); err != nil {
		return nil, fmt.Errorf("inputs: %w", err)
	}
	if err := files(`SELECT delegation_id, id, name, media_type, size, sha256 FROM artifacts
		WHERE delegation_id IN (SELECT value FROM json_each(?)) ORDER BY delegation_id, created_at, id`,
		func(st *shared.Step, f shared.File) { st.Outputs = append(st.Outputs, f) }); err != nil {
		return nil, fmt.Errorf("outputs: %w", err)
	}
	return steps, nil
}
