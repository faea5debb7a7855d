package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/sessions"
)

// sessionColumns is the select list of sessions s that scanSession reads.
const sessionColumns = `s.id, s.bot, s.scope, s.scope_id, s.resume_id, s.created_at, s.updated_at`

// sessionDest returns the scan destinations of sessionColumns for s, and
// the function that finishes s once they are scanned.
func sessionDest(s *sessions.Session) ([]any, func()) {
	var created, updated int64
	return []any{&s.ID, &s.Key.Bot, &s.Key.Scope, &s.Key.ScopeID, &s.ResumeID, &created, &updated}, func() {
		s.CreatedAt, s.UpdatedAt = fromMicros(created), fromMicros(updated)
	}
}

func scanSession(row scanner) (sessions.Session, error) {
	var s sessions.Session
	dest, finish := sessionDest(&s)
	err := row.Scan(dest...)
	finish()
	return s, err
}

// FindSession implements sessions.Store.
func (s *Store) FindSession(ctx context.Context, key sessions.Key) (sessions.Session, bool, error) {
	st, err := s.prepareRead(ctx, `SELECT `+sessionColumns+` FROM sessions s WHERE bot = ? AND scope = ? AND scope_id = ?`)
	if err != nil {
		return sessions.Session{}, false, fmt.Errorf("store: find session: %w", err)
	}
	sess, err := scanSession(st.QueryRowContext(ctx, key.Bot, key.Scope, key.ScopeID))
	if errors.Is(err, sql.ErrNoRows) {
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
	st, err := s.prepareRead(ctx, `SELECT `+sessionColumns+` FROM sessions s WHERE id = ?`)
	if err != nil {
		return sessions.Session{}, fmt.Errorf("store: get session: %w", err)
	}
	sess, err := scanSession(st.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
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
	q := `SELECT ` + sessionColumns + ` FROM sessions s WHERE 1 = 1`
	var args []any
	if f.Bot != "" {
		q += ` AND bot = ?`
		args = append(args, f.Bot)
	}
	if len(f.ScopeIDs) > 0 {
		q += ` AND scope = 'user' AND scope_id IN (?` + strings.Repeat(`, ?`, len(f.ScopeIDs)-1) + `)`
		for _, id := range f.ScopeIDs {
			args = append(args, id)
		}
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	q += ` ORDER BY updated_at DESC, id LIMIT ?`
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, q, args...) // its shape varies: not kept prepared
	if err != nil {
		return nil, fmt.Errorf("store: list sessions: %w", err)
	}
	defer rows.Close()
	out := []sessions.Session{}
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list sessions: %w", err)
		}
		out = append(out, sess)
	}
	return out, rows.Err()
}

// SessionMessages implements sessions.Store.
func (s *Store) SessionMessages(ctx context.Context, sessionID, kind string, limit int) ([]chat.Message, error) {
	msgs, err := scanMessages(s.query(ctx, `SELECT * FROM (SELECT `+messageColumns+`
		FROM session_messages sm JOIN messages m ON m.id = sm.message_id
		LEFT JOIN conversations c ON c.id = m.conversation_id
		WHERE sm.session_id = ? AND (? = '' OR m.kind = ?)
		ORDER BY sm.message_id DESC LIMIT ?) ORDER BY 1`, sessionID, kind, kind, limit))
	if err == nil {
		err = s.withArtifacts(ctx, msgs)
	}
	if err != nil {
		return nil, fmt.Errorf("store: session messages: %w", err)
	}
	return msgs, nil
}

// LastPrivateChat implements gateway.SessionStore. It is read on the writer
// connection, as a turn's reads are (see view).
func (s *Store) LastPrivateChat(ctx context.Context, sessionID string) (chat.Ref, bool, error) {
	c := chat.Ref{Type: chat.Private}
	err := s.view(ctx, func(t *txn) error {
		return t.scanOne(`SELECT c.platform, c.chat_id
			FROM session_messages sm JOIN messages m ON m.id = sm.message_id
			JOIN conversations c ON c.id = m.conversation_id
			WHERE sm.session_id = ? AND m.from_kind = 'human' AND c.kind = 'private'
			ORDER BY sm.message_id DESC LIMIT 1`, []any{sessionID}, &c.Platform, &c.ID)
	})
	if errors.Is(err, sql.ErrNoRows) {
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
	// A person's private messages all belong to their user-scoped
	// sessions (one per bot), which are searched rather than every
	// message.
	err := s.scanOne(ctx, `SELECT c.platform, c.chat_id, m.from_id FROM sessions s
		JOIN session_messages sm ON sm.session_id = s.id
		JOIN messages m ON m.id = sm.message_id
		JOIN conversations c ON c.id = m.conversation_id
		WHERE s.scope = 'user' AND s.scope_id = ? AND m.user_id = ? AND m.from_kind = 'human' AND c.kind = 'private'
		ORDER BY m.id DESC LIMIT 1`, []any{userID, userID}, &c.Platform, &c.ID, &pid)
	if errors.Is(err, sql.ErrNoRows) {
		return chat.Ref{}, "", false, nil
	}
	if err != nil {
		return chat.Ref{}, "", false, fmt.Errorf("store: last chat of user: %w", err)
	}
	return c, pid, true, nil
}
