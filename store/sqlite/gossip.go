package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world/gossip"
)

// Gossip (migration 0019): events and their delivery queue. SQLite has
// one writer, so a delivery claimed in a write is claimed once.

var _ gossip.Store = (*Store)(nil)

// gossipColumns is the select list scanGossip reads.
const gossipColumns = `id, user_id, user_name, source_bot, message_id, message_key, topic, summary, depth, status, reason, created_at, updated_at`

func scanGossip(row scanner) (gossip.Event, error) {
	var e gossip.Event
	var created, updated int64
	err := row.Scan(&e.ID, &e.User, &e.UserName, &e.SourceBot, &e.MessageID, &e.Key, &e.Topic, &e.Summary, &e.Depth,
		&e.Status, &e.Reason, &created, &updated)
	e.CreatedAt, e.UpdatedAt = fromMicros(created), fromMicros(updated)
	return e, err
}

// AddGossip implements gossip.Store.
func (s *Store) AddGossip(ctx context.Context, e gossip.Event, due []string) (gossip.Event, bool, error) {
	var created bool
	err := s.write(ctx, func(tx *txn) error {
		created = false
		if e.Key != "" {
			old, err := scanGossip(tx.row(`SELECT `+gossipColumns+` FROM gossip_events WHERE message_key = ?`, e.Key))
			switch {
			case err == nil:
				e = old
				return tx.gossipDeliveries(&e)
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		at := micros(e.CreatedAt)
		e.CreatedAt, e.UpdatedAt = fromMicros(at), fromMicros(at)
		id, err := tx.insert(`INSERT INTO gossip_events (user_id, user_name, source_bot, message_id, message_key, topic, summary, depth,
			status, reason, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.User, e.UserName, e.SourceBot, e.MessageID, e.Key, e.Topic, e.Summary, e.Depth, e.Status, e.Reason, at, at)
		if err != nil {
			return err
		}
		e.ID, created = id, true
		for _, bot := range due {
			if _, err := tx.exec(`INSERT OR IGNORE INTO gossip_deliveries (event_id, bot, user_id) VALUES (?, ?, ?)`, id, bot, e.User); err != nil {
				return err
			}
		}
		return tx.gossipDeliveries(&e)
	})
	if err != nil {
		return gossip.Event{}, false, fmt.Errorf("store: add gossip: %w", err)
	}
	return e, created, nil
}

// gossipDeliveries fills the Recipients and Pending of events, in one
// query.
func (t *txn) gossipDeliveries(events ...*gossip.Event) error {
	if len(events) == 0 {
		return nil
	}
	byID := make(map[int64]*gossip.Event, len(events))
	args := make([]any, 0, len(events))
	for _, e := range events {
		e.Recipients, e.Pending = nil, nil
		byID[e.ID] = e
		args = append(args, e.ID)
	}
	rows, err := t.query(`SELECT event_id, bot, status FROM gossip_deliveries
		WHERE event_id IN (`+strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ")+`) AND status <> 'dropped'
		ORDER BY status = 'pending', delivered_at, bot`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var bot, status string
		if err := rows.Scan(&id, &bot, &status); err != nil {
			return err
		}
		if e := byID[id]; status == "pending" {
			e.Pending = append(e.Pending, bot)
		} else {
			e.Recipients = append(e.Recipients, bot)
		}
	}
	return rows.Err()
}

// GossipEvents implements gossip.Store.
func (s *Store) GossipEvents(ctx context.Context, q gossip.Query) ([]gossip.Event, error) {
	var where []string
	var args []any
	if len(q.Users) > 0 {
		where = append(where, "user_id IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(q.Users)), ", ")+")")
		for _, u := range q.Users {
			args = append(args, u)
		}
	}
	if q.Status != "" {
		where, args = append(where, "status = ?"), append(args, q.Status)
	}
	query := `SELECT ` + gossipColumns + ` FROM gossip_events`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY id DESC LIMIT ?`
	args = append(args, max(q.Limit, 1))
	var out []gossip.Event
	err := s.read(ctx, func(tx *txn) error {
		out = nil
		rows, err := tx.query(query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			e, err := scanGossip(rows)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		events := make([]*gossip.Event, len(out))
		for i := range out {
			events[i] = &out[i]
		}
		return tx.gossipDeliveries(events...)
	})
	if err != nil {
		return nil, fmt.Errorf("store: gossip events: %w", err)
	}
	return out, nil
}

// PendingDeliveries implements gossip.Store.
func (s *Store) PendingDeliveries(ctx context.Context, limit int) ([]gossip.Delivery, error) {
	var out []gossip.Delivery
	err := s.read(ctx, func(tx *txn) error {
		out = nil
		rows, err := tx.query(`SELECT d.bot, e.id, e.user_id, e.user_name, e.source_bot, e.message_id, e.message_key, e.topic, e.summary,
			e.depth, e.status, e.reason, e.created_at, e.updated_at
			FROM gossip_deliveries d JOIN gossip_events e ON e.id = d.event_id
			WHERE d.status = 'pending' ORDER BY d.event_id, d.bot LIMIT ?`, max(limit, 1))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d gossip.Delivery
			var created, updated int64
			e := &d.Event
			if err := rows.Scan(&d.Bot, &e.ID, &e.User, &e.UserName, &e.SourceBot, &e.MessageID, &e.Key, &e.Topic, &e.Summary,
				&e.Depth, &e.Status, &e.Reason, &created, &updated); err != nil {
				return err
			}
			e.CreatedAt, e.UpdatedAt = fromMicros(created), fromMicros(updated)
			out = append(out, d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: pending gossip deliveries: %w", err)
	}
	return out, nil
}

// DeliverMemory implements gossip.Store.
func (s *Store) DeliverMemory(ctx context.Context, d gossip.Delivery, note chat.Message) (bool, error) {
	var done bool
	err := s.write(ctx, func(tx *txn) error {
		done = false
		now := micros(timeNow())
		if !note.Time.IsZero() {
			now = micros(note.Time)
		}
		res, err := tx.exec(`UPDATE gossip_deliveries SET status = 'delivered', delivered_at = ?
			WHERE event_id = ? AND bot = ? AND status = 'pending'`, now, d.Event.ID, d.Bot)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		session, err := tx.ensureSession(sessions.Key{Bot: d.Bot, Scope: sessions.ScopeUser, ScopeID: d.Event.User}, now)
		if err != nil {
			return err
		}
		id, err := tx.insertMessage(0, note)
		if err != nil {
			return err
		}
		if err := tx.link(session, id); err != nil {
			return err
		}
		done = true
		return tx.settleGossip(d.Event.ID, now)
	})
	if err != nil {
		return false, fmt.Errorf("store: deliver gossip %d to %s: %w", d.Event.ID, d.Bot, err)
	}
	return done, nil
}

// DropDelivery implements gossip.Store.
func (s *Store) DropDelivery(ctx context.Context, d gossip.Delivery, reason string, at time.Time) error {
	err := s.write(ctx, func(tx *txn) error {
		res, err := tx.exec(`UPDATE gossip_deliveries SET status = 'dropped', reason = ?
			WHERE event_id = ? AND bot = ? AND status = 'pending'`, reason, d.Event.ID, d.Bot)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		return tx.settleGossip(d.Event.ID, micros(at))
	})
	if err != nil {
		return fmt.Errorf("store: drop gossip %d for %s: %w", d.Event.ID, d.Bot, err)
	}
	return nil
}

// BlockGossip implements gossip.Store.
func (s *Store) BlockGossip(ctx context.Context, id int64, reason string, at time.Time) error {
	err := s.write(ctx, func(tx *txn) error {
		if _, err := tx.exec(`UPDATE gossip_deliveries SET status = 'dropped', reason = ? WHERE event_id = ? AND status = 'pending'`,
			reason, id); err != nil {
			return err
		}
		_, err := tx.exec(`UPDATE gossip_events SET status = 'blocked', reason = ?, updated_at = ? WHERE id = ?`, reason, micros(at), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: block gossip %d: %w", id, err)
	}
	return nil
}

// settleGossip marks a queued event delivered once none of its
// deliveries is pending, naming in its reason the bots dropped.
func (t *txn) settleGossip(id, at int64) error {
	var pending bool
	if err := t.scanOne(`SELECT EXISTS (SELECT 1 FROM gossip_deliveries WHERE event_id = ? AND status = 'pending')`,
		[]any{id}, &pending); err != nil || pending {
		return err
	}
	var reasons []string
	rows, err := t.query(`SELECT bot, reason FROM gossip_deliveries WHERE event_id = ? AND status = 'dropped' ORDER BY bot`, id)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var bot, reason string
		if err := rows.Scan(&bot, &reason); err != nil {
			return err
		}
		reasons = append(reasons, "not delivered to "+bot+": "+reason)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	_, err = t.exec(`UPDATE gossip_events SET status = 'delivered', reason = ?, updated_at = ? WHERE id = ? AND status = 'queued'`,
		strings.Join(reasons, "; "), at, id)
	return err
}

// Memories implements gossip.Store.
func (s *Store) Memories(ctx context.Context, bot, user string, limit int) ([]gossip.Memory, error) {
	var out []gossip.Memory
	err := s.read(ctx, func(tx *txn) error {
		out = nil
		rows, err := tx.query(`SELECT e.id, e.source_bot, e.user_name, e.summary, d.delivered_at
			FROM gossip_deliveries d JOIN gossip_events e ON e.id = d.event_id
			WHERE d.bot = ? AND d.user_id = ? AND d.status = 'delivered'
			ORDER BY d.delivered_at DESC, d.event_id DESC LIMIT ?`, bot, user, max(limit, 1))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var m gossip.Memory
			var name, summary string
			var at int64
			if err := rows.Scan(&m.EventID, &m.From, &name, &summary, &at); err != nil {
				return err
			}
			m.Text, m.At = gossip.MemoryText(gossip.Event{UserName: name, Summary: summary}), fromMicros(at)
			out = append(out, m)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: memories: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// MessagesFrom implements gossip.Store. A bot's sessions with the person
// are its session of scope user with them and its group sessions, read
// by their histories (the messages have no index by person); each count
// reads at most upTo of the person's messages.
func (s *Store) MessagesFrom(ctx context.Context, user string, bots []string, before int64, upTo int) (map[string]int, error) {
	out := map[string]int{}
	err := s.read(ctx, func(tx *txn) error {
		clear(out)
		for _, bot := range bots {
			var n int
			if err := tx.scanOne(`SELECT COUNT(*) FROM (SELECT 1 FROM session_messages sm
				JOIN messages m ON m.id = sm.message_id
				WHERE sm.session_id IN (SELECT id FROM sessions WHERE bot = ? AND scope = 'user' AND scope_id = ?
						UNION ALL SELECT id FROM sessions WHERE bot = ? AND scope = 'group')
					AND sm.message_id < ? AND m.user_id = ? AND m.from_kind = 'human' AND m.kind = 'chat'
				LIMIT ?)`, []any{bot, user, bot, before, user, max(upTo, 1)}, &n); err != nil {
				return err
			}
			if n > 0 {
				out[bot] = n
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: messages from %s: %w", user, err)
	}
	return out, nil
}
