package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world/chains"
)

// chainColumns is the select list scanChain reads from crossbot_chains.
const chainColumns = `platform, chat_id, chain, status, steps, started_at, last_at, mark,
	burst_bot, burst_at, burst_first, burst_woke, draws, version, updated_at`

// scanChain reads a row of chainColumns.
func scanChain(row scanner) (chains.State, error) {
	var st chains.State
	var started, last, burstAt, updated int64
	var woke string
	err := row.Scan(&st.Platform, &st.Chat, &st.Chain, &st.Status, &st.Steps, &started, &last, &st.Mark,
		&st.Burst.Bot, &burstAt, &st.Burst.First, &woke, &st.Draws, &st.Version, &updated)
	if err != nil {
		return st, err
	}
	st.StartedAt, st.LastAt, st.Burst.At, st.UpdatedAt = orZero(started), orZero(last), orZero(burstAt), orZero(updated)
	st.Burst.Woke = strings.Fields(woke)
	return st, nil
}

// orZero is fromMicros, with 0 for the zero time.
func orZero(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return fromMicros(us)
}

// zeroOr is micros, with the zero time as 0.
func zeroOr(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return micros(t)
}

// ChainState implements gateway.ChainStore. The State and the newest
// person's message since its mark are read in one view.
func (s *Store) ChainState(ctx context.Context, platform, chatID string, msgID int64) (chains.State, int64, error) {
	st := chains.State{Platform: platform, Chat: chatID}
	var person int64
	err := s.view(ctx, func(t *txn) error {
		q, err := t.stmt(`SELECT ` + chainColumns + ` FROM crossbot_chains WHERE platform = ? AND chat_id = ?`)
		if err != nil {
			return err
		}
		got, err := scanChain(q.QueryRowContext(t.ctx, platform, chatID))
		switch {
		case err == nil:
			st = got
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		// Another bot's copy of the same message (same author, time and
		// text) among the chat's last messages up to the mark makes a
		// message an old one.
		var id sql.NullInt64
		err = t.scanOne(`SELECT MAX(m.id) FROM conversations c JOIN messages m ON m.conversation_id = c.id
			WHERE c.platform = ? AND c.chat_id = ? AND c.bot = '' AND m.id > ? AND m.id < ? AND m.from_kind = 'human'
			AND NOT EXISTS (SELECT 1 FROM (SELECT o.from_kind, o.from_id, o.created_at, o.text FROM messages o
					WHERE o.conversation_id = c.id AND o.id <= ? ORDER BY o.id DESC LIMIT ?) o
				WHERE o.from_kind = 'human' AND o.from_id = m.from_id AND o.created_at = m.created_at AND o.text = m.text)`,
			[]any{platform, chatID, st.Mark, msgID, st.Mark, copiesWithin}, &id)
		person = id.Int64
		return err
	})
	if err != nil {
		return chains.State{}, 0, fmt.Errorf("store: chain state: %w", err)
	}
	return st, person, nil
}

// AdvanceChain implements gateway.ChainStore.
func (s *Store) AdvanceChain(ctx context.Context, a gateway.ChainAdvance) ([]sessions.TurnRef, bool, error) {
	var turns []sessions.TurnRef
	err := s.write(ctx, func(t *txn) error {
		turns = nil
		if err := t.saveChain(a.State, micros(a.At)); err != nil {
			return err
		}
		var after any
		for _, ans := range a.Answers {
			ref, err := t.chainTurn(ans, a.Message, after, micros(a.At))
			if err != nil {
				return err
			}
			turns = append(turns, ref)
			after = ref.ID
		}
		return nil
	})
	if errors.Is(err, errChainMoved) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: advance chain: %w", err)
	}
	return turns, true, nil
}

// copiesWithin is how many of a chat's messages before a judged bot
// message's mark are searched for an earlier copy of a person's message:
// on Telegram and Discord each bot gets its own copy, stored as it
// comes, and a copy is no new message.
const copiesWithin = 64

// errChainMoved rolls back a judgement whose State another writer
// changed after it was read.
var errChainMoved = errors.New("chain state changed meanwhile")

// saveChain writes st over the version it was read at.
func (t *txn) saveChain(st chains.State, now int64) error {
	args := []any{st.Chain, st.Status, st.Steps, zeroOr(st.StartedAt), zeroOr(st.LastAt), st.Mark,
		st.Burst.Bot, zeroOr(st.Burst.At), st.Burst.First, strings.Join(st.Burst.Woke, " "), st.Draws, now}
	var res sql.Result
	var err error
	if st.Version == 0 {
		res, err = t.exec(`INSERT INTO crossbot_chains (platform, chat_id, chain, status, steps, started_at, last_at, mark,
			burst_bot, burst_at, burst_first, burst_woke, draws, updated_at, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) ON CONFLICT (platform, chat_id) DO NOTHING`,
			append([]any{st.Platform, st.Chat}, args...)...)
	} else {
		res, err = t.exec(`UPDATE crossbot_chains SET chain = ?, status = ?, steps = ?, started_at = ?, last_at = ?, mark = ?,
			burst_bot = ?, burst_at = ?, burst_first = ?, burst_woke = ?, draws = ?, updated_at = ?, version = version + 1
			WHERE platform = ? AND chat_id = ? AND version = ?`,
			append(args, st.Platform, st.Chat, st.Version)...)
	}
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return errChainMoved
	}
	return nil
}

// chainTurn queues one bot's answer to message msg, after the turn after
// (none when nil), in the bot's session, which the message joins.
func (t *txn) chainTurn(ans gateway.ChainAnswer, msg int64, after any, now int64) (sessions.TurnRef, error) {
	sid, err := t.ensureSession(ans.Session, now)
	if err != nil {
		return sessions.TurnRef{}, err
	}
	if err := t.link(sid, msg); err != nil {
		return sessions.TurnRef{}, err
	}
	id, err := t.insert(`INSERT INTO turns (session_id, message_id, text, after_turn, created_at, chain_step, chain_closing)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, sid, msg, ans.Text, after, now, ans.Step, ans.Closing)
	return sessions.TurnRef{ID: id, SessionID: sid}, err
}

// maxReplyHops bounds the walk from a chain step back to the person's
// message its chain started from.
const maxReplyHops = 64

// ChainTurn implements gateway.ChainStore.
func (s *Store) ChainTurn(ctx context.Context, turn int64) (gateway.ChainStep, bool, error) {
	var step gateway.ChainStep
	var n sql.NullInt64
	var closing sql.NullBool
	var msg int64
	err := s.scanOne(ctx, `SELECT chain_step, chain_closing, message_id FROM turns WHERE id = ?`, []any{turn}, &n, &closing, &msg)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !n.Valid) {
		return step, false, nil
	}
	if err != nil {
		return step, false, fmt.Errorf("store: chain turn: %w", err)
	}
	step.Step, step.Closing = int(n.Int64), closing.Bool
	// The bots' messages answer one another back to the person's.
	var name sql.NullString
	err = s.scanOne(ctx, `WITH RECURSIVE up (id, reply_to_id, from_kind, from_name, hops) AS (
			SELECT id, reply_to_id, from_kind, from_name, 0 FROM messages WHERE id = ?
			UNION ALL
			SELECT m.id, m.reply_to_id, m.from_kind, m.from_name, up.hops + 1
			FROM messages m JOIN up ON m.id = up.reply_to_id
			WHERE up.from_kind != 'human' AND up.hops < ?)
		SELECT from_name FROM up WHERE from_kind = 'human' LIMIT 1`, []any{msg, maxReplyHops}, &name)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return step, false, fmt.Errorf("store: chain turn: %w", err)
	}
	step.Person = name.String
	return step, true, nil
}

// Chains implements gateway.ChainStore.
func (s *Store) Chains(ctx context.Context, limit int) ([]gateway.ChainInfo, error) {
	rows, err := s.query(ctx, `SELECT `+chainColumns+`, COALESCE((SELECT c.name FROM conversations c
			WHERE c.platform = x.platform AND c.chat_id = x.chat_id AND c.bot = ''), '')
		FROM crossbot_chains x WHERE chain > 0 ORDER BY updated_at DESC, platform, chat_id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: chains: %w", err)
	}
	defer rows.Close()
	out := []gateway.ChainInfo{}
	for rows.Next() {
		var name string
		st, err := scanChain(rowWith{rows, &name})
		if err != nil {
			return nil, fmt.Errorf("store: chains: %w", err)
		}
		out = append(out, gateway.ChainInfo{State: st, ChatName: name})
	}
	return out, rows.Err()
}

// rowWith scans a row of chainColumns followed by more columns.
type rowWith struct {
	row  scanner
	more *string
}

// Scan reads dest, then the extra column.
func (r rowWith) Scan(dest ...any) error { return r.row.Scan(append(dest, r.more)...) }
