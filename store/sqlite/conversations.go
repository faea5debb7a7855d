package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-chat/switchboard/gateway"
)

// Conversations lists p's conversations on platform: the rooms p is a
// member of and p's private chats there (those whose chat ID starts with
// one of p's identities), newest message first, the silent ones last by
// ID.
func (s *Store) Conversations(ctx context.Context, platform string, p gateway.Person) ([]gateway.Conversation, error) {
	var out []gateway.Conversation
	err := s.read(ctx, func(tx *txn) error {
		ids := p.IDs()
		marks := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
		args := []any{platform}
		for _, id := range ids {
			args = append(args, id)
		}
		rooms, err := tx.conversations(`SELECT c.id, c.chat_id, c.bot, r.open,
				(SELECT MAX(m.created_at) FROM messages m WHERE m.conversation_id = c.id AND m.kind = 'chat')
			FROM conversations c JOIN rooms r ON r.conversation_id = c.id
			WHERE c.platform = ? AND c.kind = 'group' AND EXISTS (SELECT 1 FROM room_members rm
				WHERE rm.conversation_id = c.id AND rm.member_id IN (`+marks+`))`, platform, true, args...)
		if err != nil {
			return err
		}
		out = append(out, rooms...)
		for _, id := range ids {
			if !strings.HasPrefix(id, platform+"-") {
				continue
			}
			// (The chat ID is the platform ID, ':' and the bot; LIKE
			// would read a '_' or '%' in the ID as a pattern.)
			private, err := tx.conversations(`SELECT c.id, c.chat_id, c.bot, 0,
					(SELECT MAX(m.created_at) FROM messages m WHERE m.conversation_id = c.id AND m.kind = 'chat')
				FROM conversations c
				WHERE c.platform = ? AND c.kind = 'private' AND substr(c.chat_id, 1, ?) = ?`,
				platform, false, platform, len(id)+1, id+":")
			if err != nil {
				return err
			}
			out = append(out, private...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: conversations: %w", err)
	}
	slices.SortStableFunc(out, func(a, b gateway.Conversation) int {
		if c := b.LastMessageAt.Compare(a.LastMessageAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// conversations scans rows of (conversation, chat ID, bot, open, last
// message time); a room's bots are read after.
func (t *txn) conversations(query, platform string, group bool, args ...any) ([]gateway.Conversation, error) {
	rows, err := t.query(query, args...)
	if err != nil {
		return nil, err
	}
	type row struct {
		conv int64
		c    gateway.Conversation
	}
	var list []row
	for rows.Next() {
		var r row
		var bot string
		var open int
		var last sql.NullInt64
		if err := rows.Scan(&r.conv, &r.c.ID, &bot, &open, &last); err != nil {
			rows.Close()
			return nil, err
		}
		r.c.Platform, r.c.Group, r.c.Open = platform, group, open == 1
		if last.Valid {
			r.c.LastMessageAt = fromMicros(last.Int64)
		}
		if bot != "" {
			r.c.Bots = []string{bot}
		}
		list = append(list, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]gateway.Conversation, 0, len(list))
	for _, r := range list {
		if group {
			bots, err := t.roomBots(r.conv)
			if err != nil {
				return nil, err
			}
			r.c.Bots = bots
		}
		out = append(out, r.c)
	}
	return out, nil
}
