package sqlite

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-chat/switchboard/retention"
)

// part is a step of a plan: some messages (a visitor's, or old ones),
// or a visitor's last step, which deletes their sessions, delegations
// and chats once their messages are gone.
type part struct {
	v     *visitor // nil for old messages
	msgs  []planMsg
	final bool
}

// writes splits p into the parts of each transaction: at most
// deleteBatch messages, and at most visitorsPerWrite last steps.
func (p *plan) writes() [][]part {
	var out [][]part
	var cur []part
	n, finals := 0, 0
	add := func(pt part) {
		cur = append(cur, pt)
		n += len(pt.msgs)
		if pt.final {
			finals++
		}
		if n >= deleteBatch || finals >= visitorsPerWrite {
			out, cur, n, finals = append(out, cur), nil, 0, 0
		}
	}
	addMsgs := func(v *visitor, msgs []planMsg) {
		for len(msgs) > 0 {
			k := min(len(msgs), deleteBatch-n)
			add(part{v: v, msgs: msgs[:k]})
			msgs = msgs[k:]
		}
	}
	addMsgs(nil, p.msgs)
	for _, v := range p.visitors {
		addMsgs(v, v.msgs)
		if v.whole {
			add(part{v: v, final: true})
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// deleter carries out the parts of one transaction.
type deleter struct {
	t *txn
	p *plan
	c *retention.Counts
	// newest is the newest message ID when the transaction before
	// this one ended: a visitor's message above it is new.
	newest int64
	// left lists the visitors this transaction left for later.
	left []string
	// checked holds the guard's answer for the transaction's visitors,
	// busy the people with a turn pending or a delegation open.
	checked map[*visitor]bool
	busy    map[string]bool
}

func (d *deleter) run(parts []part) error {
	d.checked = map[*visitor]bool{}
	for _, pt := range parts {
		if v := pt.v; v != nil {
			if v.left {
				continue
			}
			ok, err := d.guard(v)
			if err != nil {
				return err
			}
			if !ok {
				v.left = true
				d.left = append(d.left, v.id)
				d.c.Skipped++
				continue
			}
		}
		msgs := pt.msgs
		if pt.v == nil && len(msgs) > 0 {
			var err error
			if msgs, err = d.notPending(msgs); err != nil {
				return err
			}
		}
		if len(msgs) > 0 {
			if err := d.messages(msgs); err != nil {
				return err
			}
		}
		if pt.final {
			if err := d.finish(pt.v); err != nil {
				return err
			}
			d.c.Visitors++
		}
	}
	return nil
}

// guard reports whether v may still be deleted: they have not written
// since the plan, and no turn or reply of theirs is pending, no
// delegation open.
func (d *deleter) guard(v *visitor) (bool, error) {
	if ok, seen := d.checked[v]; seen {
		return ok, nil
	}
	if d.busy == nil {
		// Who has work pending, read once for the transaction's
		// visitors: the turns, outbox entries and delegations still open
		// are few, and found by their partial indexes. A reply still to
		// deliver is held by the outbox in memory, by its ID, which
		// SQLite may give a new row once the newest one is deleted.
		d.busy = map[string]bool{}
		err := d.t.each(`SELECT m.user_id, CASE WHEN s.scope = 'user' THEN s.scope_id ELSE '' END
			FROM turns t JOIN messages m ON m.id = t.message_id JOIN sessions s ON s.id = t.session_id
			WHERE t.status = 'pending'
			UNION SELECT m.user_id, '' FROM outbox o JOIN messages m ON m.id = o.message_id WHERE o.status = 'pending'
			UNION SELECT user_id, '' FROM delegations WHERE status IN ('queued', 'running')`, nil, func(sc scanner) error {
			var user, scope string
			err := sc.Scan(&user, &scope)
			d.busy[user], d.busy[scope] = true, true
			return err
		})
		if err != nil {
			return false, err
		}
	}
	back := false
	if !d.busy[v.id] {
		if err := d.t.scanOne(`SELECT EXISTS (SELECT 1 FROM messages WHERE id > ? AND user_id = ? AND from_kind = 'human')`,
			[]any{d.newest, v.id}, &back); err != nil {
			return false, err
		}
	}
	ok := !d.busy[v.id] && !back
	d.checked[v] = ok
	return ok, nil
}

// notPending drops the messages a turn still pending answers, and those
// with a reply still to deliver.
func (d *deleter) notPending(msgs []planMsg) ([]planMsg, error) {
	pending := map[int64]bool{}
	err := d.t.each(`SELECT message_id FROM turns WHERE status = 'pending' AND message_id IN (SELECT value FROM json_each(?))
		UNION SELECT message_id FROM outbox WHERE status = 'pending' AND message_id IN (SELECT value FROM json_each(?))`,
		[]any{planIDs(msgs), planIDs(msgs)}, func(sc scanner) error {
			var id int64
			err := sc.Scan(&id)
			pending[id] = true
			return err
		})
	if err != nil || len(pending) == 0 {
		return msgs, err
	}
	return slices.DeleteFunc(slices.Clone(msgs), func(m planMsg) bool { return pending[m.id] }), nil
}

// messages deletes msgs and everything that refers to them.
func (d *deleter) messages(msgs []planMsg) error {
	ids := planIDs(msgs)
	convs := map[int64]bool{}
	for _, m := range msgs {
		for _, s := range d.p.links[m.id] {
			if err := d.exec(nil, `DELETE FROM session_messages WHERE session_id = ? AND message_id = ?`, s, m.id); err != nil {
				return err
			}
		}
		if m.conv != 0 {
			convs[m.conv] = true
			if err := d.exec(nil, `DELETE FROM inbound_keys
				WHERE platform = ? AND bot = ? AND chat_id = ? AND platform_msg_id = ? AND message_id = ?`,
				m.platform, m.bot, m.chat, m.platformMsgID, m.id); err != nil {
				return err
			}
		}
		for _, id := range d.p.turnsOf[m.id] {
			if err := d.exec(&d.c.Turns, `DELETE FROM turns WHERE id = ?`, id); err != nil {
				return err
			}
		}
		for _, id := range d.p.outboxOf[m.id] {
			if err := d.exec(&d.c.Outbox, `DELETE FROM outbox WHERE id = ?`, id); err != nil {
				return err
			}
		}
		for _, a := range d.p.artifactsOf[m.id] {
			if err := d.artifact(a); err != nil {
				return err
			}
		}
	}
	// Turns and outbox entries written since the plan.
	if err := d.exec(&d.c.Turns, `DELETE FROM turns WHERE id > ? AND message_id IN (SELECT value FROM json_each(?))`,
		d.p.maxTurn, ids); err != nil {
		return err
	}
	if err := d.exec(&d.c.Outbox, `DELETE FROM outbox WHERE id > ? AND message_id IN (SELECT value FROM json_each(?))`,
		d.p.maxOutbox, ids); err != nil {
		return err
	}
	// What the messages show goes with them (an artifact they show that
	// is kept stays, shown by the messages that are).
	if err := d.exec(nil, `DELETE FROM message_artifacts WHERE message_id IN (SELECT value FROM json_each(?))`, ids); err != nil {
		return err
	}
	// A chat's platform message IDs are found by chat: a delivery since
	// the plan may have added one.
	for conv := range convs {
		if err := d.exec(nil, `DELETE FROM platform_ids
			WHERE conversation_id = ? AND message_id IN (SELECT value FROM json_each(?))`, conv, ids); err != nil {
			return err
		}
	}
	return d.exec(&d.c.Messages, `DELETE FROM messages WHERE id IN (SELECT value FROM json_each(?))`, ids)
}

// artifact deletes an artifact attached to what is being deleted, or
// detaches it from that when it is kept.
func (d *deleter) artifact(id string) error {
	pa := d.p.arts[id]
	if pa.keep {
		return d.exec(nil, `UPDATE artifacts SET message_id = CASE WHEN ? THEN NULL ELSE message_id END,
			delegation_id = CASE WHEN ? THEN NULL ELSE delegation_id END WHERE id = ?`, pa.msg, pa.deleg, id)
	}
	for _, dl := range pa.inputOf {
		if err := d.exec(nil, `DELETE FROM delegation_inputs WHERE delegation_id = ? AND artifact_id = ?`, dl, id); err != nil {
			return err
		}
	}
	// Messages that stay (a notice in another chat) no longer show it.
	if err := d.exec(nil, `DELETE FROM message_artifacts WHERE artifact_id = ?`, id); err != nil {
		return err
	}
	return d.exec(&d.c.Artifacts, `DELETE FROM artifacts WHERE id = ?`, id)
}

// finish deletes what is left of v once their messages are gone: their
// delegations, sessions, place in rooms and private chats.
func (d *deleter) finish(v *visitor) error {
	for _, dl := range v.delegations {
		for _, id := range d.p.delegTurns[dl] {
			if err := d.exec(&d.c.Turns, `DELETE FROM turns WHERE id = ?`, id); err != nil {
				return err
			}
		}
		if err := d.exec(&d.c.Turns, `DELETE FROM turns WHERE id > ? AND delegation_id = ?`, d.p.maxTurn, dl); err != nil {
			return err
		}
		for _, a := range d.p.delegArts[dl] {
			if err := d.artifact(a); err != nil {
				return err
			}
		}
		if err := d.exec(nil, `DELETE FROM delegation_inputs WHERE delegation_id = ?`, dl); err != nil {
			return err
		}
		for _, child := range d.p.children[dl] {
			if err := d.exec(nil, `UPDATE delegations SET parent_id = NULL WHERE id = ?`, child); err != nil {
				return err
			}
		}
		if err := d.exec(&d.c.Delegations, `DELETE FROM delegations WHERE id = ?`, dl); err != nil {
			return err
		}
	}
	for _, s := range v.sessions {
		if err := d.session(s); err != nil {
			return err
		}
	}
	// Their focus in group chats (SPEC §10.3).
	if err := d.exec(nil, `DELETE FROM focus WHERE person = ?`, v.id); err != nil {
		return err
	}
	// The findings board of their private space (SPEC §10.2).
	for _, q := range []string{`DELETE FROM findings WHERE space = ? AND created_at < ?`, `DELETE FROM stages WHERE space = ? AND started_at < ?`} {
		if err := d.exec(nil, q, "user:"+v.id, d.p.cutoff); err != nil {
			return err
		}
	}
	// What bots noticed about them (SPEC §10.4); a trigger takes each
	// out of the full-text index.
	if err := d.exec(nil, `DELETE FROM insights WHERE user_id = ? AND created_at < ?`, v.id, d.p.cutoff); err != nil {
		return err
	}
	// The shared context of their private space (SPEC §10.7), as its
	// findings board.
	for _, q := range []string{
		`DELETE FROM context_events WHERE space = ? AND created_at < ?`,
		`DELETE FROM context_entities WHERE space = ? AND updated_at < ?`,
		`DELETE FROM context_facts WHERE space = ? AND created_at < ?`,
	} {
		if err := d.exec(nil, q, "user:"+v.id, d.p.cutoff); err != nil {
			return err
		}
	}
	// The gossip about them (SPEC §10.5), deliveries first: foreign keys
	// are off here, so nothing cascades.
	for _, q := range []string{
		`DELETE FROM gossip_deliveries WHERE event_id IN (SELECT id FROM gossip_events WHERE user_id = ? AND created_at < ?)`,
		`DELETE FROM gossip_events WHERE user_id = ? AND created_at < ?`,
	} {
		if err := d.exec(nil, q, v.id, d.p.cutoff); err != nil {
			return err
		}
	}
	for _, r := range v.rooms {
		if err := d.exec(nil, `DELETE FROM participants
			WHERE conversation_id = ? AND kind = 'user' AND participant_id = ? AND joined_at < ?`, r, v.id, d.p.cutoff); err != nil {
			return err
		}
		if err := d.exec(nil, `DELETE FROM room_members
			WHERE conversation_id = ? AND member_id = ? AND joined_at < ?`, r, v.id, d.p.cutoff); err != nil {
			return err
		}
		d.t.forget().members[memberKey{r, "user", v.id}] = true
		if err := d.dropChat(r, d.p.roomKeys[r]); err != nil {
			return err
		}
	}
	for _, pc := range v.privates {
		if err := d.dropChat(pc.id, pc.key); err != nil {
			return err
		}
	}
	return nil
}

// session deletes a session, its history's links and its turns.
func (d *deleter) session(s planSession) error {
	for _, id := range d.p.sessionTurns[s.id] {
		if err := d.exec(&d.c.Turns, `DELETE FROM turns WHERE id = ?`, id); err != nil {
			return err
		}
	}
	if err := d.exec(&d.c.Turns, `DELETE FROM turns WHERE id > ? AND session_id = ?`, d.p.maxTurn, s.id); err != nil {
		return err
	}
	if err := d.exec(nil, `DELETE FROM session_messages WHERE session_id = ?`, s.id); err != nil {
		return err
	}
	for _, dl := range d.p.namedBy[s.id] {
		if err := d.exec(nil, `UPDATE delegations SET from_session = NULL WHERE id = ?`, dl); err != nil {
			return err
		}
	}
	d.t.forget().sessions[s.key] = ""
	return d.exec(&d.c.Sessions, `DELETE FROM sessions WHERE id = ?`, s.id)
}

// dropChat deletes a chat that no message is left in and nobody belongs
// to any more (a private chat's person is the visitor being deleted): a
// room without members, with its group sessions.
func (d *deleter) dropChat(id int64, key convKey) error {
	var used bool
	err := d.t.scanOne(`SELECT EXISTS (SELECT 1 FROM messages WHERE conversation_id = ?)
		OR EXISTS (SELECT 1 FROM room_members WHERE conversation_id = ?)
		OR EXISTS (SELECT 1 FROM conversations c JOIN participants p ON p.conversation_id = c.id
			WHERE c.id = ? AND c.kind = 'group' AND p.kind = 'user')`, []any{id, id, id}, &used)
	if err != nil || used {
		return err
	}
	for _, s := range d.p.roomSessions[id] {
		if err := d.session(s); err != nil {
			return err
		}
	}
	for _, q := range []string{
		`DELETE FROM platform_ids WHERE conversation_id = ?`,
		`DELETE FROM participants WHERE conversation_id = ?`,
		`DELETE FROM rooms WHERE conversation_id = ?`,
	} {
		if err := d.exec(nil, q, id); err != nil {
			return err
		}
	}
	d.t.forget().convs[key] = id
	return d.exec(&d.c.Chats, `DELETE FROM conversations WHERE id = ?`, id)
}

// exec runs a statement and adds the rows it changed to n, if not nil.
func (d *deleter) exec(n *int, query string, args ...any) error {
	res, err := d.t.exec(query, args...)
	if err != nil || n == nil {
		return err
	}
	k, err := res.RowsAffected()
	*n += int(k)
	return err
}

// errStop ends txn.each early, without an error.
var errStop = errors.New("stop")

// each runs fn on every row of query, until fn returns an error
// (errStop: stop, without one).
func (t *txn) each(query string, args []any, fn func(scanner) error) error {
	rows, err := t.query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return err
		}
	}
	return rows.Err()
}

// planIDs is the messages' IDs as a JSON array, for json_each.
func planIDs(msgs []planMsg) string {
	ids := make([]int64, len(msgs))
	for i, m := range msgs {
		ids[i] = m.id
	}
	return jsonInts(ids)
}

// jsonInts writes ids as a JSON array.
func jsonInts(ids []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte(']')
	return b.String()
}

// keys returns a set's members.
func keys[K comparable](m map[K]bool) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// sortVisitors orders visitors by when they were last seen, oldest
// first.
func sortVisitors(vs []*visitor, seen map[string]int64) {
	slices.SortFunc(vs, func(a, b *visitor) int {
		if c := seen[a.id] - seen[b.id]; c != 0 {
			if c < 0 {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
}
