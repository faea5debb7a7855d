package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-chat/switchboard/gateway"
)

const delegationColumns = `id, from_bot, to_bot, user_id, user_name, task, depth, COALESCE(parent_id, ''), status,
	result, error, origin_platform, origin_chat, origin_chat_type, origin_sender, COALESCE(from_session, ''),
	expected_outputs, retries, created_at, updated_at`

func scanDelegation(row scanner) (gateway.Delegation, error) {
	var d gateway.Delegation
	var chatType, expected string
	var created, updated int64
	err := row.Scan(&d.ID, &d.From, &d.To, &d.UserID, &d.UserName, &d.Task, &d.Depth, &d.ParentID, &d.Status,
		&d.Result, &d.Error, &d.Origin.Platform, &d.Origin.ChatID, &chatType, &d.OriginSender, &d.FromSession,
		&expected, &d.Retries, &created, &updated)
	if err != nil {
		return d, err
	}
	d.Origin.Type = gateway.ChatType(chatType)
	d.CreatedAt, d.UpdatedAt = fromMicros(created), fromMicros(updated)
	if expected != "" {
		if err := json.Unmarshal([]byte(expected), &d.Expected); err != nil {
			return d, fmt.Errorf("delegation %s expected outputs: %w", d.ID, err)
		}
	}
	return d, nil
}

// startDelegation stores a new hand-off; a queued one also gets the wrapper
// in the target's session and the target's turn, whose ref it returns.
func startDelegation(ctx context.Context, tx *txn, nd gateway.NewDelegation, now int64) (gateway.TurnRef, error) {
	d := nd.Record
	if d.FromSession == "" && nd.FromSession != nil {
		id, err := ensureSession(ctx, tx, *nd.FromSession, now)
		if err != nil {
			return gateway.TurnRef{}, err
		}
		d.FromSession = id
	}
	var expected string
	if len(d.Expected) > 0 {
		b, err := json.Marshal(d.Expected)
		if err != nil {
			return gateway.TurnRef{}, err
		}
		expected = string(b)
	}
	var parent, fromSession any
	if d.ParentID != "" {
		parent = d.ParentID
	}
	if d.FromSession != "" {
		fromSession = d.FromSession
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO delegations (id, from_bot, to_bot, user_id, user_name, task, depth,
		parent_id, status, error, origin_platform, origin_chat, origin_chat_type, origin_sender, from_session,
		expected_outputs, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.ID, d.From, d.To, d.UserID, d.UserName, d.Task, d.Depth, parent, d.Status, d.Error,
		d.Origin.Platform, d.Origin.ChatID, string(d.Origin.Type), d.OriginSender, fromSession, expected, now, now); err != nil {
		return gateway.TurnRef{}, err
	}
	for i, a := range d.Inputs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO delegation_inputs (delegation_id, artifact_id, position) VALUES (?, ?, ?)`, d.ID, a, i); err != nil {
			return gateway.TurnRef{}, fmt.Errorf("input %s: %w", a, err)
		}
	}
	if d.Status != gateway.StatusQueued {
		return gateway.TurnRef{}, nil
	}
	sid, err := ensureSession(ctx, tx, nd.Target, now)
	if err != nil {
		return gateway.TurnRef{}, err
	}
	wrapper := gateway.Message{
		Kind: gateway.KindWrapper, From: gateway.Party{Kind: "system", ID: d.From, Name: "delegation"},
		UserID: d.UserID, Bot: d.To, Text: nd.Wrapper, Time: fromMicros(now), DelegationID: d.ID,
	}
	if wrapper.ID, err = insertMessage(ctx, tx, 0, wrapper, sid); err != nil {
		return gateway.TurnRef{}, err
	}
	linkMessage(tx, sid, &wrapper)
	ref := gateway.TurnRef{SessionID: sid}
	if ref.ID, err = insertID(tx, `INSERT INTO turns (session_id, message_id, text, delegation_id, created_at)
		VALUES (?, ?, ?, ?, ?)`, sid, wrapper.ID, d.Task, d.ID, now); err != nil {
		return gateway.TurnRef{}, err
	}
	cached := cachedTurn{ref: ref, message: wrapper, text: d.Task, delegation: d.ID}
	tx.onStored(func() { tx.s.recent.addTurn(cached) })
	return ref, nil
}

func updateDelegation(ctx context.Context, tx *txn, u gateway.DelegationUpdate, now int64) error {
	retry := 0
	if u.Retry {
		retry = 1
	}
	res, err := tx.ExecContext(ctx, `UPDATE delegations SET status = ?, result = ?, error = ?, retries = retries + ?, updated_at = ?
		WHERE id = ?`, u.Status, u.Result, u.Error, retry, now, u.ID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delegation %s: %w", u.ID, gateway.ErrNotFound)
	}
	return nil
}

// StartDelegations implements gateway.Store.
func (s *SQLite) StartDelegations(ctx context.Context, ds []gateway.NewDelegation, onStored func([]gateway.TurnRef)) ([]gateway.TurnRef, error) {
	var refs []gateway.TurnRef
	err := s.tx(ctx, func(tx *txn) error {
		refs = nil
		now := micros(timeNow())
		for _, d := range ds {
			ref, err := startDelegation(ctx, tx, d, now)
			if err != nil {
				return err
			}
			if ref.ID != 0 {
				refs = append(refs, ref)
			}
		}
		if onStored != nil {
			stored := refs
			tx.onStored(func() { onStored(stored) })
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: start delegations: %w", err)
	}
	return refs, nil
}

// UpdateDelegation implements gateway.Store.
func (s *SQLite) UpdateDelegation(ctx context.Context, u gateway.DelegationUpdate) error {
	err := s.tx(ctx, func(tx *txn) error { return updateDelegation(ctx, tx, u, micros(timeNow())) })
	if err != nil {
		return fmt.Errorf("store: update delegation: %w", err)
	}
	return nil
}

// GetDelegation implements gateway.Store.
func (s *SQLite) GetDelegation(ctx context.Context, id string) (gateway.Delegation, error) {
	d, err := scanDelegation(s.queryRow(ctx, delegationQuery, id))
	if err != nil {
		return d, fmt.Errorf("store: get delegation: %w", notFound(err))
	}
	if err := s.fillDelegation(ctx, &d); err != nil {
		return d, fmt.Errorf("store: get delegation: %w", err)
	}
	return d, nil
}

// fillDelegation loads a delegation's inputs and artifacts.
func (s *SQLite) fillDelegation(ctx context.Context, d *gateway.Delegation) error {
	rows, err := s.query(ctx, `SELECT artifact_id FROM delegation_inputs WHERE delegation_id = ? ORDER BY position`, d.ID)
	if err != nil {
		return err
	}
	d.Inputs = []string{}
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			rows.Close()
			return err
		}
		d.Inputs = append(d.Inputs, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	arts, err := s.queryArtifacts(ctx, false, `WHERE delegation_id = ? ORDER BY created_at, id`, d.ID)
	d.Artifacts = arts
	return err
}

// ListDelegations implements gateway.Store.
func (s *SQLite) ListDelegations(ctx context.Context, f gateway.DelegationFilter) ([]gateway.Delegation, error) {
	q := `SELECT ` + delegationColumns + ` FROM delegations WHERE 1 = 1`
	var args []any
	if len(f.UserIDs) > 0 {
		q += ` AND user_id IN (?` + strings.Repeat(`, ?`, len(f.UserIDs)-1) + `)`
		for _, u := range f.UserIDs {
			args = append(args, u)
		}
	}
	if f.Status != "" {
		q += ` AND status = ?`
		args = append(args, f.Status)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 500
	}
	q += ` ORDER BY created_at DESC, id LIMIT ?`
	args = append(args, limit)
	out, err := s.queryDelegations(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list delegations: %w", err)
	}
	for i := range out {
		if err := s.fillDelegation(ctx, &out[i]); err != nil {
			return nil, fmt.Errorf("store: list delegations: %w", err)
		}
	}
	return out, nil
}

func (s *SQLite) queryDelegations(ctx context.Context, q string, args ...any) ([]gateway.Delegation, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []gateway.Delegation{}
	for rows.Next() {
		d, err := scanDelegation(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// OpenDelegations implements gateway.Store.
func (s *SQLite) OpenDelegations(ctx context.Context) ([]gateway.Delegation, error) {
	out, err := s.queryDelegations(ctx, `SELECT `+delegationColumns+` FROM delegations d
		WHERE status IN ('queued', 'running')
		AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.delegation_id = d.id AND t.status = 'pending')
		ORDER BY created_at`)
	if err != nil {
		return nil, fmt.Errorf("store: open delegations: %w", err)
	}
	return out, nil
}

// Artifacts implements gateway.Store.
func (s *SQLite) Artifacts(ctx context.Context, ids []string) ([]gateway.ArtifactRecord, error) {
	var out []gateway.ArtifactRecord
	for _, id := range ids {
		arts, err := s.queryArtifacts(ctx, true, `WHERE id = ?`, id)
		if err != nil {
			return nil, fmt.Errorf("store: artifacts: %w", err)
		}
		if len(arts) == 0 {
			return nil, fmt.Errorf("store: artifact %s: %w", id, gateway.ErrNotFound)
		}
		out = append(out, arts...)
	}
	return out, nil
}

func (s *SQLite) queryArtifacts(ctx context.Context, content bool, where string, args ...any) ([]gateway.ArtifactRecord, error) {
	cols := `id, name, media_type, size, sha256, producer, COALESCE(delegation_id, ''), `
	if content {
		cols += `content`
	} else {
		cols += `x''`
	}
	rows, err := s.query(ctx, `SELECT `+cols+` FROM artifacts `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []gateway.ArtifactRecord{}
	for rows.Next() {
		var a gateway.ArtifactRecord
		if err := rows.Scan(&a.ID, &a.Name, &a.MediaType, &a.Size, &a.SHA256, &a.Producer, &a.DelegationID, &a.Content); err != nil {
			return nil, err
		}
		if !content {
			a.Content = nil
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// delegationQuery reads one delegation by ID.
const delegationQuery = `SELECT ` + delegationColumns + ` FROM delegations WHERE id = ?`

// delegationRef reads a delegation's current status for a message frame,
// inside a write transaction.
func delegationRef(ctx context.Context, tx *txn, id string) (*gateway.DelegationRef, error) {
	return refOf(tx.QueryRowContext(ctx, delegationQuery, id))
}

// delegationRef is the same outside a transaction.
func (s *SQLite) delegationRef(ctx context.Context, id string) (*gateway.DelegationRef, error) {
	return refOf(s.queryRow(ctx, delegationQuery, id))
}

// refOf scans a delegation row into its short form; no row is no ref.
func refOf(row scanner) (*gateway.DelegationRef, error) {
	d, err := scanDelegation(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return d.Ref(), nil
}

// ChatHasBot implements gateway.Store.
func (s *SQLite) ChatHasBot(ctx context.Context, platform, chatID, bot string) (bool, error) {
	var n int
	err := s.queryRow(ctx, `SELECT COUNT(*) FROM participants p JOIN conversations c ON c.id = p.conversation_id
		WHERE c.platform = ? AND c.chat_id = ? AND c.bot = '' AND p.kind = 'bot' AND p.participant_id = ?`, platform, chatID, bot).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: chat has bot: %w", err)
	}
	return n > 0, nil
}

// LastPrivateChatOfUser implements gateway.Store.
func (s *SQLite) LastPrivateChatOfUser(ctx context.Context, userID string) (gateway.ChatRef, string, bool, error) {
	c := gateway.ChatRef{Type: gateway.ChatPrivate}
	if err := s.linked(ctx); err != nil {
		return c, "", false, err
	}
	var pid string
	// A person's private messages all belong to their user-scoped
	// sessions (one per bot), so those are searched rather than every
	// message (which would need an index written with each message).
	err := s.queryRow(ctx, `SELECT c.platform, c.chat_id, m.from_id FROM sessions s
		JOIN session_messages sm ON sm.session_id = s.id
		JOIN messages m ON m.id = sm.message_id
		JOIN conversations c ON c.id = m.conversation_id
		WHERE s.scope = 'user' AND s.scope_id = ? AND m.user_id = ? AND m.from_kind = 'human' AND c.kind = 'private'
		ORDER BY m.id DESC LIMIT 1`, userID, userID).Scan(&c.Platform, &c.ChatID, &pid)
	if errors.Is(err, sql.ErrNoRows) {
		return c, "", false, nil
	}
	if err != nil {
		return c, "", false, fmt.Errorf("store: last chat of user: %w", err)
	}
	return c, pid, true, nil
}
