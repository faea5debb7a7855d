package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/sessions"
)

// PendingSessions implements sessions.Store: the sessions with turns
// that this process may run, those whose lease is free, its own, or
// held by a process that died.
func (s *Store) PendingSessions(ctx context.Context) ([]string, error) {
	var out []string
	err := s.pooled(ctx).each(`WITH live AS (SELECT id FROM instances WHERE switchboard_alive(id) AND id != $1)
		SELECT t.session_id FROM turns t JOIN sessions s ON s.id = t.session_id
		WHERE t.status = 'pending' AND (s.lease_owner IS NULL OR s.lease_owner NOT IN (SELECT id FROM live))
		GROUP BY t.session_id ORDER BY MIN(t.id)`, []any{s.instance}, func(rows pgx.Rows) error {
		var id string
		err := rows.Scan(&id)
		out = append(out, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: pending sessions: %w", err)
	}
	return out, nil
}

// QueueDepth implements gateway.SessionStore.
func (s *Store) QueueDepth(ctx context.Context) (int, error) {
	var n int
	if err := s.pooled(ctx).scanOne(`SELECT COUNT(*) FROM turns WHERE status = 'pending'`, nil, &n); err != nil {
		return 0, fmt.Errorf("store: queue depth: %w", err)
	}
	return n, nil
}

// NextTurn implements sessions.Store. A session's turns run on one
// gateway process at a time, the holder of the session's lease
// (sessions.lease_owner): NextTurn takes the lease when it is free or its
// holder died, finds no turn while another live process holds it, and
// gives it back when the session has no turn left. It does all of that,
// and reads the turn with its history, in one transaction sent in one
// round trip (a batch), under the lock of the session's row that queuing
// a turn takes too: a turn queued meanwhile is either seen here or
// queued after the lease was given back, and then its process takes it.
// A hand-off's turn then reads its delegation, whose task, parties and
// inputs never change once stored.
func (s *Store) NextTurn(ctx context.Context, sessionID string, historyLimit int) (sessions.Turn, bool, error) {
	var turn sessions.Turn
	var found bool
	var delegationID string
	err := s.writeBatch(ctx, func(b *pgx.Batch) {
		turn, found, delegationID = sessions.Turn{}, false, ""
		args := clean([]any{sessionID, s.instance})
		b.Queue(`SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, args[0])
		b.Queue(claimLease, args...)
		b.Queue(turnQuery, args...).QueryRow(func(row pgx.Row) error {
			var err error
			turn, delegationID, found, err = scanTurn(row)
			return err
		})
		if historyLimit > 0 {
			b.Queue(`WITH t AS (SELECT t.message_id FROM turns t JOIN sessions s ON s.id = t.session_id
					WHERE t.session_id = $1 AND t.status = 'pending' AND s.lease_owner = $2 ORDER BY t.id LIMIT 1)
				SELECT `+historyColumns+`
				FROM t, session_messages sm JOIN messages m ON m.id = sm.message_id
				WHERE sm.session_id = $1 AND sm.message_id != t.message_id
					AND (sm.message_id < t.message_id OR m.from_kind != 'human')
				ORDER BY sm.message_id DESC LIMIT $3`, append(args, historyLimit)...).Query(func(rows pgx.Rows) error {
				var err error
				turn.History, err = scanHistory(rows)
				return err
			})
		}
		b.Queue(releaseLease, args...)
	})
	if err == nil && found && delegationID != "" {
		err = s.read(ctx, func(t *txn) error {
			d, err := t.delegation(delegationID)
			if err != nil {
				return fmt.Errorf("delegation of turn %d: %w", turn.Ref.ID, err)
			}
			turn.Delegation = &d
			return nil
		})
	}
	if err != nil {
		return sessions.Turn{}, false, fmt.Errorf("store: next turn: %w", err)
	}
	if !found {
		return sessions.Turn{}, false, nil
	}
	return turn, true, nil
}

// claimLease takes session $1's lease for instance $2 when nobody holds
// it or its holder died (switchboard_alive, which is only asked then).
const claimLease = `UPDATE sessions SET lease_owner = $2 WHERE id = $1 AND lease_owner IS DISTINCT FROM $2
	AND CASE WHEN lease_owner IS NULL THEN true ELSE NOT switchboard_alive(lease_owner) END`

// releaseLease gives session $1's lease back when instance $2 holds it
// and the session has no turn left.
const releaseLease = `UPDATE sessions SET lease_owner = NULL WHERE id = $1 AND lease_owner = $2
	AND NOT EXISTS (SELECT 1 FROM turns WHERE session_id = $1 AND status = 'pending')`

// turnQuery reads a session's oldest unanswered turn ($1) when
// instance $2 holds its lease, as scanTurn reads it.
const turnQuery = `SELECT t.id, t.text, COALESCE(t.after_turn, 0),
	COALESCE((SELECT a.id FROM turns a WHERE a.id = t.after_turn AND a.status = 'pending'), 0),
	COALESCE(t.delegation_id, ''), ` + sessionColumns + `, ` + messageColumns + `
	FROM turns t JOIN sessions s ON s.id = t.session_id JOIN messages m ON m.id = t.message_id
	LEFT JOIN conversations c ON c.id = m.conversation_id
	WHERE t.session_id = $1 AND t.status = 'pending' AND s.lease_owner = $2 ORDER BY t.id LIMIT 1`

// scanTurn reads a row of turnQuery: the turn without its delegation
// and history, and its delegation's ID; no row is found false.
func scanTurn(row pgx.Row) (turn sessions.Turn, delegationID string, found bool, err error) {
	sdest, sdone := sessionDest(&turn.Session)
	mdest, mdone := messageDest(&turn.Message)
	dest := append([]any{&turn.Ref.ID, &turn.Text, &turn.After, &turn.WaitsFor, &delegationID}, sdest...)
	err = row.Scan(append(dest, mdest...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.Turn{}, "", false, nil
	}
	if err != nil {
		return turn, "", false, err
	}
	sdone()
	mdone()
	turn.Ref.SessionID = turn.Session.ID
	return turn, delegationID, true, nil
}

// historyColumns is the select list of a turn's history: what a brain is
// shown of a message (its kind, author, text and time).
const historyColumns = `m.id, m.kind, m.from_kind, m.from_id, m.from_name, m.text, m.created_at`

// scanHistory reads the rows of a history query (historyColumns, newest
// first) and closes them; it returns them oldest first.
func scanHistory(rows pgx.Rows) ([]chat.Message, error) {
	defer rows.Close()
	var out []chat.Message
	for rows.Next() {
		var m chat.Message
		var at int64
		if err := rows.Scan(&m.ID, &m.Kind, &m.From.Kind, &m.From.ID, &m.From.Name, &m.Text, &at); err != nil {
			return nil, err
		}
		m.Time = fromMicros(at)
		out = append(out, m)
	}
	slices.Reverse(out)
	return out, rows.Err()
}

// CompleteTurn implements sessions.Store. Of two completions of one turn
// at once (in two processes), the second waits for the first's row lock
// and then finds the turn done.
func (s *Store) CompleteTurn(ctx context.Context, o sessions.Outcome) (sessions.Done, error) {
	var done sessions.Done
	err := s.write(ctx, func(tx *txn) error {
		done = sessions.Done{}
		return tx.complete(o, &done)
	})
	var ce *commitError
	if errors.As(err, &ce) && o.Turn.ID != 0 {
		s.unsure.put(turnKey(o.Turn.ID), done)
	}
	if errors.Is(err, errTurnDone) {
		// Done before: by this process, when its commit's answer was
		// lost (unsure.go), then what it stored is returned now.
		if d, ok := s.unsure.take(turnKey(o.Turn.ID)); ok {
			if stored, err := s.outboxStored(ctx, d.(sessions.Done)); err == nil && stored {
				return d.(sessions.Done), nil
			}
		}
		// Nothing stored; whether turns are left is not known here.
		return sessions.Done{More: true}, nil
	}
	if err != nil {
		return sessions.Done{}, fmt.Errorf("store: complete turn %d: %w", o.Turn.ID, err)
	}
	return done, nil
}

// errTurnDone rolls back the completion of a turn that is done already.
var errTurnDone = errors.New("turn done already")

// complete stores o. An outcome without a turn settles a delegation a
// restart interrupted.
func (t *txn) complete(o sessions.Outcome, done *sessions.Done) error {
	now := micros(timeNow())
	var delegationID string
	if o.Turn.ID != 0 {
		// The turn done, and the session's row touched, which locks it
		// (see ensureSession) before a retry queues its turn.
		var d *string
		err := t.scanOne(`WITH t AS (UPDATE turns SET status = 'done', done_at = $1
				WHERE id = $2 AND session_id = $3 AND status = 'pending' RETURNING delegation_id),
			s AS (UPDATE sessions SET updated_at = $1, resume_id = CASE WHEN $4 = '' THEN resume_id ELSE $4 END
				WHERE id = $3 AND EXISTS (SELECT 1 FROM t))
			SELECT delegation_id FROM t`,
			[]any{now, o.Turn.ID, o.Turn.SessionID, o.ResumeID}, &d)
		if errors.Is(err, pgx.ErrNoRows) {
			var status string
			err := t.scanOne(`SELECT status FROM turns WHERE id = $1 AND session_id = $2`, []any{o.Turn.ID, o.Turn.SessionID}, &status)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("turn %d: %w", o.Turn.ID, sessions.ErrNotFound)
			}
			if err != nil {
				return err
			}
			return errTurnDone
		}
		if err != nil {
			return err
		}
		if d != nil {
			delegationID = *d
		}
	}
	// The turn's files first: a hand-off may take them as inputs. They
	// are attached to the turn's first message once it is stored.
	if err := t.insertArtifacts(o.Artifacts, delegationID, now); err != nil {
		return err
	}
	// Hand-offs and the status change next, so the posts that mention
	// them carry the status they lead to.
	if o.Update != nil {
		if err := t.updateDelegation(*o.Update, now); err != nil {
			return err
		}
	}
	for _, h := range o.Handoffs {
		ref, queued, err := t.startDelegation(h, now)
		if err != nil {
			return err
		}
		if queued {
			done.Turns = append(done.Turns, ref)
		}
	}
	for i, p := range o.Posts {
		e, err := t.post(p, now)
		if err != nil {
			return err
		}
		if i == 0 {
			if err := t.attachArtifacts(o.Artifacts, e.MessageID); err != nil {
				return err
			}
		}
		if i == 0 || p.ShowsArtifacts {
			if err := t.showArtifacts(e.MessageID, o.Artifacts); err != nil {
				return err
			}
			e.Artifacts = described(o.Artifacts)
		}
		done.Outbox = append(done.Outbox, e)
	}
	for _, n := range o.Notes {
		id, err := t.insertMessage(0, n.Message)
		if err != nil {
			return err
		}
		if err := t.link(n.Session, id); err != nil {
			return err
		}
		if n.FollowUp != "" {
			ref, err := t.followUp(n, id, now)
			if err != nil {
				return err
			}
			done.Turns = append(done.Turns, ref)
		}
	}
	if o.Retry != "" {
		var id int64
		if err := t.scanOne(`INSERT INTO turns (session_id, message_id, text, delegation_id, created_at)
			SELECT session_id, message_id, $1, delegation_id, $2 FROM turns WHERE id = $3 RETURNING id`,
			[]any{o.Retry, now, o.Turn.ID}, &id); err != nil {
			return err
		}
		done.Turns = append(done.Turns, sessions.TurnRef{ID: id, SessionID: o.Turn.SessionID})
	}
	if o.Turn.ID == 0 {
		return nil
	}
	return t.scanOne(`SELECT EXISTS (SELECT 1 FROM turns WHERE session_id = $1 AND status = 'pending')`,
		[]any{o.Turn.SessionID}, &done.More)
}

// followUp queues the turn a note asks for, on the note (msgID), in the
// note's session and for its delegation. The session's row is locked
// first, as every transaction that queues a turn in it locks it (see
// ensureSession).
func (t *txn) followUp(n sessions.Note, msgID, now int64) (sessions.TurnRef, error) {
	var del any
	if n.Message.DelegationID != "" {
		del = n.Message.DelegationID
	}
	var id int64
	err := t.scanOne(`WITH s AS (SELECT id FROM sessions WHERE id = $1 FOR NO KEY UPDATE)
		INSERT INTO turns (session_id, message_id, text, delegation_id, created_at)
		SELECT s.id, $2, $3, $4, $5 FROM s RETURNING id`, []any{n.Session, msgID, n.FollowUp, del, now}, &id)
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.TurnRef{}, fmt.Errorf("follow-up: session %s: %w", n.Session, sessions.ErrNotFound)
	}
	return sessions.TurnRef{ID: id, SessionID: n.Session}, err
}

// insertArtifacts stores a turn's artifacts, attached to its delegation
// (none when "") and to no message yet (attachArtifacts). Each is
// stamped a microsecond after the one before, so that they read back in
// the order the turn made them (their IDs are random).
func (t *txn) insertArtifacts(arts []chat.Artifact, delegationID string, now int64) error {
	var del any
	if delegationID != "" {
		del = delegationID
	}
	for i, a := range arts {
		content := a.Content
		if content == nil {
			content = []byte{}
		}
		if _, err := t.exec(`INSERT INTO artifacts (id, name, media_type, size, sha256, producer, content,
			delegation_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			a.ID, a.Name, a.MediaType, a.Size, a.SHA256, a.Producer, content, del, now+int64(i)); err != nil {
			return err
		}
	}
	return nil
}

// attachArtifacts attaches stored artifacts to the message that first
// showed them.
func (t *txn) attachArtifacts(arts []chat.Artifact, msgID int64) error {
	if len(arts) == 0 {
		return nil
	}
	ids := make([]string, len(arts))
	for i, a := range arts {
		ids[i] = a.ID
	}
	_, err := t.exec(`UPDATE artifacts SET message_id = $1 WHERE id = ANY($2)`, msgID, ids)
	return err
}

// startDelegation stores a delegation record. A queued one also puts its
// wrapper in the target's session and queues the target's turn, which it
// returns.
func (t *txn) startDelegation(h sessions.Handoff, now int64) (sessions.TurnRef, bool, error) {
	d := h.Record
	if d.FromSession == "" && h.FromSession != nil {
		id, err := t.ensureSession(*h.FromSession, now)
		if err != nil {
			return sessions.TurnRef{}, false, err
		}
		d.FromSession = id
	}
	if err := t.insertDelegation(d, now); err != nil {
		return sessions.TurnRef{}, false, err
	}
	if d.Status != delegation.StatusQueued {
		return sessions.TurnRef{}, false, nil
	}
	sid, err := t.ensureSession(h.Target, now)
	if err != nil {
		return sessions.TurnRef{}, false, err
	}
	wrapper := chat.Message{
		Kind: chat.KindWrapper, From: chat.Party{Kind: chat.System, ID: d.From, Name: "delegation"},
		UserID: d.UserID, Bot: d.To, Text: h.Wrapper, Time: fromMicros(now), DelegationID: d.ID,
	}
	if wrapper.ID, err = t.insertMessage(0, wrapper); err != nil {
		return sessions.TurnRef{}, false, err
	}
	if err := t.link(sid, wrapper.ID); err != nil {
		return sessions.TurnRef{}, false, err
	}
	var id int64
	if err := t.scanOne(`INSERT INTO turns (session_id, message_id, text, delegation_id, created_at)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, []any{sid, wrapper.ID, d.Task, d.ID, now}, &id); err != nil {
		return sessions.TurnRef{}, false, err
	}
	return sessions.TurnRef{ID: id, SessionID: sid}, true, nil
}

// outboxStored reports whether the outbox entries and turns d names are
// stored.
func (s *Store) outboxStored(ctx context.Context, d sessions.Done) (bool, error) {
	var entries, msgs, turns []int64
	for _, e := range d.Outbox {
		entries, msgs = append(entries, e.OutboxID), append(msgs, e.MessageID)
	}
	for _, t := range d.Turns {
		turns = append(turns, t.ID)
	}
	var ok bool
	err := s.pooled(ctx).scanOne(`SELECT
		(SELECT COUNT(*) FROM outbox WHERE id = ANY($1) AND message_id = ANY($2)) = COALESCE(cardinality($1::bigint[]), 0)
		AND (SELECT COUNT(*) FROM turns WHERE id = ANY($3)) = COALESCE(cardinality($3::bigint[]), 0)`,
		[]any{entries, msgs, turns}, &ok)
	return ok, err
}
