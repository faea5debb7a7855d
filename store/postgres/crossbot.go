package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world/chains"
)

// chainColumns is the select list scanChain reads from crossbot_chains.
const chainColumns = `platform, chat_id, chain, status, steps, started_at, last_at, mark,
	burst_bot, burst_at, burst_first, burst_woke, draws, version, updated_at`

// scanChain reads a row of chainColumns.
func scanChain(row pgx.Row) (chains.State, error) {
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
// person's message since its mark are read from one snapshot.
func (s *Store) ChainState(ctx context.Context, platform, chatID string, msgID int64) (chains.State, int64, error) {
	var st chains.State
	var person int64
	err := s.read(ctx, func(t *txn) error {
		st, person = chains.State{Platform: platform, Chat: chatID}, 0
		got, err := scanChain(t.q.QueryRow(t.ctx, `SELECT `+chainColumns+` FROM crossbot_chains
			WHERE platform = $1 AND chat_id = $2`, clean([]any{platform, chatID})...))
		switch {
		case err == nil:
			st = got
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		// Another bot's copy of the same message (same author, time and
		// text) among the chat's last messages up to the mark makes a
		// message an old one.
		return t.scanOne(`SELECT COALESCE(MAX(m.id), 0) FROM conversations c JOIN messages m ON m.conversation_id = c.id
			WHERE c.platform = $1 AND c.chat_id = $2 AND c.bot = '' AND m.id > $3 AND m.id < $4 AND m.from_kind = 'human'
			AND NOT EXISTS (SELECT 1 FROM (SELECT o.from_kind, o.from_id, o.created_at, o.text FROM messages o
					WHERE o.conversation_id = c.id AND o.id <= $3 ORDER BY o.id DESC LIMIT $5) o
				WHERE o.from_kind = 'human' AND o.from_id = m.from_id AND o.created_at = m.created_at AND o.text = m.text)`,
			[]any{platform, chatID, st.Mark, msgID, copiesWithin}, &person)
	})
	if err != nil {
		return chains.State{}, 0, fmt.Errorf("store: chain state: %w", err)
	}
	return st, person, nil
}

// AdvanceChain implements gateway.ChainStore. The chat's row is written
// first: of two judgements of one chat at once, the second waits for the
// first's row lock, then finds the version moved. The answers' sessions
// are locked after it, in one order (lockSessions).
func (s *Store) AdvanceChain(ctx context.Context, a gateway.ChainAdvance) ([]sessions.TurnRef, bool, error) {
	var turns []sessions.TurnRef
	err := s.write(ctx, func(t *txn) error {
		turns = nil
		now := micros(a.At)
		if err := t.saveChain(a.State, now); err != nil {
			return err
		}
		keys := make([]sessions.Key, 0, len(a.Answers))
		for _, ans := range a.Answers {
			keys = append(keys, ans.Session)
		}
		ids, err := t.lockSessions(keys, now)
		if err != nil {
			return err
		}
		var after any
		for _, ans := range a.Answers {
			sid := ids[ans.Session]
			var id int64
			err := t.scanOne(`WITH l AS (INSERT INTO session_messages (session_id, message_id)
					VALUES ($1, $2) ON CONFLICT DO NOTHING)
				INSERT INTO turns (session_id, message_id, text, after_turn, created_at, chain_step, chain_closing)
				VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
				[]any{sid, a.Message, ans.Text, after, now, ans.Step, ans.Closing}, &id)
			if err != nil {
				return err
			}
			turns = append(turns, sessions.TurnRef{ID: id, SessionID: sid})
			after = id
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
	args := []any{st.Platform, st.Chat, st.Chain, st.Status, st.Steps, zeroOr(st.StartedAt), zeroOr(st.LastAt), st.Mark,
		st.Burst.Bot, zeroOr(st.Burst.At), st.Burst.First, strings.Join(st.Burst.Woke, " "), st.Draws, now}
	var n int64
	var err error
	if st.Version == 0 {
		n, err = t.exec(`INSERT INTO crossbot_chains (platform, chat_id, chain, status, steps, started_at, last_at, mark,
			burst_bot, burst_at, burst_first, burst_woke, draws, updated_at, version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 1)
			ON CONFLICT (platform, chat_id) DO NOTHING`, args...)
	} else {
		n, err = t.exec(`UPDATE crossbot_chains SET chain = $3, status = $4, steps = $5, started_at = $6, last_at = $7,
			mark = $8, burst_bot = $9, burst_at = $10, burst_first = $11, burst_woke = $12, draws = $13,
			updated_at = $14, version = version + 1
			WHERE platform = $1 AND chat_id = $2 AND version = $15`, append(args, st.Version)...)
	}
	if err != nil {
		return err
	}
	if n == 0 {
		return errChainMoved
	}
	return nil
}

// maxReplyHops bounds the walk from a chain step back to the person's
// message its chain started from.
const maxReplyHops = 64

// ChainTurn implements gateway.ChainStore.
func (s *Store) ChainTurn(ctx context.Context, turn int64) (gateway.ChainStep, bool, error) {
	var step gateway.ChainStep
	var n *int
	var closing *bool
	var msg int64
	t := s.pooled(ctx)
	err := t.scanOne(`SELECT chain_step, chain_closing, message_id FROM turns WHERE id = $1`, []any{turn}, &n, &closing, &msg)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && n == nil) {
		return step, false, nil
	}
	if err != nil {
		return step, false, fmt.Errorf("store: chain turn: %w", err)
	}
	step.Step = *n
	step.Closing = closing != nil && *closing
	// The bots' messages answer one another back to the person's.
	err = t.scanOne(`WITH RECURSIVE up (id, reply_to_id, from_kind, from_name, hops) AS (
			SELECT id, reply_to_id, from_kind, from_name, 0 FROM messages WHERE id = $1
			UNION ALL
			SELECT m.id, m.reply_to_id, m.from_kind, m.from_name, up.hops + 1
			FROM messages m JOIN up ON m.id = up.reply_to_id
			WHERE up.from_kind != 'human' AND up.hops < $2)
		SELECT from_name FROM up WHERE from_kind = 'human' LIMIT 1`, []any{msg, maxReplyHops}, &step.Person)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return step, false, fmt.Errorf("store: chain turn: %w", err)
	}
	return step, true, nil
}

// Chains implements gateway.ChainStore.
func (s *Store) Chains(ctx context.Context, limit int) ([]gateway.ChainInfo, error) {
	out := []gateway.ChainInfo{}
	err := s.pooled(ctx).each(`SELECT `+chainColumns+`, COALESCE((SELECT c.name FROM conversations c
			WHERE c.platform = x.platform AND c.chat_id = x.chat_id AND c.bot = ''), '')
		FROM crossbot_chains x WHERE chain > 0 ORDER BY updated_at DESC, platform, chat_id LIMIT $1`, []any{limit}, func(rows pgx.Rows) error {
		var name string
		st, err := scanChain(rowWith{rows, &name})
		out = append(out, gateway.ChainInfo{State: st, ChatName: name})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: chains: %w", err)
	}
	return out, nil
}

// rowWith scans a row of chainColumns followed by more columns.
type rowWith struct {
	row  pgx.Row
	more *string
}

// Scan reads dest, then the extra column.
func (r rowWith) Scan(dest ...any) error { return r.row.Scan(append(dest, r.more)...) }
