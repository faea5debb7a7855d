package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/sessions"
)

// sessionColumns is the select list of sessions s that sessionDest reads.
const sessionColumns = `s.id, s.bot, s.scope, s.scope_id, s.resume_id, s.created_at, s.updated_at`

// sessionDest returns the scan destinations of sessionColumns for s, and
// the function that finishes s once they are scanned.
func sessionDest(s *sessions.Session) ([]any, func()) {
	var created, updated int64
	return []any{&s.ID, &s.Key.Bot, &s.Key.Scope, &s.Key.ScopeID, &s.ResumeID, &created, &updated}, func() {
		s.CreatedAt, s.UpdatedAt = fromMicros(created), fromMicros(updated)
	}
}

func scanSession(row pgx.Row) (sessions.Session, error) {
	var s sessions.Session
	dest, finish := sessionDest(&s)
	err := row.Scan(dest...)
	finish()
	return s, err
}

// FindSession implements sessions.Store.
func (s *Store) FindSession(ctx context.Context, key sessions.Key) (sessions.Session, bool, error) {
	var sess sessions.Session
	dest, finish := sessionDest(&sess)
	err := s.pooled(ctx).scanOne(`SELECT `+sessionColumns+` FROM sessions s
		WHERE bot = $1 AND scope = $2 AND scope_id = $3`, []any{key.Bot, key.Scope, key.ScopeID}, dest...)
	finish()
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.Session{}, false, nil
	}
	if err != nil {
		return sessions.Session{}, false, fmt.Errorf("store: find session: %w", err)
	}
	return sess, true, nil
}

// GetSession returns the session with id, or an error wrapping
// sessions.ErrNotFound.
func (s *Store) GetSession(ctx context.Context, id string) (sessions.Session, error) {
	var sess sessions.Session
	dest, finish := sessionDest(&sess)
	err := s.pooled(ctx).scanOne(`SELECT `+sessionColumns+` FROM sessions s WHERE id = $1`, []any{id}, dest...)
	finish()
	if errors.Is(err, pgx.ErrNoRows) {
		return sess, fmt.Errorf("store: session %s: %w", id, sessions.ErrNotFound)
	}
	if err != nil {
		return sess, fmt.Errorf("store: get session: %w", err)
	}
	return sess, nil
}

// ListSessions returns the sessions matching f, most recently updated
// first (at most f.Limit, 1000 when it is not set).
func (s *Store) ListSessions(ctx context.Context, f sessions.Filter) ([]sessions.Session, error) {
	q := `SELECT ` + sessionColumns + ` FROM sessions s WHERE ($1 = '' OR bot = $1)`
	args := []any{f.Bot}
	if len(f.ScopeIDs) > 0 {
		q += ` AND scope = 'user' AND scope_id = ANY($3)`
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	q += ` ORDER BY updated_at DESC, id LIMIT $2`
	args = append(args, limit)
	if len(f.ScopeIDs) > 0 {
		args = append(args, f.ScopeIDs)
	}
	out := []sessions.Session{}
	err := s.pooled(ctx).each(q, args, func(rows pgx.Rows) error {
		sess, err := scanSession(rows)
		out = append(out, sess)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: list sessions: %w", err)
	}
	return out, nil
}

// SessionMessages implements sessions.Store.
func (s *Store) SessionMessages(ctx context.Context, sessionID, kind string, limit int) ([]chat.Message, error) {
	var msgs []chat.Message
	err := s.read(ctx, func(t *txn) (err error) {
		msgs, err = t.messages(`SELECT * FROM (SELECT `+messageColumns+`
			FROM session_messages sm JOIN messages m ON m.id = sm.message_id
			LEFT JOIN conversations c ON c.id = m.conversation_id
			WHERE sm.session_id = $1 AND ($2 = '' OR m.kind = $2)
			ORDER BY sm.message_id DESC LIMIT $3) newest ORDER BY 1`, sessionID, kind, limit)
		if err == nil {
			err = t.withArtifacts(msgs)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: session messages: %w", err)
	}
	return msgs, nil
}

// LastPrivateChat implements gateway.SessionStore. The session's
// messages are walked newest first, each looked up by its key: the
// subquery's OFFSET 0 keeps the planner from joining the other way
// round, which it does when the tables have no statistics yet (a new
// database, its first minute) and takes from_kind = 'human' for a rare
// value: then every call read and sorted every message of every chat.
func (s *Store) LastPrivateChat(ctx context.Context, sessionID string) (chat.Ref, bool, error) {
	c := chat.Ref{Type: chat.Private}
	err := s.pooled(ctx).scanOne(`SELECT c.platform, c.chat_id
		FROM session_messages sm
		CROSS JOIN LATERAL (SELECT m.conversation_id FROM messages m
			WHERE m.id = sm.message_id AND m.from_kind = 'human' OFFSET 0) m
		JOIN conversations c ON c.id = m.conversation_id
		WHERE sm.session_id = $1 AND c.kind = 'private'
		ORDER BY sm.message_id DESC LIMIT 1`, []any{sessionID}, &c.Platform, &c.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return chat.Ref{}, false, nil
	}
	if err != nil {
		return chat.Ref{}, false, fmt.Errorf("store: last private chat: %w", err)
	}
	return c, true, nil
}

// LastPrivateChatOfUser returns the private chat where a person last
// spoke to any bot, and the platform ID they used there.
func (s *Store) LastPrivateChatOfUser(ctx context.Context, userID string) (chat.Ref, string, bool, error) {
	c := chat.Ref{Type: chat.Private}
	var pid string
	err := s.pooled(ctx).scanOne(`SELECT c.platform, c.chat_id, m.from_id
		FROM messages m JOIN conversations c ON c.id = m.conversation_id
		WHERE m.user_id = $1 AND m.from_kind = 'human' AND c.kind = 'private'
		ORDER BY m.id DESC LIMIT 1`, []any{userID}, &c.Platform, &c.ID, &pid)
	if errors.Is(err, pgx.ErrNoRows) {
		return chat.Ref{}, "", false, nil
	}
	if err != nil {
		return chat.Ref{}, "", false, fmt.Errorf("store: last chat of user: %w", err)
	}
	return c, pid, true, nil
}
