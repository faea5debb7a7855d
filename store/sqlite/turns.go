package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/sessions"
)

// PendingSessions implements sessions.Store.
func (s *Store) PendingSessions(ctx context.Context) ([]string, error) {
	rows, err := s.query(ctx, `SELECT session_id FROM turns WHERE status = 'pending'
		GROUP BY session_id ORDER BY MIN(id)`)
	if err != nil {
		return nil, fmt.Errorf("store: pending sessions: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: pending sessions: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// QueueDepth implements gateway.SessionStore.
func (s *Store) QueueDepth(ctx context.Context) (int, error) {
	var n int
	if err := s.scanOne(ctx, `SELECT COUNT(*) FROM turns WHERE status = 'pending'`, nil, &n); err != nil {
		return 0, fmt.Errorf("store: queue depth: %w", err)
	}
	return n, nil
}

// NextTurn implements sessions.Store. The turn and its history are read
// together, on the writer connection (see view).
func (s *Store) NextTurn(ctx context.Context, sessionID string, historyLimit int) (sessions.Turn, bool, error) {
	var turn sessions.Turn
	var found bool
	err := s.view(ctx, func(t *txn) (err error) {
		turn, found, err = t.nextTurn(sessionID, historyLimit)
		return err
	})
	if err != nil {
		return sessions.Turn{}, false, fmt.Errorf("store: next turn: %w", err)
	}
	return turn, found, nil
}

func (t *txn) nextTurn(sessionID string, historyLimit int) (sessions.Turn, bool, error) {
	var turn sessions.Turn
	var delegationID string
	sdest, sdone := sessionDest(&turn.Session)
	mdest, mdone := messageDest(&turn.Message)
	dest := append([]any{&turn.Ref.ID, &turn.Text, &turn.After, &turn.WaitsFor, &delegationID}, sdest...)
	err := t.scanOne(`SELECT t.id, t.text, COALESCE(t.after_turn, 0),
		COALESCE((SELECT a.id FROM turns a WHERE a.id = t.after_turn AND a.status = 'pending'), 0),
		COALESCE(t.delegation_id, ''), `+sessionColumns+`, `+messageColumns+`
		FROM turns t JOIN sessions s ON s.id = t.session_id JOIN messages m ON m.id = t.message_id
		LEFT JOIN conversations c ON c.id = m.conversation_id
		WHERE t.session_id = ? AND t.status = 'pending' ORDER BY t.id LIMIT 1`,
		[]any{sessionID}, append(dest, mdest...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return sessions.Turn{}, false, nil
	}
	if err != nil {
		return turn, false, err
	}
	sdone()
	mdone()
	turn.Ref.SessionID = turn.Session.ID
	if delegationID != "" {
		d, err := t.delegation(delegationID)
		if err != nil {
			return turn, false, fmt.Errorf("delegation of turn %d: %w", turn.Ref.ID, err)
		}
		turn.Delegation = &d
	}
	turn.History, err = t.history(sessionID, turn.Message.ID, historyLimit)
	return turn, true, err
}

// historyColumns is the select list of a turn's history: what a brain is
// shown of a message (its kind, author, text and time).
const historyColumns = `m.id, m.kind, m.from_kind, m.from_id, m.from_name, m.text, m.created_at`

// history reads the newest limit messages of a session before the
// message being answered, with the bots' and system messages stored
// after it (a reply to an earlier message may be stored after it),
// oldest first.
func (t *txn) history(session string, msgID int64, limit int) ([]chat.Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := t.query(`SELECT `+historyColumns+`
		FROM session_messages sm JOIN messages m ON m.id = sm.message_id
		WHERE sm.session_id = ? AND sm.message_id != ? AND (sm.message_id < ? OR m.from_kind != 'human')
		ORDER BY sm.message_id DESC LIMIT ?`, session, msgID, msgID, limit)
	if err != nil {
		return nil, err
	}
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

// CompleteTurn implements sessions.Store.
func (s *Store) CompleteTurn(ctx context.Context, o sessions.Outcome) (sessions.Done, error) {
	var done sessions.Done
	err := s.write(ctx, func(tx *txn) error {
		done = sessions.Done{}
		return tx.complete(o, &done)
	})
	if errors.Is(err, errTurnDone) {
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
		res, err := t.exec(`UPDATE turns SET status = 'done', done_at = ? WHERE id = ? AND session_id = ? AND status = 'pending'`,
			now, o.Turn.ID, o.Turn.SessionID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			var status string
			err := t.scanOne(`SELECT status FROM turns WHERE id = ? AND session_id = ?`, []any{o.Turn.ID, o.Turn.SessionID}, &status)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("turn %d: %w", o.Turn.ID, sessions.ErrNotFound)
			}
			if err != nil {
				return err
			}
			return errTurnDone
		}
		if len(o.Artifacts) > 0 {
			// Artifacts belong to the turn's delegation too.
			var d sql.NullString
			if err := t.scanOne(`SELECT delegation_id FROM turns WHERE id = ?`, []any{o.Turn.ID}, &d); err != nil {
				return err
			}
			delegationID = d.String
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
		id, err := t.insert(`INSERT INTO turns (session_id, message_id, text, delegation_id, created_at)
			SELECT session_id, message_id, ?, delegation_id, ? FROM turns WHERE id = ?`, o.Retry, now, o.Turn.ID)
		if err != nil {
			return err
		}
		done.Turns = append(done.Turns, sessions.TurnRef{ID: id, SessionID: o.Turn.SessionID})
	}
	if o.Turn.ID == 0 {
		return nil
	}
	if _, err := t.exec(`UPDATE sessions SET updated_at = ?, resume_id = CASE WHEN ? = '' THEN resume_id ELSE ? END
		WHERE id = ?`, now, o.ResumeID, o.ResumeID, o.Turn.SessionID); err != nil {
		return err
	}
	return t.scanOne(`SELECT EXISTS (SELECT 1 FROM turns WHERE session_id = ? AND status = 'pending')`,
		[]any{o.Turn.SessionID}, &done.More)
}

// followUp queues the turn a note asks for, on the note (msgID), in the
// note's session and for its delegation.
func (t *txn) followUp(n sessions.Note, msgID, now int64) (sessions.TurnRef, error) {
	var del any
	if n.Message.DelegationID != "" {
		del = n.Message.DelegationID
	}
	id, err := t.insert(`INSERT INTO turns (session_id, message_id, text, delegation_id, created_at)
		VALUES (?, ?, ?, ?, ?)`, n.Session, msgID, n.FollowUp, del, now)
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
		if _, err := t.exec(`INSERT INTO artifacts (id, name, media_type, size, sha256, producer, content,
			delegation_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.ID, a.Name, a.MediaType, a.Size, a.SHA256, a.Producer, a.Content, del, now+int64(i)); err != nil {
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
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	_, err = t.exec(`UPDATE artifacts SET message_id = ? WHERE id IN (SELECT value FROM json_each(?))`, msgID, string(list))
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
	id, err := t.insert(`INSERT INTO turns (session_id, message_id, text, delegation_id, created_at)
		VALUES (?, ?, ?, ?, ?)`, sid, wrapper.ID, d.Task, d.ID, now)
	if err != nil {
		return sessions.TurnRef{}, false, err
	}
	return sessions.TurnRef{ID: id, SessionID: sid}, true, nil
}
