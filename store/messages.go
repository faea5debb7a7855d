package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/gateway"
)

// messageColumns is the select list scanned by scanMessage; queries join
// messages m with conversations c (left join: session-only messages have
// no conversation).
const messageColumns = `m.id, COALESCE(c.platform, ''), COALESCE(c.chat_id, ''), COALESCE(c.kind, ''),
	m.platform_msg_id, m.kind, m.from_kind, m.from_id, m.from_name, m.user_id, m.bot, m.text,
	m.mentions, m.reply_to, m.created_at, m.delegation_id`

type scanner interface{ Scan(...any) error }

func scanMessage(row scanner) (gateway.Message, error) {
	var m gateway.Message
	var chatType, mentions string
	var at int64
	err := row.Scan(&m.ID, &m.Platform, &m.ChatID, &chatType, &m.PlatformMsgID, &m.Kind,
		&m.From.Kind, &m.From.ID, &m.From.Name, &m.UserID, &m.Bot, &m.Text, &mentions, &m.ReplyTo, &at, &m.DelegationID)
	if err != nil {
		return m, err
	}
	m.ChatType = gateway.ChatType(chatType)
	if mentions != "" {
		m.Mentions = strings.Split(mentions, " ")
	}
	m.Time = fromMicros(at)
	return m, nil
}

// queryMessages reads rows of messageColumns and exchangeColumns, oldest
// first, and returns their last limit messages (an exchange's row is two),
// all of them if limit is negative (as SQL's LIMIT).
func queryMessages(ctx context.Context, s *SQLite, limit int, query string, args ...any) ([]gateway.Message, error) {
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []gateway.Message
	for rows.Next() {
		m, r, err := scanRow(rows)
		if err != nil {
			return nil, err
		}
		out = r.appendParts(out, m)
	}
	if limit >= 0 {
		out = out[max(0, len(out)-limit):]
	}
	return out, rows.Err()
}

// loadMessage reads the message id names: for an exchange's row, its
// person's message (a dedupe key names the row).
func loadMessage(ctx context.Context, tx *txn, id int64) (gateway.Message, error) {
	m, r, err := scanRow(tx.QueryRowContext(ctx, `SELECT `+messageColumns+`, `+exchangeColumns+`
		FROM messages m LEFT JOIN conversations c ON c.id = m.conversation_id WHERE m.id = ?`, id))
	if r.at.Valid {
		m.ID--
	}
	return m, err
}

// ensureConversation returns the conversation's ID, creating it if absent.
// bot names the bot of a private chat; it is ignored for groups.
func ensureConversation(ctx context.Context, tx *txn, platform, chatID, bot string, kind gateway.ChatType, name string, at int64) (id int64, created bool, err error) {
	if kind != gateway.ChatPrivate {
		bot = ""
	}
	key := convKey{platform, chatID, bot}
	if id, ok := tx.s.ids.convs[key]; ok {
		return id, false, nil
	}
	defer func() {
		if err == nil {
			tx.onStored(func() { tx.s.ids.convs[key] = id })
		}
	}()
	err = tx.QueryRowContext(ctx, `SELECT id FROM conversations WHERE platform = ? AND chat_id = ? AND bot = ?`, platform, chatID, bot).Scan(&id)
	if !errors.Is(err, sql.ErrNoRows) {
		return id, false, err
	}
	id, err = insertID(tx, `INSERT INTO conversations (platform, chat_id, bot, kind, name, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`, platform, chatID, bot, string(kind), name, at)
	return id, err == nil, err
}

func addParticipant(ctx context.Context, tx *txn, conv int64, kind, id string, at int64) error {
	key := memberKey{conv, kind, id}
	if _, ok := tx.s.ids.members[key]; ok {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO participants (conversation_id, kind, participant_id, joined_at)
		VALUES (?, ?, ?, ?)`, conv, kind, id, at)
	if err == nil {
		tx.onStored(func() { tx.s.ids.members[key] = struct{}{} })
	}
	return err
}

// insertMessage stores m (in conversation conv, or none when conv is 0)
// and returns its ID; sessions are the sessions whose history it joins
// (see sessionList and linkMessage). A group's messages are marked
// in_group, which puts them in the index of groups' messages (see
// ChatMessages).
func insertMessage(ctx context.Context, tx *txn, conv int64, m gateway.Message, sessions string) (int64, error) {
	var convArg any
	inGroup := false
	if conv != 0 {
		convArg = conv
		inGroup = m.ChatType != gateway.ChatPrivate // as ensureConversation decides
	}
	id, err := insertID(tx, `INSERT INTO messages (conversation_id, platform_msg_id, kind, from_kind,
		from_id, from_name, user_id, bot, text, mentions, reply_to, created_at, delegation_id, in_group, sessions)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		convArg, m.PlatformMsgID, m.Kind, m.From.Kind, m.From.ID, m.From.Name, m.UserID, m.Bot, m.Text,
		strings.Join(m.Mentions, " "), m.ReplyTo, micros(m.Time), m.DelegationID, inGroup, sessions)
	if err == nil {
		tx.s.lastID = max(tx.s.lastID, id)
	}
	return id, err
}

// insertID runs an INSERT and returns the new row's ID. (RETURNING would
// do, at the cost of a temporary table per statement.)
func insertID(tx *txn, q string, args ...any) (int64, error) {
	res, err := tx.c.exec(q, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// ensureSession returns the session's ID, creating it if absent.
// A session known to exist is not touched here: its updated_at moves when
// a turn completes.
func ensureSession(ctx context.Context, tx *txn, key gateway.SessionKey, at int64) (string, error) {
	if id, ok := tx.s.ids.sessions[key]; ok {
		return id, nil
	}
	// An insert that may find the session there already, then a read:
	// RETURNING would build a temporary table per statement.
	fresh := uuid.NewString()
	_, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, bot, scope, scope_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (bot, scope, scope_id) DO UPDATE SET updated_at = excluded.updated_at`,
		fresh, key.Bot, key.Scope, key.ScopeID, at, at)
	if err != nil {
		return "", err
	}
	var id string
	err = tx.QueryRowContext(ctx, `SELECT id FROM sessions WHERE bot = ? AND scope = ? AND scope_id = ?`,
		key.Bot, key.Scope, key.ScopeID).Scan(&id)
	if err != nil {
		return "", err
	}
	tx.onStored(func() { tx.s.ids.sessions[key] = id })
	if id == fresh {
		// Created by this write: its window is known without a read,
		// empty and complete (the messages this write links to it are
		// appended by their own callbacks, which run after this one).
		w := &window{id: id, complete: true, session: gateway.Session{
			ID: id, Key: key, CreatedAt: fromMicros(at), UpdatedAt: fromMicros(at),
		}}
		tx.onStored(func() { tx.s.recent.install(w) })
	}
	return id, nil
}

// AppendInbound implements gateway.Store.
func (s *SQLite) AppendInbound(ctx context.Context, in gateway.Inbound) (gateway.InboundResult, error) {
	var res gateway.InboundResult
	err := s.txIntake(ctx, func(tx *txn) error {
		res = gateway.InboundResult{}
		return s.appendInbound(ctx, tx, in, &res, 0, nil)
	})
	if err != nil {
		return gateway.InboundResult{}, fmt.Errorf("store: append inbound: %w", err)
	}
	return res, nil
}

// appendInbound is AppendInbound inside tx. With doneAt set, its turns
// are stored already done at doneAt (AppendAnswered completes them in
// the same transaction), so none of them is pending at any moment, and
// the result its callback gets names none (there is nothing to queue).
// With reply set too (exchangePost), the message and its reply are
// stored as an exchange's row (exchanges.go), and its one turn leaves no
// row: the result's turn has no ID.
func (s *SQLite) appendInbound(ctx context.Context, tx *txn, in gateway.Inbound, res *gateway.InboundResult, doneAt int64, reply *gateway.Message) error {
	ev := in.Event
	at := micros(ev.Time)
	conv, _, err := ensureConversation(ctx, tx, ev.Platform, ev.ChatID, ev.Bot, ev.ChatType, ev.ChatName, at)
	if err != nil {
		return err
	}
	if err := addParticipant(ctx, tx, conv, "user", ev.Sender.PlatformID, at); err != nil {
		return err
	}
	if ev.Bot != "" {
		if err := addParticipant(ctx, tx, conv, "bot", ev.Bot, at); err != nil {
			return err
		}
	}
	m := gateway.Message{
		Platform: ev.Platform, ChatID: ev.ChatID, ChatType: ev.ChatType,
		PlatformMsgID: ev.MessageID, Kind: gateway.KindChat,
		From:   gateway.Party{Kind: "human", ID: ev.Sender.PlatformID, Name: in.UserName},
		UserID: in.UserID, Bot: ev.Bot, Text: ev.Text, ReplyTo: ev.ReplyTo, Time: ev.Time,
	}
	if ev.Sender.IsBot {
		m.From.Kind = "bot"
	}
	for _, mn := range ev.Mentions {
		name := mn.Bot
		if name == "" {
			name = mn.Name
		}
		m.Mentions = append(m.Mentions, name)
	}
	// The dedupe key is looked up before the message is written. (Taking
	// a duplicate's message back afterwards would cost more than the
	// lookup: deleting a message makes SQLite scan every table that
	// refers to messages, none of which is indexed by message.) A key
	// not yet written waits in the link log (links.go).
	key := inboundKey{ev.Platform, ev.Bot, ev.ChatID, ev.MessageID}
	// A key the filter has never seen is new without a lookup
	// (keyfilter.go).
	first, pending := tx.pendingKey(key)
	switch {
	case pending:
	case !tx.s.keys.mayHave(key):
		err = sql.ErrNoRows
	default:
		err = tx.QueryRowContext(ctx, `SELECT message_id FROM inbound_keys
				WHERE platform = ? AND bot = ? AND chat_id = ? AND platform_msg_id = ?`,
			ev.Platform, ev.Bot, ev.ChatID, ev.MessageID).Scan(&first)
	}
	if pending || err == nil {
		return duplicate(ctx, tx, res, in, first)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	sids := make([]string, len(in.Turns))
	for i, t := range in.Turns {
		if sids[i], err = ensureSession(ctx, tx, t.Session, at); err != nil {
			return err
		}
	}
	if reply != nil {
		if err := s.appendExchange(tx, conv, m, *reply, sids[0], key, res); err != nil {
			return err
		}
	} else if err := s.appendMessage(ctx, tx, in, conv, m, sids, key, res, doneAt); err != nil {
		return err
	}
	if onStored := in.OnStored; onStored != nil {
		stored := *res
		if doneAt != 0 {
			stored.Turns = nil
		}
		tx.onStored(func() { onStored(stored) })
	}
	return nil
}

// appendMessage is appendInbound's end for a message stored as its own
// row: the row, its dedupe key, its session links and its turns.
func (s *SQLite) appendMessage(ctx context.Context, tx *txn, in gateway.Inbound, conv int64, m gateway.Message, sids []string, key inboundKey, res *gateway.InboundResult, doneAt int64) error {
	var err error
	if m.ID, err = insertMessage(ctx, tx, conv, m, sessionList(sids...)); err != nil {
		return err
	}
	keyMessage(tx, key, m.ID)
	res.Message = m
	at := micros(m.Time)
	for i, t := range in.Turns {
		sid := sids[i]
		if !slices.Contains(sids[:i], sid) {
			linkMessage(tx, sid, &m)
		}
		ref := gateway.TurnRef{SessionID: sid}
		var after any
		if n := len(res.Turns); n > 0 {
			ref.After = res.Turns[n-1].ID
			after = ref.After
		}
		status, done := "pending", any(nil)
		if doneAt != 0 {
			status, done = "done", doneAt
		}
		if ref.ID, err = insertID(tx, `INSERT INTO turns (session_id, message_id, text, after_turn, created_at, status, done_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, sid, m.ID, t.Text, after, at, status, done); err != nil {
			return err
		}
		res.Turns = append(res.Turns, ref)
		if doneAt == 0 {
			cached := cachedTurn{ref: ref, message: m, text: t.Text}
			tx.onStored(func() { s.recent.addTurn(cached) })
		}
	}
	return nil
}

// duplicate answers AppendInbound for a message stored before, first.
func duplicate(ctx context.Context, tx *txn, res *gateway.InboundResult, in gateway.Inbound, first int64) error {
	m, err := loadMessage(ctx, tx, first)
	if err != nil {
		return err
	}
	*res = gateway.InboundResult{Duplicate: true, Message: m}
	if onStored := in.OnStored; onStored != nil {
		stored := *res
		tx.onStored(func() { onStored(stored) })
	}
	return nil
}

// BotOfMessage implements gateway.Store.
func (s *SQLite) BotOfMessage(ctx context.Context, platform, chatID, platformMsgID string) (string, bool, error) {
	var bot string
	q := `SELECT m.bot FROM conversations c
		JOIN platform_ids p ON p.conversation_id = c.id JOIN messages m ON m.id = p.message_id
		WHERE c.platform = ? AND c.chat_id = ? AND c.bot = '' AND p.platform_msg_id = ? AND m.from_kind = 'bot'`
	var arg any = platformMsgID
	if platform == gateway.PlatformWeb {
		// The web names messages by Switchboard's own IDs.
		id, err := strconv.ParseInt(platformMsgID, 10, 64)
		if err != nil {
			return "", false, nil
		}
		q = `SELECT m.bot FROM conversations c JOIN messages m ON m.conversation_id = c.id
			WHERE c.platform = ? AND c.chat_id = ? AND c.bot = '' AND m.id = ? AND m.from_kind = 'bot'`
		arg = id
	}
	err := s.queryRow(ctx, q, platform, chatID, arg).Scan(&bot)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("store: bot of message: %w", err)
	}
	return bot, true, nil
}

const lastPrivateChatQuery = `SELECT c.platform, c.chat_id
	FROM session_messages sm JOIN messages m ON m.id = sm.message_id
	JOIN conversations c ON c.id = m.conversation_id
	WHERE sm.session_id = ? AND m.from_kind = 'human' AND c.kind = 'private'
	ORDER BY sm.message_id DESC LIMIT 1`

// LastPrivateChat implements gateway.Store.
func (s *SQLite) LastPrivateChat(ctx context.Context, sessionID string) (gateway.ChatRef, bool, error) {
	if c, found, ok := s.recent.lastPrivate(sessionID); ok {
		return c, found, nil
	}
	var c gateway.ChatRef
	if err := s.linkedSession(ctx, sessionID); err != nil {
		return c, false, err
	}
	err := s.queryRow(ctx, lastPrivateChatQuery, sessionID).Scan(&c.Platform, &c.ChatID)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("store: last private chat: %w", err)
	}
	c.Type = gateway.ChatPrivate
	return c, true, nil
}

// FindSession implements gateway.Store.
func (s *SQLite) FindSession(ctx context.Context, key gateway.SessionKey) (gateway.Session, bool, error) {
	row := s.queryRow(ctx, `SELECT `+sessionColumns+`
		FROM sessions WHERE bot = ? AND scope = ? AND scope_id = ?`, key.Bot, key.Scope, key.ScopeID)
	sess, err := scanSession(row)
	if errors.Is(err, sql.ErrNoRows) {
		return gateway.Session{}, false, nil
	}
	if err != nil {
		return gateway.Session{}, false, fmt.Errorf("store: find session: %w", err)
	}
	return sess, true, nil
}

// ListSessions implements gateway.Store.
func (s *SQLite) ListSessions(ctx context.Context, f gateway.SessionFilter) ([]gateway.Session, error) {
	q := `SELECT ` + sessionColumns + ` FROM sessions WHERE 1 = 1`
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
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list sessions: %w", err)
	}
	defer rows.Close()
	out := []gateway.Session{}
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list sessions: %w", err)
		}
		out = append(out, sess)
	}
	return out, rows.Err()
}

// GetSession implements gateway.Store.
func (s *SQLite) GetSession(ctx context.Context, id string) (gateway.Session, error) {
	sess, err := scanSession(s.queryRow(ctx, `SELECT `+sessionColumns+`
		FROM sessions WHERE id = ?`, id))
	if err != nil {
		return sess, fmt.Errorf("store: get session: %w", notFound(err))
	}
	return sess, nil
}

// sessionColumns is the select list of sessions scanSession reads.
const sessionColumns = `id, bot, scope, scope_id, resume_id, created_at, updated_at`

func scanSession(row scanner) (gateway.Session, error) {
	var s gateway.Session
	var created, updated int64
	err := row.Scan(&s.ID, &s.Key.Bot, &s.Key.Scope, &s.Key.ScopeID, &s.ResumeID, &created, &updated)
	s.CreatedAt, s.UpdatedAt = fromMicros(created), fromMicros(updated)
	return s, err
}

// SessionMessages implements gateway.Store.
func (s *SQLite) SessionMessages(ctx context.Context, sessionID string, limit int) ([]gateway.Message, error) {
	if err := s.linkedSession(ctx, sessionID); err != nil {
		return nil, err
	}
	msgs, err := queryMessages(ctx, s, limit, `SELECT * FROM (SELECT `+messageColumns+`, `+exchangeColumns+`
		FROM session_messages sm JOIN messages m ON m.id = sm.message_id
		LEFT JOIN conversations c ON c.id = m.conversation_id
		WHERE sm.session_id = ? AND m.kind = 'chat' ORDER BY sm.message_id DESC LIMIT ?) ORDER BY 1`, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: session messages: %w", err)
	}
	return msgs, nil
}

// ChatMessages implements gateway.Store. Only groups' messages are indexed
// by chat; a private chat's history is read through its session.
func (s *SQLite) ChatMessages(ctx context.Context, platform, chatID string, limit int) ([]gateway.Message, error) {
	msgs, err := queryMessages(ctx, s, limit, `SELECT * FROM (SELECT `+messageColumns+`, `+exchangeColumns+`
		FROM conversations c JOIN messages m ON m.conversation_id = c.id AND m.in_group = 1
		WHERE c.platform = ? AND c.chat_id = ? AND c.bot = '' AND m.kind = 'chat' ORDER BY m.id DESC LIMIT ?) ORDER BY 1`,
		platform, chatID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: chat messages: %w", err)
	}
	return msgs, nil
}

// EnsureRoom implements gateway.Store.
func (s *SQLite) EnsureRoom(ctx context.Context, platform, chatID, member string, bots []string) ([]string, error) {
	var out []string
	err := s.tx(ctx, func(tx *txn) error {
		out = nil
		at := micros(timeNow())
		conv, created, err := ensureConversation(ctx, tx, platform, chatID, "", gateway.ChatGroup, chatID, at)
		if err != nil {
			return err
		}
		if created {
			for _, b := range bots {
				if err := addParticipant(ctx, tx, conv, "bot", b, at); err != nil {
					return err
				}
			}
		}
		if err := addParticipant(ctx, tx, conv, "user", member, at); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT participant_id FROM participants
			WHERE conversation_id = ? AND kind = 'bot' ORDER BY joined_at, rowid`, conv)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			out = append(out, id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: ensure room: %w", err)
	}
	return out, nil
}
