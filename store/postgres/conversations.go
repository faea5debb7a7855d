package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/gateway"
)

// Conversations lists p's conversations on platform: the rooms p is a
// member of and p's private chats there (those whose chat ID starts with
// one of p's identities and ':'), newest message first, the silent ones
// last by ID.
func (s *Store) Conversations(ctx context.Context, platform string, p gateway.Person) ([]gateway.Conversation, error) {
	var out []gateway.Conversation
	err := s.read(ctx, func(t *txn) error {
		out = nil
		ids := p.IDs()
		var prefixes []string
		for _, id := range ids {
			if strings.HasPrefix(id, platform+"-") {
				prefixes = append(prefixes, id+":")
			}
		}
		type row struct {
			conv int64
			c    gateway.Conversation
		}
		var rows []row
		// (starts_with, not LIKE: a '_' or '%' in an ID is no pattern.)
		err := t.each(`SELECT c.id, c.chat_id, c.bot, c.kind = 'group', COALESCE(r.open, false),
				(SELECT MAX(m.created_at) FROM messages m WHERE m.conversation_id = c.id AND m.kind = 'chat')
			FROM conversations c LEFT JOIN rooms r ON r.conversation_id = c.id
			WHERE c.platform = $1 AND (
				(c.kind = 'group' AND EXISTS (SELECT 1 FROM room_members rm
					WHERE rm.conversation_id = c.id AND rm.member_id = ANY($2)))
				OR (c.kind = 'private' AND EXISTS (SELECT 1 FROM unnest($3::text[]) AS pre(p)
					WHERE starts_with(c.chat_id, pre.p))))`,
			[]any{platform, ids, prefixes}, func(rs pgx.Rows) error {
				var r row
				var bot string
				var last *int64
				if err := rs.Scan(&r.conv, &r.c.ID, &bot, &r.c.Group, &r.c.Open, &last); err != nil {
					return err
				}
				r.c.Platform = platform
				if last != nil {
					r.c.LastMessageAt = fromMicros(*last)
				}
				if bot != "" {
					r.c.Bots = []string{bot}
				}
				rows = append(rows, r)
				return nil
			})
		if err != nil {
			return err
		}
		for _, r := range rows {
			if r.c.Group {
				if r.c.Bots, err = t.roomBots(r.conv); err != nil {
					return err
				}
			}
			out = append(out, r.c)
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
