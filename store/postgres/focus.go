package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/gateway"
)

// Focus implements gateway.Store.
func (s *Store) Focus(ctx context.Context, k gateway.FocusKey) (gateway.Focus, bool, error) {
	var f gateway.Focus
	var seen int64
	err := s.pooled(ctx).scanOne(`SELECT bot, seen_at FROM focus WHERE platform = $1 AND chat_id = $2 AND person = $3`,
		[]any{k.Platform, k.ChatID, k.Person}, &f.Bot, &seen)
	if errors.Is(err, pgx.ErrNoRows) {
		return gateway.Focus{}, false, nil
	}
	if err != nil {
		return gateway.Focus{}, false, fmt.Errorf("store: focus: %w", err)
	}
	f.Seen = fromMicros(seen)
	return f, true, nil
}

// SetFocus implements gateway.Store.
func (s *Store) SetFocus(ctx context.Context, k gateway.FocusKey, bot string, at time.Time) error {
	err := s.write(ctx, func(t *txn) error {
		if bot == "" {
			_, err := t.exec(`DELETE FROM focus WHERE platform = $1 AND chat_id = $2 AND person = $3`, k.Platform, k.ChatID, k.Person)
			return err
		}
		_, err := t.exec(`INSERT INTO focus (platform, chat_id, person, bot, seen_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (platform, chat_id, person) DO UPDATE SET bot = excluded.bot, seen_at = excluded.seen_at`,
			k.Platform, k.ChatID, k.Person, bot, micros(at))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: set focus: %w", err)
	}
	return nil
}

// focusSeen dates a focus by the message of its person at at.
func (t *txn) focusSeen(k gateway.FocusKey, at int64) error {
	_, err := t.exec(`UPDATE focus SET seen_at = GREATEST(seen_at, $1) WHERE platform = $2 AND chat_id = $3 AND person = $4`,
		at, k.Platform, k.ChatID, k.Person)
	return err
}
