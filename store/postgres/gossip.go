package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world/gossip"
)

// Gossip (migration 0007): events and their delivery queue. With several
// gateways on one database, a delivery is claimed by the update that
// marks it delivered: a second gateway's update waits for the first's
// transaction and then finds the row no longer pending, so each memory
// is stored once.

var _ gossip.Store = (*Store)(nil)

// gossipColumns is the select list gossipRow reads.
const gossipColumns = `id, user_id, user_name, source_bot, message_id, message_key, topic, summary, depth, status, reason, created_at, updated_at`

// gossipRow receives a row of gossipColumns.
type gossipRow struct {
	e                gossip.Event
	created, updated int64
}

func (r *gossipRow) dest() []any {
	e := &r.e
	return []any{&e.ID, &e.User, &e.UserName, &e.SourceBot, &e.MessageID, &e.Key, &e.Topic, &e.Summary, &e.Depth,
		&e.Status, &e.Reason, &r.created, &r.updated}
}

func (r *gossipRow) event() gossip.Event {
	e := r.e
	e.CreatedAt, e.UpdatedAt = fromMicros(r.created), fromMicros(r.updated)
	return e
}

// AddGossip implements gossip.Store. Two gateways storing an event of
// the same message (two bots' copies of it) meet at its key's unique
// index: the second finds the first's.
func (s *Store) AddGossip(ctx context.Context, e gossip.Event, due []string) (gossip.Event, bool, error) {
	var out gossip.Event
	var created bool
	err := s.write(ctx, func(tx *txn) error {
		out, created = e, false
		at := micros(e.CreatedAt)
		var id int64
		err := tx.scanOne(`INSERT INTO gossip_events (user_id, user_name, source_bot, message_id, message_key, topic, summary, depth,
			status, reason, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
			ON CONFLICT (message_key) WHERE message_key <> '' DO NOTHING RETURNING id`,
			[]any{e.User, e.UserName, e.SourceBot, e.MessageID, e.Key, e.Topic, e.Summary, e.Depth, e.Status, e.Reason, at}, &id)
		if errors.Is(err, pgx.ErrNoRows) {
			var r gossipRow
			if err := tx.scanOne(`SELECT `+gossipColumns+` FROM gossip_events WHERE message_key = $1`, []any{e.Key}, r.dest()...); err != nil {
				if errors.Is(err, pgx.ErrNoRows) {
					return errRetry // its transaction has not committed yet
				}
				return err
			}
			out = r.event()
			return tx.gossipDeliveries(&out)
		}
		if err != nil {
			return err
		}
		for _, bot := range due {
			if _, err := tx.exec(`INSERT INTO gossip_deliveries (event_id, bot, user_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
				id, bot, e.User); err != nil {
				return err
			}
		}
		// The texts as stored (clean may have mended them).
		var r gossipRow
		if err := tx.scanOne(`SELECT `+gossipColumns+` FROM gossip_events WHERE id = $1`, []any{id}, r.dest()...); err != nil {
			return err
		}
		out, created = r.event(), true
		return tx.gossipDeliveries(&out)
	})
	if err != nil {
		return gossip.Event{}, false, fmt.Errorf("store: add gossip: %w", err)
	}
	return out, created, nil
}

// gossipDeliveries fills the Recipients and Pending of events, in one
// query.
func (t *txn) gossipDeliveries(events ...*gossip.Event) error {
	if len(events) == 0 {
		return nil
	}
	byID := make(map[int64]*gossip.Event, len(events))
	ids := make([]int64, 0, len(events))
	for _, e := range events {
		e.Recipients, e.Pending = nil, nil
		byID[e.ID] = e
		ids = append(ids, e.ID)
	}
	return t.each(`SELECT event_id, bot, status FROM gossip_deliveries WHERE event_id = ANY($1) AND status <> 'dropped'
		ORDER BY status = 'pending', delivered_at, bot`, []any{ids}, func(rows pgx.Rows) error {
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
		return nil
	})
}

// GossipEvents implements gossip.Store.
func (s *Store) GossipEvents(ctx context.Context, q gossip.Query) ([]gossip.Event, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(q.Users) > 0 {
		where = append(where, "user_id = ANY("+arg(q.Users)+")")
	}
	if q.Status != "" {
		where = append(where, "status = "+arg(q.Status))
	}
	query := `SELECT ` + gossipColumns + ` FROM gossip_events`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY id DESC LIMIT ` + arg(max(q.Limit, 1))
	var out []gossip.Event
	err := s.read(ctx, func(tx *txn) error {
		out = nil
		if err := tx.each(query, args, func(rows pgx.Rows) error {
			var r gossipRow
			if err := rows.Scan(r.dest()...); err != nil {
				return err
			}
			out = append(out, r.event())
			return nil
		}); err != nil {
			return err
		}
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
	err := s.pooled(ctx).each(`SELECT d.bot, `+prefixed("e.", gossipColumns)+`
		FROM gossip_deliveries d JOIN gossip_events e ON e.id = d.event_id
		WHERE d.status = 'pending' ORDER BY d.event_id, d.bot LIMIT $1`, []any{max(limit, 1)}, func(rows pgx.Rows) error {
		var d gossip.Delivery
		var r gossipRow
		if err := rows.Scan(append([]any{&d.Bot}, r.dest()...)...); err != nil {
			return err
		}
		d.Event = r.event()
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: pending gossip deliveries: %w", err)
	}
	return out, nil
}

// prefixed qualifies each column of a select list with prefix.
func prefixed(prefix, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
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
		if err := tx.lockGossip(d.Event.ID); err != nil {
			return err
		}
		n, err := tx.exec(`UPDATE gossip_deliveries SET status = 'delivered', delivered_at = $1
			WHERE event_id = $2 AND bot = $3 AND status = 'pending'`, now, d.Event.ID, d.Bot)
		if err != nil || n == 0 {
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
		if err := tx.lockGossip(d.Event.ID); err != nil {
			return err
		}
		n, err := tx.exec(`UPDATE gossip_deliveries SET status = 'dropped', reason = $1
			WHERE event_id = $2 AND bot = $3 AND status = 'pending'`, reason, d.Event.ID, d.Bot)
		if err != nil || n == 0 {
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
		// The event's row first (lockGossip).
		if _, err := tx.exec(`UPDATE gossip_events SET status = 'blocked', reason = $1, updated_at = $2 WHERE id = $3`,
			reason, micros(at), id); err != nil {
			return err
		}
		_, err := tx.exec(`UPDATE gossip_deliveries SET status = 'dropped', reason = $1 WHERE event_id = $2 AND status = 'pending'`,
			reason, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: block gossip %d: %w", id, err)
	}
	return nil
}

// lockGossip locks event id's row until the transaction ends. Every
// write of an event's deliveries takes it first, so that two gateways
// delivering or blocking one event take their locks in one order, and
// the last two deliveries of an event see each other's.
func (t *txn) lockGossip(id int64) error {
	_, err := t.exec(`SELECT 1 FROM gossip_events WHERE id = $1 FOR UPDATE`, id)
	return err
}

// settleGossip marks a queued event delivered once none of its
// deliveries is pending, naming in its reason the bots dropped. The
// caller holds the event's lock (lockGossip).
func (t *txn) settleGossip(id, at int64) error {
	var pending bool
	if err := t.scanOne(`SELECT EXISTS (SELECT 1 FROM gossip_deliveries WHERE event_id = $1 AND status = 'pending')`,
		[]any{id}, &pending); err != nil || pending {
		return err
	}
	var reasons []string
	if err := t.each(`SELECT bot, reason FROM gossip_deliveries WHERE event_id = $1 AND status = 'dropped' ORDER BY bot`,
		[]any{id}, func(rows pgx.Rows) error {
			var bot, reason string
			if err := rows.Scan(&bot, &reason); err != nil {
				return err
			}
			reasons = append(reasons, "not delivered to "+bot+": "+reason)
			return nil
		}); err != nil {
		return err
	}
	_, err := t.exec(`UPDATE gossip_events SET status = 'delivered', reason = $1, updated_at = $2 WHERE id = $3 AND status = 'queued'`,
		strings.Join(reasons, "; "), at, id)
	return err
}

// Memories implements gossip.Store.
func (s *Store) Memories(ctx context.Context, bot, user string, limit int) ([]gossip.Memory, error) {
	var out []gossip.Memory
	err := s.pooled(ctx).each(`SELECT e.id, e.source_bot, e.user_name, e.summary, d.delivered_at
		FROM gossip_deliveries d JOIN gossip_events e ON e.id = d.event_id
		WHERE d.bot = $1 AND d.user_id = $2 AND d.status = 'delivered'
		ORDER BY d.delivered_at DESC, d.event_id DESC LIMIT $3`, []any{bot, user, max(limit, 1)}, func(rows pgx.Rows) error {
		var m gossip.Memory
		var name, summary string
		var at int64
		if err := rows.Scan(&m.EventID, &m.From, &name, &summary, &at); err != nil {
			return err
		}
		m.Text, m.At = gossip.MemoryText(gossip.Event{UserName: name, Summary: summary}), fromMicros(at)
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: memories: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// MessagesFrom implements gossip.Store: the person's messages in each
// bot's session with them (of scope user) and its group sessions, read
// by the sessions' histories; each count reads at most upTo of them.
func (s *Store) MessagesFrom(ctx context.Context, user string, bots []string, before int64, upTo int) (map[string]int, error) {
	out := map[string]int{}
	err := s.pooled(ctx).each(`SELECT b.bot, (SELECT COUNT(*) FROM (SELECT 1 FROM session_messages sm
			JOIN messages m ON m.id = sm.message_id
			WHERE sm.session_id IN (SELECT id FROM sessions WHERE bot = b.bot AND scope = 'user' AND scope_id = $1
					UNION ALL SELECT id FROM sessions WHERE bot = b.bot AND scope = 'group')
				AND sm.message_id < $2 AND m.user_id = $1 AND m.from_kind = 'human' AND m.kind = 'chat'
			LIMIT $3) mine)
		FROM unnest($4::text[]) AS b (bot)`, []any{user, before, max(upTo, 1), bots}, func(rows pgx.Rows) error {
		var bot string
		var n int
		if err := rows.Scan(&bot, &n); err != nil {
			return err
		}
		if n > 0 {
			out[bot] = n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: messages from %s: %w", user, err)
	}
	return out, nil
}
