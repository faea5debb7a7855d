package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/world/shared"
)

// The shared context of a space (migration 0008): events, entities and
// facts in tables of their own; the artifact chain read from the
// space's finished hand-offs. Text is stored as the store's other text
// (clean): what is returned is what was stored.

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
	err := s.write(ctx, func(tx *txn) error {
		return tx.scanOne(`INSERT INTO context_events (space, bot, text, created_at) VALUES ($1, $2, $3, $4)
			RETURNING id, space, bot, text`, []any{e.Space, e.Bot, e.Text, micros(e.Time)}, &e.ID, &e.Space, &e.Bot, &e.Text)
	})
	if err != nil {
		return shared.Event{}, fmt.Errorf("store: add event: %w", err)
	}
	return e, nil
}

// MergeEntity implements shared.Store: the upsert merges the new keys
// into the stored ones under the row's lock, so two merges into one
// entity, from two gateways too, keep the keys of both.
func (s *Store) MergeEntity(ctx context.Context, e shared.Entity) (shared.Entity, error) {
	add, err := StorableAttributes(e.Attributes)
	if err != nil {
		return shared.Entity{}, fmt.Errorf("store: merge entity: %w", err)
	}
	e.UpdatedAt = storedTime(e.UpdatedAt)
	err = s.write(ctx, func(tx *txn) error {
		var merged []byte
		err := tx.scanOne(`INSERT INTO context_entities (space, name, attributes, updated_by, updated_at)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (space, name) DO UPDATE SET attributes = context_entities.attributes || EXCLUDED.attributes,
			updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at
			RETURNING space, name, updated_by, attributes`, []any{e.Space, e.Name, add, e.UpdatedBy, micros(e.UpdatedAt)},
			&e.Space, &e.Name, &e.UpdatedBy, &merged)
		if err != nil {
			return err
		}
		if e.Attributes, err = shared.CanonicalAttributes(merged); err != nil {
			return err
		}
		// Too much together: the transaction is rolled back.
		return shared.CheckMerged(e.Attributes)
	})
	if err != nil {
		return shared.Entity{}, fmt.Errorf("store: merge entity: %w", err)
	}
	return e, nil
}

// StorableAttributes returns the JSON object attrs as the store writes
// it: in the written form of shared.CanonicalAttributes, with each NUL
// character of its strings and keys made U+FFFD, as the store does with
// text (jsonb holds no NUL either). Attributes that are not a JSON
// object are an error wrapping world.ErrInvalid.
func StorableAttributes(attrs json.RawMessage) (json.RawMessage, error) {
	attrs, err := shared.CanonicalAttributes(attrs)
	if err != nil || !bytes.Contains(attrs, []byte(`\u0000`)) {
		return attrs, err
	}
	d := json.NewDecoder(bytes.NewReader(attrs))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(replaceNUL(v))
	if err != nil {
		return nil, err
	}
	return shared.CanonicalAttributes(b)
}

func replaceNUL(v any) any {
	fix := func(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }
	switch x := v.(type) {
	case string:
		return fix(x)
	case []any:
		for i := range x {
			x[i] = replaceNUL(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fix(k)] = replaceNUL(e)
		}
		return out
	}
	return v
}

// PutFact implements shared.Store.
func (s *Store) PutFact(ctx context.Context, f shared.Fact) (shared.Fact, error) {
	f.Time = storedTime(f.Time)
	err := s.write(ctx, func(tx *txn) error {
		return tx.scanOne(`INSERT INTO context_facts (space, subject, predicate, object, confidence, bot, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (space, subject, predicate) DO UPDATE SET object = EXCLUDED.object,
			confidence = EXCLUDED.confidence, bot = EXCLUDED.bot, created_at = EXCLUDED.created_at
			RETURNING space, subject, predicate, object, bot`,
			[]any{f.Space, f.Subject, f.Predicate, f.Object, f.Confidence, f.Bot, micros(f.Time)},
			&f.Space, &f.Subject, &f.Predicate, &f.Object, &f.Bot)
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
// them oldest first; a limit below 1 reads none. The limit is the
// query's last argument.
func rowsOf[T any](t *txn, limit int, scan func(pgx.Rows) (T, error), query string, args ...any) ([]T, error) {
	out := []T{}
	if limit < 1 {
		return out, nil
	}
	err := t.each(query, append(args, limit), func(rows pgx.Rows) error {
		v, err := scan(rows)
		out = append(out, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

func (t *txn) events(space string, limit int) ([]shared.Event, error) {
	return rowsOf(t, limit, func(row pgx.Rows) (shared.Event, error) {
		var e shared.Event
		var created int64
		err := row.Scan(&e.ID, &e.Space, &e.Bot, &e.Text, &created)
		e.Time = fromMicros(created)
		return e, err
	}, `SELECT id, space, bot, text, created_at FROM context_events WHERE space = $1 ORDER BY id DESC LIMIT $2`, space)
}

func (t *txn) entities(space string, limit int) ([]shared.Entity, error) {
	return rowsOf(t, limit, func(row pgx.Rows) (shared.Entity, error) {
		var e shared.Entity
		var attrs []byte
		var updated int64
		if err := row.Scan(&e.Space, &e.Name, &attrs, &e.UpdatedBy, &updated); err != nil {
			return e, err
		}
		e.UpdatedAt = fromMicros(updated)
		// jsonb has a written form of its own: read into the stores'.
		var err error
		if e.Attributes, err = shared.CanonicalAttributes(attrs); err != nil {
			return e, fmt.Errorf("entity %q: %w", e.Name, err)
		}
		return e, nil
	}, `SELECT space, name, attributes, updated_by, updated_at FROM context_entities WHERE space = $1
		ORDER BY updated_at DESC, name DESC LIMIT $2`, space)
}

func (t *txn) facts(space string, limit int, minConfidence float64) ([]shared.Fact, error) {
	return rowsOf(t, limit, func(row pgx.Rows) (shared.Fact, error) {
		var f shared.Fact
		var created int64
		err := row.Scan(&f.Space, &f.Subject, &f.Predicate, &f.Object, &f.Confidence, &f.Bot, &created)
		f.Time = fromMicros(created)
		return f, err
	}, `SELECT space, subject, predicate, object, confidence, bot, created_at FROM context_facts
		WHERE space = $1 AND confidence >= $2 ORDER BY created_at DESC, subject DESC, predicate DESC LIMIT $3`,
		space, minConfidence)
}

// chain reads the newest limit steps of space's artifact chain: its
// hand-offs that ended done or failed, numbered over all of them in the
// order they ended, with their inputs and outputs (the index
// delegations_chain holds them).
func (t *txn) chain(space string, limit int) ([]shared.Step, error) {
	if limit < 1 {
		return []shared.Step{}, nil
	}
	var total int
	if err := t.scanOne(`SELECT COUNT(*) FROM delegations
		WHERE space = $1 AND kind = 'handoff' AND status IN ('done', 'failed')`, []any{space}, &total); err != nil {
		return nil, err
	}
	steps, err := rowsOf(t, limit, func(row pgx.Rows) (shared.Step, error) {
		var st shared.Step
		var ended int64
		err := row.Scan(&st.DelegationID, &st.Producer, &st.Task, &st.Status, &ended)
		st.Time = fromMicros(ended)
		return st, err
	}, `SELECT id, to_bot, task, status, COALESCE(ended_at, updated_at) FROM delegations
		WHERE space = $1 AND kind = 'handoff' AND status IN ('done', 'failed')
		ORDER BY ended_at DESC, id DESC LIMIT $2`, space)
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
	files := func(query string, add func(st *shared.Step, f shared.File)) error {
		return t.each(query, []any{ids}, func(rows pgx.Rows) error {
			var d string
			var f shared.File
			if err := rows.Scan(&d, &f.ID, &f.Name, &f.MediaType, &f.Size, &f.SHA256); err != nil {
				return err
			}
			add(&steps[index[d]], f)
			return nil
		})
	}
	// Inputs in the order the hand-off named them; outputs in the order
	// they were stored (as a record reads them).
	if err := files(`SELECT i.delegation_id, a.id, a.name, a.media_type, a.size, a.sha256 FROM delegation_inputs i JOIN artifacts a ON a.id = i.artifact_id
		WHERE i.delegation_id = ANY($1) ORDER BY i.delegation_id, i.position`,
		func(st *shared.Step, f shared.File) { st.Inputs = append(st.Inputs, f) }); err != nil {
		return nil, fmt.Errorf("inputs: %w", err)
	}
	if err := files(`SELECT delegation_id, id, name, media_type, size, sha256 FROM artifacts
		WHERE delegation_id = ANY($1) ORDER BY delegation_id, created_at, id`,
		func(st *shared.Step, f shared.File) { st.Outputs = append(st.Outputs, f) }); err != nil {
		return nil, fmt.Errorf("outputs: %w", err)
	}
	return steps, nil
}
