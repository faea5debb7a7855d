package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/sessions"
)

// post stores a message a turn says, in its chat and session, and queues
// it in the outbox.
func (t *txn) post(p sessions.Post, now int64) (outbox.Entry, error) {
	m := p.Message
	var outboxID int64
	err := t.storePost(p, now, &m.ID, &outboxID)
	if errors.Is(err, pgx.ErrNoRows) {
		// The chat's first message: the chat first.
		if _, err = t.ensureConversation(m.Chat(), m.Bot, "", now); err != nil {
			return outbox.Entry{}, err
		}
		err = t.storePost(p, now, &m.ID, &outboxID)
	}
	if err != nil {
		return outbox.Entry{}, err
	}
	e := entryOf(m)
	e.OutboxID = outboxID
	if m.DelegationID != "" {
		d, err := t.delegationRecord(m.DelegationID)
		if err != nil {
			return outbox.Entry{}, err
		}
		e.Delegation = d.Ref()
	}
	return e, nil
}

// storePost stores p's message in its chat, when the chat is stored
// already, with the bot as a participant, in p's session's history, and
// queues it in the outbox, in one statement. No row (pgx.ErrNoRows) says
// the chat is not stored yet.
func (t *txn) storePost(p sessions.Post, now int64, msgID, outboxID *int64) error {
	m := p.Message
	in := m.Chat()
	return t.scanOne(`WITH c AS (SELECT id FROM conversations WHERE platform = $15 AND chat_id = $16 AND bot = $17),
		p AS (INSERT INTO participants (conversation_id, kind, participant_id, joined_at)
			SELECT id, 'bot', $7::text, $18::bigint FROM c ON CONFLICT DO NOTHING),
		m AS (INSERT INTO messages (conversation_id, `+messageInsert+`)
			SELECT id, `+messageValues+` FROM c RETURNING id),
		l AS (INSERT INTO session_messages (session_id, message_id)
			SELECT $19::text, id FROM m WHERE $19 <> '' ON CONFLICT DO NOTHING)
		INSERT INTO outbox (message_id, platform, bot, chat_id, created_at, updated_at)
		SELECT id, $15, $7, $16, $18, $18 FROM m RETURNING message_id, id`,
		messageArgs(m, in.Platform, in.ID, convBot(in, m.Bot), now, p.Session), msgID, outboxID)
}

// entryOf is the outbox entry of a stored message.
func entryOf(m chat.Message) outbox.Entry {
	return outbox.Entry{
		MessageID: m.ID, Platform: m.Platform, Bot: m.Bot, ChatID: m.ChatID, ChatType: m.ChatType,
		From: m.From, Text: m.Text, ReplyTo: m.ReplyTo, Time: m.Time, ReplyToID: m.ReplyToID, Failed: m.Failed,
	}
}

// OutboxPending counts the replies stored and not yet delivered or given
// up.
func (s *Store) OutboxPending(ctx context.Context) (int, error) {
	var n int
	if err := s.pooled(ctx).scanOne(`SELECT COUNT(*) FROM outbox WHERE status = 'pending'`, nil, &n); err != nil {
		return 0, fmt.Errorf("store: outbox pending: %w", err)
	}
	return n, nil
}

// PendingOutbox implements outbox.Store: the undelivered entries this
// process is to deliver, in the order of their messages. They are its
// own and those stored by processes that died (or by none, such as a
// copy's), which it takes over.
func (s *Store) PendingOutbox(ctx context.Context) ([]outbox.Entry, error) {
	if _, err := s.takeOverOutbox(ctx); err != nil {
		return nil, fmt.Errorf("store: pending outbox: %w", err)
	}
	out, err := s.entries(ctx, `o.status = 'pending' AND o.owner = $1`, s.instance)
	if err != nil {
		return nil, fmt.Errorf("store: pending outbox: %w", err)
	}
	return out, nil
}

// OrphanedOutbox takes over the undelivered entries of processes that
// died since, and returns them in the order of their messages: unlike
// PendingOutbox it never returns what this process had already.
func (s *Store) OrphanedOutbox(ctx context.Context) ([]outbox.Entry, error) {
	ids, err := s.takeOverOutbox(ctx)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	out, err := s.entries(ctx, `o.id = ANY($1) AND o.status = 'pending'`, ids)
	if err != nil {
		return nil, fmt.Errorf("store: orphaned outbox: %w", err)
	}
	return out, nil
}

// takeOverOutbox makes this process the owner of the undelivered entries
// of processes that died (or of none), and returns their IDs.
func (s *Store) takeOverOutbox(ctx context.Context) ([]int64, error) {
	var ids []int64
	err := s.pooled(ctx).each(`WITH live AS (SELECT id FROM instances WHERE switchboard_alive(id) AND id != $1)
		UPDATE outbox SET owner = $1 WHERE status = 'pending' AND owner IS DISTINCT FROM $1
			AND (owner IS NULL OR owner NOT IN (SELECT id FROM live))
		RETURNING id`, []any{s.instance}, func(rows pgx.Rows) error {
		var id int64
		err := rows.Scan(&id)
		ids = append(ids, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: take over outbox: %w", err)
	}
	return ids, nil
}

// OutboxEntries returns the outbox entries with the given IDs, whatever
// their status, in the order of their messages: another process stored
// them and this one's connections may have to show them.
func (s *Store) OutboxEntries(ctx context.Context, ids []int64) ([]outbox.Entry, error) {
	out, err := s.entries(ctx, `o.id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("store: outbox entries: %w", err)
	}
	return out, nil
}

// PendingEntries returns the undelivered entries of some chats of a
// platform that other processes stored, in the order of their messages:
// a person who connects to this process gets what another one could not
// deliver. (This process's own are in its lanes.)
func (s *Store) PendingEntries(ctx context.Context, platform string, chatIDs []string) ([]outbox.Entry, error) {
	out, err := s.entries(ctx, `o.status = 'pending' AND o.platform = $1 AND o.chat_id = ANY($2) AND o.owner IS DISTINCT FROM $3`,
		platform, chatIDs, s.instance)
	if err != nil {
		return nil, fmt.Errorf("store: pending entries: %w", err)
	}
	return out, nil
}

// entries reads the outbox entries matching where (a condition on o, the
// outbox, with args), with their messages, hand-offs and artifacts, from
// one snapshot, in the order of their messages.
func (s *Store) entries(ctx context.Context, where string, args ...any) ([]outbox.Entry, error) {
	var out []outbox.Entry
	err := s.read(ctx, func(t *txn) error {
		out = nil
		var delegations []string // the delegation of each entry's message
		err := t.each(`SELECT o.id, o.attempts, o.parts_sent, `+messageColumns+`
			FROM outbox o JOIN messages m ON m.id = o.message_id LEFT JOIN conversations c ON c.id = m.conversation_id
			WHERE `+where+` ORDER BY o.message_id, o.id`, args, func(rows pgx.Rows) error {
			var m chat.Message
			var id int64
			var attempt, partsSent int
			dest, finish := messageDest(&m)
			if err := rows.Scan(append([]any{&id, &attempt, &partsSent}, dest...)...); err != nil {
				return err
			}
			finish()
			e := entryOf(m)
			e.OutboxID, e.Attempt, e.PartsSent = id, attempt, partsSent
			out = append(out, e)
			delegations = append(delegations, m.DelegationID)
			return nil
		})
		if err != nil {
			return err
		}
		for i, id := range delegations {
			if id == "" {
				continue
			}
			d, err := t.delegationRecord(id)
			if err != nil {
				return fmt.Errorf("delegation %s: %w", id, err)
			}
			out[i].Delegation = d.Ref()
		}
		ids := make([]int64, len(out))
		for i, e := range out {
			ids[i] = e.MessageID
		}
		shown, err := t.artifactsShown(ids)
		if err != nil {
			return err
		}
		for i := range out {
			out[i].Artifacts = shown[out[i].MessageID]
		}
		return nil
	})
	return out, err
}

// MarkSent implements outbox.Store. A platform's message ID is kept,
// with every part's, so that a reply to it can be traced to its bot.
func (s *Store) MarkSent(ctx context.Context, outboxID int64, platformMsgID string) error {
	return s.mark(ctx, "mark sent", outboxID, platformMsgID,
		`UPDATE outbox SET status = 'sent', platform_msg_id = $1, updated_at = $2 WHERE id = $3`, platformMsgID)
}

// MarkPart implements outbox.Store.
func (s *Store) MarkPart(ctx context.Context, outboxID int64, n int, platformMsgID string) error {
	return s.mark(ctx, "mark part", outboxID, platformMsgID,
		`UPDATE outbox SET parts_sent = $1, updated_at = $2 WHERE id = $3`, n)
}

// MarkAttempt implements outbox.Store.
func (s *Store) MarkAttempt(ctx context.Context, outboxID int64, reason string) error {
	return s.mark(ctx, "mark attempt", outboxID, "",
		`UPDATE outbox SET attempts = attempts + 1, last_error = $1, updated_at = $2 WHERE id = $3`, reason)
}

// MarkFailed implements outbox.Store. An entry another process delivered
// meanwhile stays delivered.
func (s *Store) MarkFailed(ctx context.Context, outboxID int64, reason string) error {
	return s.mark(ctx, "mark failed", outboxID, "",
		`UPDATE outbox SET status = 'failed', attempts = attempts + 1, last_error = $1, updated_at = $2
			WHERE id = $3 AND status = 'pending'`, reason)
}

// mark runs update (whose parameters are value, the time and the entry's
// ID) on an outbox entry and maps platformMsgID, when set, to the
// entry's message.
// It is one statement, so one round trip.
func (s *Store) mark(ctx context.Context, what string, outboxID int64, platformMsgID, update string, value any) error {
	query, args := update, []any{value, micros(timeNow()), outboxID}
	if platformMsgID != "" {
		query = `WITH o AS (` + update + ` RETURNING message_id)
			INSERT INTO platform_ids (conversation_id, platform_msg_id, message_id)
			SELECT m.conversation_id, $4, m.id FROM o JOIN messages m ON m.id = o.message_id
			WHERE m.conversation_id IS NOT NULL
			ON CONFLICT DO NOTHING`
		args = append(args, platformMsgID)
	}
	var err error
	for try := 0; try < maxTries; try++ {
		if _, err = s.pooled(ctx).exec(query, args...); !retryable(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("store: %s %d: %w", what, outboxID, err)
	}
	return nil
}
