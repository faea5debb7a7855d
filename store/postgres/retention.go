package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/retention"
)

// Deleting by retention (SPEC §12) goes in short transactions: a batch
// of old messages, or one idle visitor, at a time. Each transaction finds
// what it deletes and what refers to it by index (every referring column
// has one), checks again under its locks that nothing it deletes became
// busy since, and deletes the rows that refer before the rows referred
// to, so the declared references hold throughout.

// deleteBatch bounds the old messages one transaction deletes.
const deleteBatch = 500

// DeleteMessagesBefore implements retention.Store.
func (s *Store) DeleteMessagesBefore(ctx context.Context, before time.Time) (retention.Counts, error) {
	var total retention.Counts
	after := int64(0) // batches go up the message IDs
	for {
		var c retention.Counts
		var ids []int64
		err := s.write(ctx, func(t *txn) error {
			c, ids = retention.Counts{}, nil
			// Locked, so that no turn or outbox entry of theirs is
			// written until they are gone.
			err := t.each(`SELECT m.id FROM messages m WHERE m.created_at < $1 AND m.id > $2
				AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.message_id = m.id AND t.status = 'pending')
				AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.message_id = m.id AND o.status = 'pending')
				ORDER BY m.id LIMIT $3 FOR UPDATE OF m`, []any{micros(before), after, deleteBatch}, func(rows pgx.Rows) error {
				var id int64
				err := rows.Scan(&id)
				ids = append(ids, id)
				return err
			})
			if err != nil || len(ids) == 0 {
				return err
			}
			return t.deleteMessages(ids, nil, &c)
		})
		total = total.Add(c)
		if err != nil {
			return total, fmt.Errorf("store: delete messages: %w", err)
		}
		if len(ids) < deleteBatch {
			return total, nil
		}
		after = ids[len(ids)-1]
	}
}

// deleteMessages deletes the messages ids and everything that refers to
// them: their places in histories, dedupe keys, platform IDs, turns,
// outbox entries, and the artifacts attached to them, except an artifact
// that a delegation not in doomed made or takes as input, which is only
// detached from them. Artifacts of the doomed delegations go.
func (t *txn) deleteMessages(ids []int64, doomed []string, c *retention.Counts) error {
	err := t.artifactsGo(`a.message_id = ANY($1)`, ids, doomed, c)
	if err != nil {
		return err
	}
	for _, q := range []string{
		// A turn of another message that waits for one of theirs waits
		// no longer.
		`UPDATE turns SET after_turn = NULL WHERE after_turn IN (SELECT id FROM turns WHERE message_id = ANY($1))
			AND NOT message_id = ANY($1)`,
		`UPDATE turns SET reply_id = NULL WHERE reply_id = ANY($1)`,
	} {
		if _, err := t.exec(q, ids); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		q string
		n *int
	}{
		{`DELETE FROM turns WHERE message_id = ANY($1)`, &c.Turns},
		{`DELETE FROM outbox WHERE message_id = ANY($1)`, &c.Outbox},
		{`DELETE FROM session_messages WHERE message_id = ANY($1)`, nil},
		{`DELETE FROM inbound_keys WHERE message_id = ANY($1)`, nil},
		{`DELETE FROM platform_ids WHERE message_id = ANY($1)`, nil},
		{`DELETE FROM message_artifacts WHERE message_id = ANY($1)`, nil},
		{`DELETE FROM messages WHERE id = ANY($1)`, &c.Messages},
	} {
		n, err := t.exec(d.q, ids)
		if err != nil {
			return err
		}
		if d.n != nil {
			*d.n += int(n)
		}
	}
	return nil
}

// artifactsGo deletes the artifacts matching where (on artifacts a, with
// $1 as arg) with what refers to them, or, when a delegation that stays
// made one or takes it as input, detaches it from the messages (and the
// doomed delegations) being deleted.
func (t *txn) artifactsGo(where string, arg any, doomed []string, c *retention.Counts) error {
	if doomed == nil {
		doomed = []string{}
	}
	type art struct {
		id, delegation string
		input          bool // a delegation that stays takes it as input
	}
	var arts []art
	err := t.each(`SELECT a.id, COALESCE(a.delegation_id, ''),
		EXISTS (SELECT 1 FROM delegation_inputs i WHERE i.artifact_id = a.id AND NOT i.delegation_id = ANY($2))
		FROM artifacts a WHERE `+where, []any{arg, doomed}, func(rows pgx.Rows) error {
		var a art
		err := rows.Scan(&a.id, &a.delegation, &a.input)
		arts = append(arts, a)
		return err
	})
	if err != nil {
		return err
	}
	for _, a := range arts {
		dropped := a.delegation != "" && slices.Contains(doomed, a.delegation)
		if a.input || a.delegation != "" && !dropped {
			_, err := t.exec(`UPDATE artifacts SET message_id = NULL,
				delegation_id = CASE WHEN $2 THEN NULL ELSE delegation_id END WHERE id = $1`, a.id, dropped)
			if err != nil {
				return err
			}
			continue
		}
		for _, q := range []string{
			`DELETE FROM delegation_inputs WHERE artifact_id = $1`,
			// Messages that stay (a notice in another chat) no longer
			// show it.
			`DELETE FROM message_artifacts WHERE artifact_id = $1`,
		} {
			if _, err := t.exec(q, a.id); err != nil {
				return err
			}
		}
		n, err := t.exec(`DELETE FROM artifacts WHERE id = $1`, a.id)
		if err != nil {
			return err
		}
		c.Artifacts += int(n)
	}
	return nil
}

// anonymousLike is the LIKE pattern of anonymous visitors' platform IDs.
var anonymousLike = likePrefix(retention.AnonymousPrefix)

// likePrefix is the LIKE pattern of the strings that start with p.
func likePrefix(p string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(p) + "%"
}

// lastSeen is when each anonymous visitor was last seen (their last
// message, their last join of a chat or room), 0 for one with only a
// session or a delegation left; $1 is the LIKE pattern of the visitors
// to look at.
const lastSeen = `SELECT v, MAX(at) FROM (
	SELECT user_id AS v, created_at AS at FROM messages WHERE from_kind = 'human' AND user_id LIKE $1
	UNION ALL SELECT participant_id, joined_at FROM participants WHERE kind = 'user' AND participant_id LIKE $1
	UNION ALL SELECT member_id, joined_at FROM room_members WHERE member_id LIKE $1
	UNION ALL SELECT scope_id, 0 FROM sessions WHERE scope = 'user' AND scope_id LIKE $1
	UNION ALL SELECT user_id, 0 FROM delegations WHERE user_id LIKE $1
) seen GROUP BY v ORDER BY MAX(at), v`

// DeleteIdleVisitors implements retention.Store: each idle visitor is
// deleted in a transaction of their own.
func (s *Store) DeleteIdleVisitors(ctx context.Context, idleSince time.Time, listed func(string) bool) (retention.Counts, error) {
	cutoff := micros(idleSince)
	var idle []string
	err := s.pooled(ctx).each(lastSeen, []any{anonymousLike}, func(rows pgx.Rows) error {
		var v string
		var at int64
		if err := rows.Scan(&v, &at); err != nil {
			return err
		}
		if at < cutoff {
			idle = append(idle, v)
		}
		return nil
	})
	if err != nil {
		return retention.Counts{}, fmt.Errorf("store: delete idle visitors: %w", err)
	}
	var total retention.Counts
	for _, v := range idle {
		if listed(v) {
			continue
		}
		var c retention.Counts
		err := s.write(ctx, func(t *txn) error {
			c = retention.Counts{}
			return t.deleteVisitor(v, cutoff, &c)
		})
		total = total.Add(c)
		if err != nil {
			return total, fmt.Errorf("store: delete idle visitor %s: %w", v, err)
		}
	}
	return total, nil
}

// deleteVisitor deletes everything of visitor v, unless they were seen
// at cutoff or later or have work pending (then counted as skipped).
//
// Their sessions are locked first: a message of theirs arriving
// meanwhile, which locks its session before it is stored (see
// ensureSession), waits, and then finds the session and the chat gone
// and starts new ones. Their messages are locked and looked at before
// anything is deleted: one stored since the check makes them seen.
func (t *txn) deleteVisitor(v string, cutoff int64, c *retention.Counts) error {
	sess, err := t.strings(`SELECT id FROM sessions WHERE scope = 'user' AND scope_id = $1 ORDER BY bot FOR UPDATE`, v)
	if err != nil {
		return err
	}
	var msgs []int64
	seen := int64(-1) // -1: nothing of theirs is left (deleted meanwhile)
	if len(sess) > 0 {
		seen = 0 // a session alone says nothing of when they were seen
	}
	err = t.each(`SELECT id, from_kind = 'human', created_at FROM messages WHERE user_id = $1 ORDER BY id FOR UPDATE`,
		[]any{v}, func(rows pgx.Rows) error {
			var id, at int64
			var human bool
			if err := rows.Scan(&id, &human, &at); err != nil {
				return err
			}
			msgs = append(msgs, id)
			if human {
				seen = max(seen, at)
			}
			return nil
		})
	if err != nil {
		return err
	}
	var joined *int64
	if err := t.scanOne(`SELECT MAX(at) FROM (
			SELECT joined_at AS at FROM participants WHERE kind = 'user' AND participant_id = $1
			UNION ALL SELECT joined_at FROM room_members WHERE member_id = $1
			UNION ALL SELECT 0 FROM delegations WHERE user_id = $1) joins`, []any{v}, &joined); err != nil {
		return err
	}
	if joined != nil {
		seen = max(seen, *joined)
	}
	if seen < 0 {
		return nil
	}
	var busy bool
	if err := t.scanOne(`SELECT EXISTS (SELECT 1 FROM turns t JOIN messages m ON m.id = t.message_id
			JOIN sessions s ON s.id = t.session_id
			WHERE t.status = 'pending' AND (m.user_id = $1 OR s.scope = 'user' AND s.scope_id = $1))
		OR EXISTS (SELECT 1 FROM outbox o JOIN messages m ON m.id = o.message_id WHERE o.status = 'pending' AND m.user_id = $1)
		OR EXISTS (SELECT 1 FROM delegations WHERE user_id = $1 AND status IN ('queued', 'running'))`,
		[]any{v}, &busy); err != nil {
		return err
	}
	if busy || seen >= cutoff {
		c.Skipped++
		return nil
	}
	// Their messages (their own, the replies to them, their hand-offs'
	// wrappers and answers), delegations and sessions.
	doomed, err := t.strings(`SELECT id FROM delegations WHERE user_id = $1`, v)
	if err != nil {
		return err
	}
	if err := t.deleteMessages(msgs, doomed, c); err != nil {
		return err
	}
	if err := t.deleteDelegations(doomed, c); err != nil {
		return err
	}
	if err := t.deleteSessions(sess, c); err != nil {
		return err
	}
	// Their focus in group chats (SPEC §10.3).
	if _, err := t.exec(`DELETE FROM focus WHERE person = $1`, v); err != nil {
		return err
	}
	// The findings board of their private space (SPEC §10.2).
	for _, q := range []string{`DELETE FROM findings WHERE space = $1 AND created_at < $2`, `DELETE FROM stages WHERE space = $1 AND started_at < $2`} {
		if _, err := t.exec(q, "user:"+v, cutoff); err != nil {
			return err
		}
	}
	// What bots noticed about them (SPEC §10.4).
	if _, err := t.exec(`DELETE FROM insights WHERE user_id = $1 AND created_at < $2`, v, cutoff); err != nil {
		return err
	}
	// The shared context of their private space (SPEC §10.7), as its
	// findings board.
	for _, q := range []string{
		`DELETE FROM context_events WHERE space = $1 AND created_at < $2`,
		`DELETE FROM context_entities WHERE space = $1 AND updated_at < $2`,
		`DELETE FROM context_facts WHERE space = $1 AND created_at < $2`,
	} {
		if _, err := t.exec(q, "user:"+v, cutoff); err != nil {
			return err
		}
	}
	// The gossip about them (SPEC §10.5); their deliveries go with it.
	if _, err := t.exec(`DELETE FROM gossip_events WHERE user_id = $1 AND created_at < $2`, v, cutoff); err != nil {
		return err
	}
	// Their places in chats and rooms, then the chats left empty: the
	// rooms nobody else is in, their private chats.
	var chats []int64
	for _, q := range []string{
		`DELETE FROM participants WHERE kind = 'user' AND participant_id = $1 AND joined_at < $2 RETURNING conversation_id`,
		`DELETE FROM room_members WHERE member_id = $1 AND joined_at < $2 RETURNING conversation_id`,
	} {
		err := t.each(q, []any{v, cutoff}, func(rows pgx.Rows) error {
			var id int64
			err := rows.Scan(&id)
			if !slices.Contains(chats, id) {
				chats = append(chats, id)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	err = t.each(`SELECT id, chat_id FROM conversations WHERE platform = 'web' AND kind = 'private' AND chat_id LIKE $1`,
		[]any{likePrefix(v + ":")}, func(rows pgx.Rows) error {
			var id int64
			var chatID string
			if err := rows.Scan(&id, &chatID); err != nil {
				return err
			}
			// A private web chat's ID is the visitor's, a colon and the bot.
			if i := strings.LastIndexByte(chatID, ':'); chatID[:i] == v && !slices.Contains(chats, id) {
				chats = append(chats, id)
			}
			return nil
		})
	if err != nil {
		return err
	}
	slices.Sort(chats)
	for _, id := range chats {
		if err := t.dropChat(id, c); err != nil {
			return err
		}
	}
	c.Visitors++
	return nil
}

// strings returns the one text column of query's rows.
func (t *txn) strings(query string, args ...any) ([]string, error) {
	out := []string{}
	err := t.each(query, args, func(rows pgx.Rows) error {
		var s string
		err := rows.Scan(&s)
		out = append(out, s)
		return err
	})
	return out, err
}

// deleteDelegations deletes the delegations ids with their turns,
// inputs and artifacts (except those a delegation that stays takes as
// input); the delegations that stay forget them as their parent.
func (t *txn) deleteDelegations(ids []string, c *retention.Counts) error {
	if len(ids) == 0 {
		return nil
	}
	n, err := t.exec(`DELETE FROM turns WHERE delegation_id = ANY($1)`, ids)
	if err != nil {
		return err
	}
	c.Turns += int(n)
	if err := t.artifactsGo(`a.delegation_id = ANY($1)`, ids, ids, c); err != nil {
		return err
	}
	for _, q := range []string{
		`DELETE FROM delegation_inputs WHERE delegation_id = ANY($1)`,
		`UPDATE delegations SET parent_id = NULL WHERE parent_id = ANY($1) AND NOT id = ANY($1)`,
	} {
		if _, err := t.exec(q, ids); err != nil {
			return err
		}
	}
	n, err = t.exec(`DELETE FROM delegations WHERE id = ANY($1)`, ids)
	c.Delegations += int(n)
	return err
}

// deleteSessions deletes sessions with their turns and histories' links;
// the delegations asked from them forget them.
func (t *txn) deleteSessions(ids []string, c *retention.Counts) error {
	if len(ids) == 0 {
		return nil
	}
	for _, d := range []struct {
		q string
		n *int
	}{
		{`UPDATE turns SET after_turn = NULL WHERE after_turn IN (SELECT id FROM turns WHERE session_id = ANY($1))
			AND NOT session_id = ANY($1)`, nil},
		{`DELETE FROM turns WHERE session_id = ANY($1)`, &c.Turns},
		{`DELETE FROM session_messages WHERE session_id = ANY($1)`, nil},
		{`UPDATE delegations SET from_session = NULL WHERE from_session = ANY($1)`, nil},
		{`DELETE FROM sessions WHERE id = ANY($1)`, &c.Sessions},
	} {
		n, err := t.exec(d.q, ids)
		if err != nil {
			return err
		}
		if d.n != nil {
			*d.n += int(n)
		}
	}
	return nil
}

// dropChat deletes a chat that no message is left in and nobody belongs
// to any more: a room without members or people who spoke in it (with
// its group sessions and bots), a visitor's private chat.
func (t *txn) dropChat(id int64, c *retention.Counts) error {
	var used bool
	var scope string
	err := t.scanOne(`SELECT EXISTS (SELECT 1 FROM messages WHERE conversation_id = $1)
		OR EXISTS (SELECT 1 FROM room_members WHERE conversation_id = $1)
		OR (kind = 'group' AND EXISTS (SELECT 1 FROM participants WHERE conversation_id = $1 AND kind = 'user')),
		platform || ':' || chat_id
		FROM conversations WHERE id = $1`, []any{id}, &used, &scope)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && used {
		return nil
	}
	if err != nil {
		return err
	}
	// A room's group sessions go with it.
	sess, err := t.strings(`SELECT id FROM sessions WHERE scope = 'group' AND scope_id = $1`, scope)
	if err != nil {
		return err
	}
	if err := t.deleteSessions(sess, c); err != nil {
		return err
	}
	for _, q := range []string{
		`DELETE FROM platform_ids WHERE conversation_id = $1`,
		`DELETE FROM participants WHERE conversation_id = $1`,
		`DELETE FROM rooms WHERE conversation_id = $1`,
	} {
		if _, err := t.exec(q, id); err != nil {
			return err
		}
	}
	n, err := t.exec(`DELETE FROM conversations WHERE id = $1`, id)
	c.Chats += int(n)
	return err
}
