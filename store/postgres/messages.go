package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
func scanMessage(row pgx.Row) (chat.Message, error) {
	var m chat.Message
	dest, finish := messageDest(&m)
	if err := row.Scan(dest...); err != nil {
		return m, err
	}
	finish()
	return m, nil
}

// messages reads the messages query returns, as rows of messageColumns.
func (t *txn) messages(query string, args ...any) ([]chat.Message, error) {
	out := []chat.Message{}
	err := t.each(query, args, func(rows pgx.Rows) error {
		m, err := scanMessage(rows)
		out = append(out, m)
		return err
	})
	return out, err
}

// message reads one stored message.
func (t *txn) message(id int64) (chat.Message, error) {
	return scanMessage(t.q.QueryRow(t.ctx, `SELECT `+messageColumns+messageFrom+` WHERE m.id = $1`, id))
}

// ensureConversation returns the conversation's ID, creating it if
// absent. A private chat belongs to its bot (on Telegram a person's
// private chats with two bots share the chat ID); a group's bot is "".
func (t *txn) ensureConversation(in chat.Ref, bot, name string, at int64) (int64, error) {
	if in.Type != chat.Private {
		bot = ""
	}
	for range 3 {
		var id int64
		err := t.scanOne(`SELECT id FROM conversations WHERE platform = $1 AND chat_id = $2 AND bot = $3`,
			[]any{in.Platform, in.ID, bot}, &id)
		if !errors.Is(err, pgx.ErrNoRows) {
			return id, err
		}
		err = t.scanOne(`INSERT INTO conversations (platform, chat_id, bot, kind, name, created_at)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (platform, chat_id, bot) DO NOTHING RETURNING id`,
			[]any{in.Platform, in.ID, bot, string(in.Type), name, at}, &id)
		if !errors.Is(err, pgx.ErrNoRows) {
			return id, err
		}
		// Another transaction made it meanwhile: it is there to read now
		// (unless deleted again).
	}
	return 0, errRetry
}

// addParticipant records that a person ("user") or a bot takes part in
// a conversation.
func (t *txn) addParticipant(conv int64, kind, id string, at int64) error {
	_, err := t.exec(`INSERT INTO participants (conversation_id, kind, participant_id, joined_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, conv, kind, id, at)
	return err
}

// messageInsert is the column list of a message's row but its
// conversation, whose values messageArgs gives as $1…$14 in this order:
// platform_msg_id $1, from_id $4, bot $7. A statement that stores a
// message numbers its other parameters from $15.
const messageInsert = `platform_msg_id, kind, from_kind, from_id, from_name, user_id, bot, text,
	mentions, reply_to, created_at, delegation_id, reply_to_id, failed`

const messageValues = `$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14`

// messageArgs are m's values of messageInsert, followed by more.
func messageArgs(m chat.Message, more ...any) []any {
	return append([]any{m.PlatformMsgID, m.Kind, m.From.Kind, m.From.ID, m.From.Name, m.UserID, m.Bot, m.Text,
		strings.Join(m.Mentions, " "), m.ReplyTo, micros(m.Time), m.DelegationID, m.ReplyToID, m.Failed}, more...)
}

// insertMessage stores m in conversation conv (none when 0) and returns
// its ID.
func (t *txn) insertMessage(conv int64, m chat.Message) (int64, error) {
	var convArg any
	if conv != 0 {
		convArg = conv
	}
	var id int64
	err := t.scanOne(`INSERT INTO messages (conversation_id, `+messageInsert+`)
		VALUES ($15, `+messageValues+`) RETURNING id`, messageArgs(m, convArg), &id)
	return id, err
}

// convBot is the bot part of a conversation's key (see
// ensureConversation).
func convBot(in chat.Ref, bot string) string {
	if in.Type != chat.Private {
		return ""
	}
	return bot
}

// storeInbound stores an inbound message m in its chat, when the chat
// is stored already, with its participants (the person, and the bot
// when it has one) and its dedupe key, in one statement. It returns the
// message's ID and whether its key was new, or pgx.ErrNoRows when the
// chat is not stored yet.
func (t *txn) storeInbound(m chat.Message, at int64) (id int64, fresh bool, err error) {
	in := m.Chat()
	err = t.scanOne(`WITH c AS (SELECT id FROM conversations WHERE platform = $15 AND chat_id = $16 AND bot = $17),
		p AS (INSERT INTO participants (conversation_id, kind, participant_id, joined_at)
			SELECT id, 'user', $4::text, $18::bigint FROM c UNION ALL SELECT id, 'bot', $7::text, $18::bigint FROM c WHERE $7 <> ''
			ON CONFLICT DO NOTHING),
		m AS (INSERT INTO messages (conversation_id, `+messageInsert+`)
			SELECT id, `+messageValues+` FROM c RETURNING id),
		k AS (INSERT INTO inbound_keys (platform, bot, chat_id, platform_msg_id, message_id)
			SELECT $15, $7, $16, $1, id FROM m ON CONFLICT DO NOTHING RETURNING message_id)
		SELECT id, EXISTS (SELECT 1 FROM k) FROM m`,
		messageArgs(m, in.Platform, in.ID, convBot(in, m.Bot), at), &id, &fresh)
	return id, fresh, err
}

// queueTurn adds message msg to a session's history when link is set
// and queues a turn for it, after turn after (none when nil), in one
// statement, and returns the turn's ID and how many unanswered turns
// of the session are ahead of it.
func (t *txn) queueTurn(session string, msg int64, link bool, text string, after any, at int64) (id int64, ahead int, err error) {
	// The count's subquery sees the session's turns as they were before
	// this statement: those ahead of the new one (the session's row is
	// locked, so none is queued meanwhile).
	err = t.scanOne(`WITH l AS (INSERT INTO session_messages (session_id, message_id)
			SELECT $1::text, $2::bigint WHERE $6::boolean ON CONFLICT DO NOTHING)
		INSERT INTO turns (session_id, message_id, text, after_turn, created_at)
		VALUES ($1, $2, $3, $4, $5)
		RETURNING id, (SELECT COUNT(*) FROM turns WHERE session_id = $1 AND status = 'pending')`,
		[]any{session, msg, text, after, at, link}, &id, &ahead)
	return id, ahead, err
}

// link adds a stored message to a session's history.
func (t *txn) link(session string, message int64) error {
	_, err := t.exec(`INSERT INTO session_messages (session_id, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, session, message)
	return err
}

// ensureSession returns the session's ID, creating it if absent, and
// holds its row locked until the transaction ends. Every transaction
// that queues a turn in a session holds it so: the session's turns
// commit one transaction after another, in the order of their IDs and
// their messages' IDs, whichever process stores them.
func (t *txn) ensureSession(key sessions.Key, at int64) (string, error) {
	for range 3 {
		var id string
		err := t.scanOne(`SELECT id FROM sessions WHERE bot = $1 AND scope = $2 AND scope_id = $3 FOR NO KEY UPDATE`,
			[]any{key.Bot, key.Scope, key.ScopeID}, &id)
		if !errors.Is(err, pgx.ErrNoRows) {
			return id, err
		}
		// A row this transaction inserts is its own until it commits.
		err = t.scanOne(`INSERT INTO sessions (id, bot, scope, scope_id, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (bot, scope, scope_id) DO NOTHING RETURNING id`,
			[]any{uuid.NewString(), key.Bot, key.Scope, key.ScopeID, at}, &id)
		if !errors.Is(err, pgx.ErrNoRows) {
			return id, err
		}
	}
	return "", errRetry
}

// lockSessions ensures the sessions of keys, locked, in one order (by
// key), so that two transactions locking some of the same sessions never
// wait for each other in a circle. It returns each key's session ID.
func (t *txn) lockSessions(keys []sessions.Key, at int64) (map[sessions.Key]string, error) {
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, func(a, b sessions.Key) int {
		return cmp.Or(strings.Compare(a.Bot, b.Bot), strings.Compare(string(a.Scope), string(b.Scope)), strings.Compare(a.ScopeID, b.ScopeID))
	})
	ids := map[sessions.Key]string{}
	for _, k := range sorted {
		if _, ok := ids[k]; ok {
			continue
		}
		id, err := t.ensureSession(k, at)
		if err != nil {
			return nil, err
		}
		ids[k] = id
	}
	return ids, nil
}

// AppendInbound stores an inbound message with its chat, its dedupe key,
// its sessions' links and the turns it asks for, in one transaction. A
// message whose (platform, bot, chat, platform message ID) was stored
// before, by this process or another, is not stored again: the result
// then says Duplicate and holds the original.
func (s *Store) AppendInbound(ctx context.Context, in gateway.Inbound) (gateway.InboundResult, error) {
	var res gateway.InboundResult
	err := s.run(ctx, intake, pgx.TxOptions{}, func(tx *txn) error {
		res = gateway.InboundResult{}
		m := in.Message
		at := micros(m.Time)
		var first int64
		err := tx.scanOne(`SELECT message_id FROM inbound_keys
			WHERE platform = $1 AND bot = $2 AND chat_id = $3 AND platform_msg_id = $4`,
			[]any{m.Platform, m.Bot, m.ChatID, m.PlatformMsgID}, &first)
		if err == nil {
			res.Duplicate = true
			res.Message, err = tx.message(first)
			return err
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		// The sessions first: their locks order this message's turns
		// among the sessions' others.
		keys := make([]sessions.Key, len(in.Turns))
		for i, r := range in.Turns {
			keys[i] = r.Session
		}
		sids, err := tx.lockSessions(keys, at)
		if err != nil {
			return err
		}
		// The message with its chat's participants and its dedupe key in
		// one statement; a chat's first message makes the chat first.
		var fresh bool
		m.ID, fresh, err = tx.storeInbound(m, at)
		if errors.Is(err, pgx.ErrNoRows) {
			if _, err = tx.ensureConversation(m.Chat(), m.Bot, in.ChatName, at); err != nil {
				return err
			}
			m.ID, fresh, err = tx.storeInbound(m, at)
		}
		if err != nil {
			return err
		}
		if !fresh {
			// Stored meanwhile by another transaction, now committed:
			// the next run finds it.
			return errRetry
		}
		res.Message = m
		if in.Focused != nil {
			if err := tx.focusSeen(*in.Focused, at); err != nil {
				return err
			}
		}
		var linked []string
		for _, r := range in.Turns {
			sid := sids[r.Session]
			link := !slices.Contains(linked, sid)
			if link {
				linked = append(linked, sid)
			}
			var after any
			if n := len(res.Turns); n > 0 {
				after = res.Turns[n-1].ID
			}
			id, ahead, err := tx.queueTurn(sid, m.ID, link, r.Text, after, at)
			if err != nil {
				return err
			}
			res.Turns = append(res.Turns, sessions.TurnRef{ID: id, SessionID: sid})
			res.Ahead = append(res.Ahead, ahead)
		}
		return nil
	})
	var ce *commitError
	if errors.As(err, &ce) {
		s.unsure.put(inboundKey(in), res)
	}
	if err != nil {
		return gateway.InboundResult{}, fmt.Errorf("store: append inbound: %w", err)
	}
	if res.Duplicate {
		// Stored by this process, when its commit's answer was lost
		// (unsure.go): the caller has not learnt of its turns yet.
		if r, ok := s.unsure.take(inboundKey(in)); ok && r.(gateway.InboundResult).Message.ID == res.Message.ID {
			return r.(gateway.InboundResult), nil
		}
	}
	return res, nil
}

// BotOfMessage reports which bot wrote the message a platform knows as
// platformMsgID in a group chat, for reply-to addressing. The web knows
// messages by Switchboard's own IDs.
func (s *Store) BotOfMessage(ctx context.Context, platform, chatID, platformMsgID string) (string, bool, error) {
	q := `SELECT m.bot FROM conversations c
		JOIN platform_ids p ON p.conversation_id = c.id JOIN messages m ON m.id = p.message_id
		WHERE c.platform = $1 AND c.chat_id = $2 AND c.bot = '' AND p.platform_msg_id = $3 AND m.from_kind = 'bot'`
	var arg any = platformMsgID
	if platform == gateway.PlatformWeb {
		id, err := strconv.ParseInt(platformMsgID, 10, 64)
		if err != nil {
			return "", false, nil
		}
		q = `SELECT m.bot FROM conversations c JOIN messages m ON m.conversation_id = c.id
			WHERE c.platform = $1 AND c.chat_id = $2 AND c.bot = '' AND m.id = $3 AND m.from_kind = 'bot'`
		arg = id
	}
	var bot string
	err := s.pooled(ctx).scanOne(q, []any{platform, chatID, arg}, &bot)
	if errors.Is(err, pgx.ErrNoRows) {
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
	var msgs []chat.Message
	err := s.read(ctx, func(t *txn) (err error) {
		msgs, err = t.messages(`SELECT * FROM (SELECT `+messageColumns+`
			FROM conversations c JOIN messages m ON m.conversation_id = c.id
			WHERE c.platform = $1 AND c.chat_id = $2 AND c.bot = '' AND m.kind = 'chat'
			ORDER BY m.id DESC LIMIT $3) newest ORDER BY 1`, platform, chatID, limit)
		if err == nil {
			err = t.withArtifacts(msgs)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: chat messages: %w", err)
	}
	return msgs, nil
}

// ChatHasBot reports whether a bot takes part in a group chat.
func (s *Store) ChatHasBot(ctx context.Context, platform, chatID, bot string) (bool, error) {
	var in bool
	err := s.pooled(ctx).scanOne(`SELECT EXISTS (SELECT 1 FROM participants p JOIN conversations c ON c.id = p.conversation_id
		WHERE c.platform = $1 AND c.chat_id = $2 AND c.bot = '' AND p.kind = 'bot' AND p.participant_id = $3)`,
		[]any{platform, chatID, bot}, &in)
	if err != nil {
		return false, fmt.Errorf("store: chat has bot: %w", err)
	}
	return in, nil
}
