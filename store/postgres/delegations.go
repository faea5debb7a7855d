package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/sessions"
)

// delegationColumns is the select list scanDelegation reads.
const delegationColumns = `id, kind, from_bot, to_bot, user_id, user_name, task, depth, COALESCE(parent_id, ''), status,
	result, error, progress, origin_platform, origin_chat, origin_chat_type, origin_sender, COALESCE(from_session, ''),
	expected_outputs, retries, created_at, updated_at, space, ended_at`

func scanDelegation(row pgx.Row) (delegation.Record, error) {
	var d delegation.Record
	var chatType, expected, progress string
	var created, updated int64
	var ended *int64
	err := row.Scan(&d.ID, &d.Kind, &d.From, &d.To, &d.UserID, &d.UserName, &d.Task, &d.Depth, &d.ParentID, &d.Status,
		&d.Result, &d.Error, &progress, &d.Origin.Platform, &d.Origin.ID, &chatType, &d.OriginSender, &d.FromSession,
		&expected, &d.Retries, &created, &updated, &d.Space, &ended)
	if err != nil {
		return d, err
	}
	d.Origin.Type = chat.Type(chatType)
	d.CreatedAt, d.UpdatedAt = fromMicros(created), fromMicros(updated)
	if ended != nil {
		d.EndedAt = fromMicros(*ended)
	}
	if expected != "" {
		if err := json.Unmarshal([]byte(expected), &d.Expected); err != nil {
			return d, fmt.Errorf("delegation %s expected outputs: %w", d.ID, err)
		}
	}
	if progress != "" {
		d.Progress = new(delegation.Progress)
		if err := json.Unmarshal([]byte(progress), d.Progress); err != nil {
			return d, fmt.Errorf("delegation %s progress: %w", d.ID, err)
		}
	}
	return d, nil
}

// insertDelegation stores a new record with its inputs. A record stored
// final (refused) ended now.
func (t *txn) insertDelegation(d delegation.Record, now int64) error {
	var expected string
	if len(d.Expected) > 0 {
		b, err := json.Marshal(d.Expected)
		if err != nil {
			return err
		}
		expected = string(b)
	}
	if d.Kind == "" {
		d.Kind = delegation.KindHandoff
	}
	var parent, fromSession any
	if d.ParentID != "" {
		parent = d.ParentID
	}
	if d.FromSession != "" {
		fromSession = d.FromSession
	}
	if _, err := t.exec(`INSERT INTO delegations (id, kind, from_bot, to_bot, user_id, user_name, task, depth,
		parent_id, status, error, origin_platform, origin_chat, origin_chat_type, origin_sender, from_session,
		expected_outputs, created_at, updated_at, space, ended_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $18, $19, $20)`,
		d.ID, d.Kind, d.From, d.To, d.UserID, d.UserName, d.Task, d.Depth, parent, d.Status, d.Error,
		d.Origin.Platform, d.Origin.ID, string(d.Origin.Type), d.OriginSender, fromSession, expected, now,
		d.Space, endedAt(d.Status, now)); err != nil {
		return err
	}
	for i, a := range d.Inputs {
		if _, err := t.exec(`INSERT INTO delegation_inputs (delegation_id, artifact_id, position) VALUES ($1, $2, $3)`, d.ID, a, i); err != nil {
			return fmt.Errorf("input %s: %w", a, err)
		}
	}
	return nil
}

// endedAt is the end time of a record given status at now: now for a
// final status, NULL otherwise.
func endedAt(status string, now int64) *int64 {
	if (delegation.Record{Status: status}).Finished() {
		return &now
	}
	return nil
}

// updateDelegation changes a record's status; the first final status
// sets its end.
func (t *txn) updateDelegation(u delegation.Update, now int64) error {
	retry := 0
	if u.Retry {
		retry = 1
	}
	n, err := t.exec(`UPDATE delegations SET status = $1, result = $2, error = $3, retries = retries + $4, updated_at = $5,
		ended_at = COALESCE(ended_at, $6) WHERE id = $7`, u.Status, u.Result, u.Error, retry, now, endedAt(u.Status, now), u.ID)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("delegation %s: %w", u.ID, delegation.ErrNotFound)
	}
	return nil
}

// delegationRecord reads a record without its inputs and artifacts.
func (t *txn) delegationRecord(id string) (delegation.Record, error) {
	return scanDelegation(t.q.QueryRow(t.ctx, `SELECT `+delegationColumns+` FROM delegations WHERE id = $1`, clean([]any{id})...))
}

// StartDelegations stores delegations made outside a turn (the API) and
// returns the turns it queued.
func (s *Store) StartDelegations(ctx context.Context, hs []sessions.Handoff) ([]sessions.TurnRef, error) {
	var refs []sessions.TurnRef
	err := s.write(ctx, func(tx *txn) error {
		refs = nil
		now := micros(timeNow())
		for _, h := range hs {
			ref, queued, err := tx.startDelegation(h, now)
			if err != nil {
				return err
			}
			if queued {
				refs = append(refs, ref)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: start delegations: %w", err)
	}
	return refs, nil
}

// UpdateDelegation implements delegation.Store.
func (s *Store) UpdateDelegation(ctx context.Context, u delegation.Update) error {
	err := s.write(ctx, func(tx *txn) error { return tx.updateDelegation(u, micros(timeNow())) })
	if err != nil {
		return fmt.Errorf("store: update delegation: %w", err)
	}
	return nil
}

// SetDelegationProgress implements gateway.Store. The update is
// announced to the other gateways like a change of status (the trigger
// delegations_notify), which push the new progress to their watchers.
func (s *Store) SetDelegationProgress(ctx context.Context, id string, p delegation.Progress) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("store: delegation progress: %w", err)
	}
	err = s.write(ctx, func(tx *txn) error {
		n, err := tx.exec(`UPDATE delegations SET progress = $1, updated_at = $2 WHERE id = $3 AND status = 'running'`,
			string(b), micros(timeNow()), id)
		if err != nil || n == 1 {
			return err
		}
		var status string
		err = tx.scanOne(`SELECT status FROM delegations WHERE id = $1`, []any{id}, &status)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("delegation %s: %w", id, delegation.ErrNotFound)
		case err != nil:
			return err
		}
		return fmt.Errorf("delegation %s is %s: %w", id, status, delegation.ErrNotRunning)
	})
	if err != nil {
		return fmt.Errorf("store: delegation progress: %w", err)
	}
	return nil
}

// Delegation implements delegation.Store.
func (s *Store) Delegation(ctx context.Context, id string) (delegation.Record, error) {
	var d delegation.Record
	err := s.read(ctx, func(t *txn) (err error) {
		d, err = t.delegation(id)
		return err
	})
	if err != nil {
		return d, fmt.Errorf("store: %w", err)
	}
	return d, nil
}

// delegation reads one record with its inputs and artifacts.
func (t *txn) delegation(id string) (delegation.Record, error) {
	d, err := t.delegationRecord(id)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, fmt.Errorf("delegation %s: %w", id, delegation.ErrNotFound)
	}
	if err == nil {
		err = t.fill(&d)
	}
	return d, err
}

// fill loads a record's inputs and artifacts.
func (t *txn) fill(d *delegation.Record) error {
	d.Inputs = []string{}
	err := t.each(`SELECT artifact_id FROM delegation_inputs WHERE delegation_id = $1 ORDER BY position`, []any{d.ID},
		func(rows pgx.Rows) error {
			var a string
			err := rows.Scan(&a)
			d.Inputs = append(d.Inputs, a)
			return err
		})
	if err != nil {
		return err
	}
	d.Artifacts, err = t.artifacts(false, `WHERE delegation_id = $1 ORDER BY created_at, id`, d.ID)
	return err
}

// Delegations implements delegation.Store (at most f.Limit, 500 when it
// is not set).
func (s *Store) Delegations(ctx context.Context, f delegation.Filter) ([]delegation.Record, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 500
	}
	var users, ids []string
	if len(f.UserIDs) > 0 {
		users = f.UserIDs
	}
	if len(f.IDs) > 0 {
		ids = f.IDs
	}
	out, err := s.delegations(ctx, `SELECT `+delegationColumns+` FROM delegations
		WHERE ($1::text[] IS NULL OR user_id = ANY($1)) AND ($2::text[] IS NULL OR id = ANY($2)) AND ($3 = '' OR status = $3)
		ORDER BY created_at DESC, id LIMIT $4`, users, ids, f.Status, limit)
	if err != nil {
		return nil, fmt.Errorf("store: delegations: %w", err)
	}
	return out, nil
}

// delegations reads records, each with its inputs and artifacts, from
// one snapshot.
func (s *Store) delegations(ctx context.Context, q string, args ...any) ([]delegation.Record, error) {
	var out []delegation.Record
	err := s.read(ctx, func(t *txn) error {
		out = []delegation.Record{}
		err := t.each(q, args, func(rows pgx.Rows) error {
			d, err := scanDelegation(rows)
			out = append(out, d)
			return err
		})
		if err != nil {
			return err
		}
		for i := range out {
			if err := t.fill(&out[i]); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// OpenDelegations implements delegation.Store.
func (s *Store) OpenDelegations(ctx context.Context) ([]delegation.Record, error) {
	out, err := s.delegations(ctx, `SELECT `+delegationColumns+` FROM delegations d
		WHERE status IN ('queued', 'running')
		AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.delegation_id = d.id AND t.status = 'pending')
		ORDER BY created_at`)
	if err != nil {
		return nil, fmt.Errorf("store: open delegations: %w", err)
	}
	return out, nil
}

// Artifacts implements delegation.Store.
func (s *Store) Artifacts(ctx context.Context, ids []string) ([]chat.Artifact, error) {
	var out []chat.Artifact
	err := s.read(ctx, func(t *txn) error {
		out = nil
		for _, id := range ids {
			arts, err := t.artifacts(true, `WHERE id = $1`, id)
			if err != nil {
				return err
			}
			if len(arts) == 0 {
				return fmt.Errorf("artifact %s: %w", id, delegation.ErrNotFound)
			}
			out = append(out, arts...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: artifacts: %w", err)
	}
	return out, nil
}

// artifacts reads artifacts, with their content or without.
func (t *txn) artifacts(content bool, where string, args ...any) ([]chat.Artifact, error) {
	cols := `id, name, media_type, size, sha256, producer, COALESCE(delegation_id, ''), `
	if content {
		cols += `content`
	} else {
		cols += `NULL::bytea`
	}
	out := []chat.Artifact{}
	err := t.each(`SELECT `+cols+` FROM artifacts `+where, args, func(rows pgx.Rows) error {
		var a chat.Artifact
		if err := rows.Scan(&a.ID, &a.Name, &a.MediaType, &a.Size, &a.SHA256, &a.Producer, &a.DelegationID, &a.Content); err != nil {
			return err
		}
		if !content {
			a.Content = nil
		} else if a.Content == nil {
			a.Content = []byte{}
		}
		out = append(out, a)
		return nil
	})
	return out, err
}
