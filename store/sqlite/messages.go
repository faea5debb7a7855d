package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/sessions"
)

// messageColumns is the select list scanMessage reads, from messages m
// left-joined with conversations c (wrappers and system messages have no
// conversation).
const messageColumns = `m.id, COALESCE(c.platform, ''), COALESCE(c.chat_id, ''), COALESCE(c.kind, ''),
	m.platform_msg_id, m.kind, m.from_kind, m.from_id, m.from_name, m.user_id, m.bot, m.text,
	m.mentions, m.reply_to, m.created_at, m.delegation_id, m.reply_to_id, m.failed`

// messageFrom joins a message with its conversation.
const messageFrom = ` FROM messages m LEFT JOIN conversations c ON c.id = m.conversation_id`

type scanner interface{ Scan(...any) error }

// messageDest returns the scan destinations of messageColumns for m,
// and the function that finishes m once they are scanned.
func messageDest(m *chat.Message) ([]any, func()) {
	var chatType, mentions string
	var at int64
	dest := []any{&m.ID, &m.Platform, &m.ChatID, &chatType, &m.PlatformMsgID, &m.Kind,
		&m.From.Kind, &m.From.ID, &m.From.Name, &m.UserID, &m.Bot, &m.Text, &mentions, &m.ReplyTo, &at, &m.DelegationID,
		&m.ReplyToID, &m.Failed}
	return dest, func() {
		m.ChatType = chat.Type(chatType)
		if mentions != "" {
			m.Mentions = strings.Split(mentions, " ")
		}
		m.Time = fromMicros(at)
	}
}

// scanMessage reads a row of messageColumns.
func scanMessage(row scanner) (chat.Message, error) {
	var m chat.Message
	dest, finish := messageDest(&m)
	if err := row.Scan(dest...); err != nil {
		return m, err
	}
	finish()
	return m, nil
}

// scanMessages reads rows of messageColumns.
func scanMessages(rows *sql.Rows, err error) ([]chat.Message, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []chat.Message{}
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// ensureConversation returns the conversation's ID, creating it if
// absent. A private chat belongs to its bot (on Telegram a person's
// private chats with two bots share the chat ID); a group's bot is "".
func (t *txn) ensureConversation(in chat.Ref, bot, name string, at int64) (id int64, created bool, err error) {
	if in.Type != chat.Private {
		bot = ""
	}
	key := convKey{in.Platform, in.ID, bot}
	if id, ok := t.known().convs[key]; ok {
		return id, false, nil
	}
	defer func() {
		if err == nil {
			t.learned().convs[key] = id
		}
	}()
	err = t.scanOne(`SELECT id FROM conversations WHERE platform = ? AND chat_id = ? AND bot = ?`,
		[]any{in.Platform, in.ID, bot}, &id)
	if !errors.Is(err, sql.ErrNoRows) {
		return id, false, err
	}
	id, err = t.insert(`INSERT INTO conversations (platform, chat_id, bot, kind, name, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`, in.Platform, in.ID, bot, string(in.Type), name, at)
	return id, err == nil, err
}

// addParticipant records that a person ("user") or a bot takes part in
// a conversation.
func (t *txn) addParticipant(conv int64, kind, id string, at int64) error {
	key := memberKey{conv, kind, id}
	if t.known().members[key] {
		return nil
	}
	_, err := t.exec(`INSERT OR IGNORE INTO participants (conversation_id, kind, participant_id, joined_at)
		VALUES (?, ?, ?, ?)`, conv, kind, id, at)
	if err == nil {
		t.learned().members[key] = true
	}
	return err
}

// insertMessage stores m in conversation conv (none when 0) and returns
// its ID.
func (t *txn) insertMessage(conv int64, m chat.Message) (int64, error) {
	var convArg any
	if conv != 0 {
		convArg = conv
	}
	return t.insert(`INSERT INTO messages (conversation_id, platform_msg_id, kind, from_kind,
		from_id, from_name, user_id, bot, text, mentions, reply_to, created_at, delegation_id, reply_to_id, failed)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		convArg, m.PlatformMsgID, m.Kind, m.From.Kind, m.From.ID, m.From.Name, m.UserID, m.Bot, m.Text,
		strings.Join(m.Mentions, " "), m.ReplyTo, micros(m.Time), m.DelegationID, m.ReplyToID, m.Failed)
}

// link adds a stored message to a session's history.
func (t *txn) link(session string, message int64) error {
	_, err := t.exec(`INSERT OR IGNORE INTO session_messages (session_id, message_id) VALUES (?, ?)`, session, message)
	return err
}

// ensureSession returns the session's ID, creating it if absent.
func (t *txn) ensureSession(key sessions.Key, at int64) (id string, err error) {
	if id, ok := t.known().sessions[key]; ok {
		return id, nil
	}
	defer func() {
		if err == nil {
			t.learned().sessions[key] = id
		}
	}()
	err = t.scanOne(`SELECT id FROM sessions WHERE bot = ? AND scope = ? AND scope_id = ?`,
		[]any{key.Bot, key.Scope, key.ScopeID}, &id)
	if !errors.Is(err, sql.ErrNoRows) {
		return id, err
	}
	id = uuid.NewString()
	_, err = t.exec(`INSERT INTO sessions (id, bot, scope, scope_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
		id, key.Bot, key.Scope, key.ScopeID, at, at)
	return id, err
}

// AppendInbound stores an inbound message with its chat, its dedupe key,
// its sessions' links and the turns it asks for, in one transaction. A
// message whose (platform, bot, chat, platform message ID) was stored
// before is not stored again: the result then says Duplicate and holds
// the original.
func (s *Store) AppendInbound(ctx context.Context, in gateway.Inbound) (gateway.InboundResult, error) {
	var res gateway.InboundResult
	err := s.write(ctx, func(tx *txn) error {
		res = gateway.InboundResult{}
		m := in.Message
		at := micros(m.Time)
		var first int64
		err := tx.scanOne(`SELECT message_id FROM inbound_keys
			WHERE platform = ? AND bot = ? AND chat_id = ? AND platform_msg_id = ?`,
			[]any{m.Platform, m.Bot, m.ChatID, m.PlatformMsgID}, &first)
		if err == nil {
			res.Duplicate = true
			res.Message, err = tx.message(first)
			return err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		conv, _, err := tx.ensureConversation(m.Chat(), m.Bot, in.ChatName, at)
		if err != nil {
			return err
		}
		if err := tx.addParticipant(conv, "user", m.From.ID, at); err != nil {
			return err
		}
		if m.Bot != "" {
			if err := tx.addParticipant(conv, "bot", m.Bot, at); err != nil {
				return err
			}
		}
		if m.ID, err = tx.insertMessage(conv, m); err != nil {
			return err
		}
		if _, err := tx.exec(`INSERT INTO inbound_keys (platform, bot, chat_id, platform_msg_id, message_id)
			VALUES (?, ?, ?, ?, ?)`, m.Platform, m.Bot, m.ChatID, m.PlatformMsgID, m.ID); err != nil {
			return err
		}
		res.Message = m
		if in.Focused != nil {
			if err := tx.focusSeen(*in.Focused, at); err != nil {
				return err
			}
		}
		var linked []string
		for _, r := range in.Turns {
			sid, err := tx.ensureSession(r.Session, at)
			if err != nil {
				return err
			}
			if !slices.Contains(linked, sid) {
				if err := tx.link(sid, m.ID); err != nil {
					return err
				}
				linked = append(linked, sid)
			}
			var after any
			if n := len(res.Turns); n > 0 {
				after = res.Turns[n-1].ID
			}
			id, err := tx.insert(`INSERT INTO turns (session_id, message_id, text, after_turn, created_at)
				VALUES (?, ?, ?, ?, ?)`, sid, m.ID, r.Text, after, at)
			if err != nil {
				return err
			}
			var ahead int
			if err := tx.scanOne(`SELECT COUNT(*) FROM turns WHERE session_id = ? AND status = 'pending' AND id < ?`,
				[]any{sid, id}, &ahead); err != nil {
				return err
			}
			res.Turns = append(res.Turns, sessions.TurnRef{ID: id, SessionID: sid})
			res.Ahead = append(res.Ahead, ahead)
		}
		return nil
	})
	if err != nil {
		return gateway.InboundResult{}, fmt.Errorf("store: append inbound: %w", err)
	}
	return res, nil
}

// message reads one stored message inside a transaction.
func (t *txn) message(id int64) (chat.Message, error) {
	st, err := t.stmt(`SELECT ` + messageColumns + messageFrom + ` WHERE m.id = ?`)
	if err != nil {
		return chat.Message{}, err
	}
	return scanMessage(st.QueryRowContext(t.ctx, id))
}

// BotOfMessage reports which bot wrote the message a platform knows as
// platformMsgID in a group chat, for reply-to addressing. The web knows
// messages by Switchboard's own IDs.
func (s *Store) BotOfMessage(ctx context.Context, platform, chatID, platformMsgID string) (string, bool, error) {
	q := `SELECT m.bot FROM conversations c
		JOIN platform_ids p ON p.conversation_id = c.id JOIN messages m ON m.id = p.message_id
		WHERE c.platform = ? AND c.chat_id = ? AND c.bot = '' AND p.platform_msg_id = ? AND m.from_kind = 'bot'`
	var arg any = platformMsgID
	if platform == gateway.PlatformWeb {
		id, err := strconv.ParseInt(platformMsgID, 10, 64)
		if err != nil {
			return "", false, nil
		}
		q = `SELECT m.bot FROM conversations c JOIN messages m ON m.conversation_id = c.id
			WHERE c.platform = ? AND c.chat_id = ? AND c.bot = '' AND m.id = ? AND m.from_kind = 'bot'`
		arg = id
	}
	var bot string
	err := s.scanOne(ctx, q, []any{platform, chatID, arg}, &bot)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("store: bot of message: %w", err)
	}
	return bot, true, nil
}

// ChatMessages returns a group chat's newest limit chat messages, oldest
// first.
func (s *Store) ChatMessages(ctx context.Context, platform, chatID string, limit int) ([]chat.Message, error) {
	msgs, err := scanMessages(s.query(ctx, `SELECT * FROM (SELECT `+messageColumns+`
		FROM conversations c JOIN messages m ON m.conversation_id = c.id
		WHERE c.platform = ? AND c.chat_id = ? AND c.bot = '' AND m.kind = 'chat'
		ORDER BY m.id DESC LIMIT ?) ORDER BY 1`, platform, chatID, limit))
	if err == nil {
		err = s.withArtifacts(ctx, msgs)
	}
	if err != nil {
		return nil, fmt.Errorf("store: chat messages: %w", err)
	}
	return msgs, nil
}

// ChatHasBot reports whether a bot takes part in a group chat.
func (s *Store) ChatHasBot(ctx context.Context, platform, chatID, bot string) (bool, error) {
	var n int
	err := s.scanOne(ctx, `SELECT COUNT(*) FROM participants p JOIN conversations c ON c.id = p.conversation_id
		WHERE c.platform = ? AND c.chat_id = ? AND c.bot = '' AND p.kind = 'bot' AND p.participant_id = ?`,
		[]any{platform, chatID, bot}, &n)
	if err != nil {
		return false, fmt.Errorf("store: chat has bot: %w", err)
	}
	return n > 0, nil
}
