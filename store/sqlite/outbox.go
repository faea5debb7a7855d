package sqlite

import (
	"context"
	"fmt"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/sessions"
)

// post stores a message a turn says, in its chat and session, and queues
// it in the outbox.
func (t *txn) post(p sessions.Post, now int64) (outbox.Entry, error) {
	m := p.Message
	conv, _, err := t.ensureConversation(m.Chat(), m.Bot, "", now)
	if err != nil {
		return outbox.Entry{}, err
	}
	if err := t.addParticipant(conv, "bot", m.Bot, now); err != nil {
		return outbox.Entry{}, err
	}
	if m.ID, err = t.insertMessage(conv, m); err != nil {
		return outbox.Entry{}, err
	}
	if p.Session != "" {
		if err := t.link(p.Session, m.ID); err != nil {
			return outbox.Entry{}, err
		}
	}
	e := entryOf(m)
	if e.OutboxID, err = t.insert(`INSERT INTO outbox (message_id, platform, bot, chat_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)`, m.ID, m.Platform, m.Bot, m.ChatID, now, now); err != nil {
		return outbox.Entry{}, err
	}
	if m.DelegationID != "" {
		d, err := t.delegationRecord(m.DelegationID)
		if err != nil {
			return outbox.Entry{}, err
		}
		e.Delegation = d.Ref()
	}
	return e, nil
}

// entryOf is the outbox entry of a stored message.
func entryOf(m chat.Message) outbox.Entry {
	return outbox.Entry{
		MessageID: m.ID, Platform: m.Platform, Bot: m.Bot, ChatID: m.ChatID, ChatType: m.ChatType,
		From: m.From, Text: m.Text, ReplyTo: m.ReplyTo, Time: m.Time, ReplyToID: m.ReplyToID, Failed: m.Failed,
	}
}

// PendingOutbox implements outbox.Store. Entries are listed in the
// order of their messages.
func (s *Store) PendingOutbox(ctx context.Context) ([]outbox.Entry, error) {
	rows, err := s.query(ctx, `SELECT o.id, o.attempts, o.parts_sent, `+messageColumns+`
		FROM outbox o JOIN messages m ON m.id = o.message_id LEFT JOIN conversations c ON c.id = m.conversation_id
		WHERE o.status = 'pending' ORDER BY o.message_id, o.id`)
	if err != nil {
		return nil, fmt.Errorf("store: pending outbox: %w", err)
	}
	defer rows.Close()
	var out []outbox.Entry
	var delegations []string // the delegation of each entry's message
	for rows.Next() {
		var m chat.Message
		var id int64
		var attempt, partsSent int
		dest, finish := messageDest(&m)
		if err := rows.Scan(append([]any{&id, &attempt, &partsSent}, dest...)...); err != nil {
			return nil, fmt.Errorf("store: pending outbox: %w", err)
		}
		finish()
		e := entryOf(m)
		e.OutboxID, e.Attempt, e.PartsSent = id, attempt, partsSent
		out = append(out, e)
		delegations = append(delegations, m.DelegationID)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: pending outbox: %w", err)
	}
	rows.Close()
	for i, id := range delegations {
		if id == "" {
			continue
		}
		d, err := s.Delegation(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("store: pending outbox: %w", err)
		}
		out[i].Delegation = d.Ref()
	}
	ids := make([]int64, len(out))
	for i, e := range out {
		ids[i] = e.MessageID
	}
	shown, err := s.artifactsShown(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("store: pending outbox: %w", err)
	}
	for i := range out {
		out[i].Artifacts = shown[out[i].MessageID]
	}
	return out, nil
}

// MarkSent implements outbox.Store. A platform's message ID is kept,
// with every part's, so that a reply to it can be traced to its bot.
func (s *Store) MarkSent(ctx context.Context, outboxID int64, platformMsgID string) error {
	return s.mark(ctx, "mark sent", outboxID, platformMsgID,
		`UPDATE outbox SET status = 'sent', platform_msg_id = ?, updated_at = ? WHERE id = ?`, platformMsgID)
}

// MarkPart implements outbox.Store.
func (s *Store) MarkPart(ctx context.Context, outboxID int64, n int, platformMsgID string) error {
	return s.mark(ctx, "mark part", outboxID, platformMsgID,
		`UPDATE outbox SET parts_sent = ?, updated_at = ? WHERE id = ?`, n)
}

// MarkAttempt implements outbox.Store.
func (s *Store) MarkAttempt(ctx context.Context, outboxID int64, reason string) error {
	return s.mark(ctx, "mark attempt", outboxID, "",
		`UPDATE outbox SET attempts = attempts + 1, last_error = ?, updated_at = ? WHERE id = ?`, reason)
}

// MarkFailed implements outbox.Store.
func (s *Store) MarkFailed(ctx context.Context, outboxID int64, reason string) error {
	return s.mark(ctx, "mark failed", outboxID, "",
		`UPDATE outbox SET status = 'failed', attempts = attempts + 1, last_error = ?, updated_at = ? WHERE id = ?`, reason)
}

// mark runs update (whose parameters are value, the time and the entry's
// ID) on an outbox entry and maps platformMsgID, when set, to the
// entry's message.
func (s *Store) mark(ctx context.Context, what string, outboxID int64, platformMsgID, update string, value any) error {
	err := s.write(ctx, func(tx *txn) error {
		if _, err := tx.exec(update, value, micros(timeNow()), outboxID); err != nil {
			return err
		}
		if platformMsgID == "" {
			return nil
		}
		_, err := tx.exec(`INSERT OR IGNORE INTO platform_ids (conversation_id, platform_msg_id, message_id)
			SELECT m.conversation_id, ?, m.id FROM outbox o JOIN messages m ON m.id = o.message_id
			WHERE o.id = ? AND m.conversation_id IS NOT NULL`, platformMsgID, outboxID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: %s %d: %w", what, outboxID, err)
	}
	return nil
}
