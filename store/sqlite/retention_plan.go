package sqlite

import (
	"slices"
	"strings"

	"github.com/switchboard-chat/switchboard/retention"
	"github.com/switchboard-chat/switchboard/sessions"
)

// plan is what one round of deletion deletes, read from one snapshot.
type plan struct {
	// cutoff (Unix µs): a visitor's place in a room is deleted only if
	// they joined it before.
	cutoff int64
	// The snapshot's newest IDs: rows above them were written since.
	maxMsg, maxTurn, maxOutbox int64
	// truncated says the plan holds only the first planMessages
	// messages; another plan follows.
	truncated bool

	// visitors are the idle anonymous visitors to delete, oldest first
	// (DeleteIdleVisitors); msgs the old messages (DeleteMessagesBefore).
	visitors []*visitor
	msgs     []planMsg

	// What refers to the messages, sessions and delegations to delete.
	links        map[int64][]string // message → sessions whose history holds it
	turnsOf      map[int64][]int64  // message → its turns
	sessionTurns map[string][]int64 // session → its turns
	outboxOf     map[int64][]int64  // message → its outbox entries
	artifactsOf  map[int64][]string // message → artifacts attached to it
	delegArts    map[string][]string
	delegTurns   map[string][]int64
	// arts says what to do with each of those artifacts.
	arts map[string]*planArtifact
	// children and namedBy are others' delegations that name a deleted
	// delegation as their parent, or a deleted session as theirs.
	children map[string][]string
	namedBy  map[string][]string
	// roomSessions are a room's group sessions, deleted with the room,
	// and roomKeys its key.
	roomSessions map[int64][]planSession
	roomKeys     map[int64]convKey
}

// visitor is an idle anonymous visitor and everything of theirs.
type visitor struct {
	id string
	// msgs are their messages (their own and the replies to them).
	msgs        []planMsg
	sessions    []planSession
	delegations []string
	privates    []planConv // their private chats
	rooms       []int64    // the rooms they joined or spoke in before the cutoff
	// whole says msgs holds every message of theirs the snapshot has:
	// their sessions and chats may be deleted once msgs are.
	whole bool
	// left is set once they are left for a later call.
	left bool
}

type planMsg struct {
	id, conv                           int64
	platform, chat, bot, platformMsgID string
}

// planArtifact is what happens to an artifact attached to a message or
// delegation being deleted.
type planArtifact struct {
	// keep: a delegation that stays made it or takes it as input; it is
	// detached from the message (msg) and delegation (deleg) deleted.
	keep, msg, deleg bool
	// inputOf lists the delegations being deleted that take it as
	// input.
	inputOf []string
}

type planSession struct {
	id  string
	key sessions.Key
}

type planConv struct {
	id  int64
	key convKey
}

func newPlan(cutoff int64) *plan {
	return &plan{
		cutoff: cutoff, links: map[int64][]string{}, turnsOf: map[int64][]int64{}, sessionTurns: map[string][]int64{},
		outboxOf: map[int64][]int64{}, artifactsOf: map[int64][]string{}, delegArts: map[string][]string{},
		delegTurns: map[string][]int64{}, arts: map[string]*planArtifact{}, children: map[string][]string{},
		namedBy: map[string][]string{}, roomSessions: map[int64][]planSession{}, roomKeys: map[int64]convKey{},
	}
}

// anonymous is the GLOB pattern of anonymous visitors' platform IDs.
const anonymous = retention.AnonymousPrefix + "*"

// planVisitors plans the deletion of the anonymous visitors last seen
// (their last message, their last join of a room) before cutoff, except
// the listed ones and those in skip.
func (t *txn) planVisitors(cutoff int64, listed func(string) bool, skip map[string]bool) (*plan, error) {
	p := newPlan(cutoff)
	if err := t.watermarks(p); err != nil {
		return nil, err
	}
	// When each visitor was last seen; 0 for a visitor with only a
	// session or a delegation left.
	seen := map[string]int64{}
	see := func(id string, at int64) {
		if at > seen[id] {
			seen[id] = at
		} else if _, ok := seen[id]; !ok {
			seen[id] = at
		}
	}
	var joins []struct {
		conv    int64
		visitor string
		at      int64
	}
	err := t.each(`SELECT user_id, MAX(created_at) FROM messages
		WHERE from_kind = 'human' AND user_id GLOB ? GROUP BY user_id`, []any{anonymous}, func(sc scanner) error {
		var id string
		var at int64
		err := sc.Scan(&id, &at)
		see(id, at)
		return err
	})
	if err == nil {
		err = t.each(`SELECT conversation_id, participant_id, joined_at FROM participants
			WHERE kind = 'user' AND participant_id GLOB ?`, []any{anonymous}, func(sc scanner) error {
			var j struct {
				conv    int64
				visitor string
				at      int64
			}
			err := sc.Scan(&j.conv, &j.visitor, &j.at)
			see(j.visitor, j.at)
			joins = append(joins, j)
			return err
		})
	}
	if err == nil {
		// Room memberships (migration 0012): joining a room counts as
		// being seen, like speaking in it.
		err = t.each(`SELECT conversation_id, member_id, joined_at FROM room_members
			WHERE member_id GLOB ?`, []any{anonymous}, func(sc scanner) error {
			var j struct {
				conv    int64
				visitor string
				at      int64
			}
			err := sc.Scan(&j.conv, &j.visitor, &j.at)
			see(j.visitor, j.at)
			joins = append(joins, j)
			return err
		})
	}
	if err == nil {
		err = t.each(`SELECT scope_id FROM sessions WHERE scope = 'user' AND scope_id GLOB ?
			UNION SELECT user_id FROM delegations WHERE user_id GLOB ?`, []any{anonymous, anonymous}, func(sc scanner) error {
			var id string
			err := sc.Scan(&id)
			see(id, 0)
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	idle := map[string]*visitor{}
	for id, at := range seen {
		if at < cutoff && !skip[id] && !listed(id) {
			idle[id] = &visitor{id: id, whole: true}
		}
	}
	if len(idle) == 0 {
		return p, nil
	}
	for _, j := range joins {
		if v := idle[j.visitor]; v != nil && j.at < cutoff && !slices.Contains(v.rooms, j.conv) {
			v.rooms = append(v.rooms, j.conv)
		}
	}

	// Their messages, in ID order, up to planMessages.
	msgs := map[int64]bool{}
	n := 0
	err = t.each(`SELECT m.id, m.user_id, COALESCE(m.conversation_id, 0), COALESCE(c.platform, ''), COALESCE(c.chat_id, ''),
		m.bot, m.platform_msg_id FROM messages m LEFT JOIN conversations c ON c.id = m.conversation_id
		WHERE m.user_id GLOB ? ORDER BY m.id`, []any{anonymous}, func(sc scanner) error {
		var m planMsg
		var user string
		if err := sc.Scan(&m.id, &user, &m.conv, &m.platform, &m.chat, &m.bot, &m.platformMsgID); err != nil {
			return err
		}
		v := idle[user]
		if v == nil {
			return nil
		}
		if n >= planMessages {
			p.truncated, v.whole = true, false
			return nil
		}
		v.msgs = append(v.msgs, m)
		msgs[m.id] = true
		n++
		return nil
	})
	if err != nil {
		return nil, err
	}

	// Their sessions, private chats and delegations.
	doomedSessions := map[string]bool{}
	err = t.each(`SELECT id, bot, scope_id FROM sessions WHERE scope = 'user' AND scope_id GLOB ?`, []any{anonymous}, func(sc scanner) error {
		var ps planSession
		ps.key.Scope = sessions.ScopeUser
		if err := sc.Scan(&ps.id, &ps.key.Bot, &ps.key.ScopeID); err != nil {
			return err
		}
		if v := idle[ps.key.ScopeID]; v != nil {
			v.sessions = append(v.sessions, ps)
			doomedSessions[ps.id] = true
		}
		return nil
	})
	if err == nil {
		err = t.each(`SELECT id, chat_id, bot FROM conversations
			WHERE platform = 'web' AND kind = 'private' AND chat_id GLOB ?`, []any{anonymous}, func(sc scanner) error {
			pc := planConv{key: convKey{platform: "web"}}
			if err := sc.Scan(&pc.id, &pc.key.chat, &pc.key.bot); err != nil {
				return err
			}
			if i := strings.LastIndexByte(pc.key.chat, ':'); i > 0 {
				if v := idle[pc.key.chat[:i]]; v != nil {
					v.privates = append(v.privates, pc)
				}
			}
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	// The rooms they joined, with their group sessions: deleted with a
	// room left empty.
	rooms := map[int64]bool{}
	for _, v := range idle {
		for _, r := range v.rooms {
			rooms[r] = true
		}
	}
	if len(rooms) > 0 {
		scopes := map[string]int64{} // group scope ID → room
		err = t.each(`SELECT id, platform, chat_id FROM conversations
			WHERE kind = 'group' AND id IN (SELECT value FROM json_each(?))`, []any{jsonInts(keys(rooms))}, func(sc scanner) error {
			var id int64
			var platform, chat string
			if err := sc.Scan(&id, &platform, &chat); err != nil {
				return err
			}
			scopes[platform+":"+chat] = id
			p.roomKeys[id] = convKey{platform: platform, chat: chat}
			return nil
		})
		if err == nil && len(scopes) > 0 {
			err = t.each(`SELECT id, bot, scope_id FROM sessions WHERE scope = 'group'`, nil, func(sc scanner) error {
				ps := planSession{key: sessions.Key{Scope: sessions.ScopeGroup}}
				if err := sc.Scan(&ps.id, &ps.key.Bot, &ps.key.ScopeID); err != nil {
					return err
				}
				if room, ok := scopes[ps.key.ScopeID]; ok {
					p.roomSessions[room] = append(p.roomSessions[room], ps)
					doomedSessions[ps.id] = true
				}
				return nil
			})
		}
		if err != nil {
			return nil, err
		}
	}
	for _, v := range idle {
		// Their private chats' participations go with the chats.
		v.rooms = slices.DeleteFunc(v.rooms, func(r int64) bool { _, ok := p.roomKeys[r]; return !ok })
	}
	doomedDelegations := map[string]bool{}
	err = t.each(`SELECT id, user_id, COALESCE(parent_id, ''), COALESCE(from_session, '') FROM delegations`, nil, func(sc scanner) error {
		var id, user, parent, from string
		if err := sc.Scan(&id, &user, &parent, &from); err != nil {
			return err
		}
		if v := idle[user]; v != nil {
			v.delegations = append(v.delegations, id)
			doomedDelegations[id] = true
			return nil
		}
		if parent != "" {
			p.children[parent] = append(p.children[parent], id)
		}
		if doomedSessions[from] {
			p.namedBy[from] = append(p.namedBy[from], id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Only the children of doomed delegations matter.
	for parent := range p.children {
		if !doomedDelegations[parent] {
			delete(p.children, parent)
		}
	}
	if err := t.planReferences(p, msgs, doomedSessions, doomedDelegations); err != nil {
		return nil, err
	}
	for _, v := range idle {
		p.visitors = append(p.visitors, v)
	}
	sortVisitors(p.visitors, seen)
	return p, nil
}

// planMessages plans the deletion of the messages with IDs above after
// stored with a time before cutoff, up to planMessages of them, except
// those with a turn still pending or a reply still to deliver.
func (t *txn) planMessages(cutoff, after int64) (*plan, error) {
	p := newPlan(cutoff)
	if err := t.watermarks(p); err != nil {
		return nil, err
	}
	pending := map[int64]bool{}
	err := t.each(`SELECT message_id FROM turns WHERE status = 'pending'
		UNION SELECT message_id FROM outbox WHERE status = 'pending'`, nil, func(sc scanner) error {
		var id int64
		err := sc.Scan(&id)
		pending[id] = true
		return err
	})
	if err != nil {
		return nil, err
	}
	msgs := map[int64]bool{}
	err = t.each(`SELECT m.id, COALESCE(m.conversation_id, 0), COALESCE(c.platform, ''), COALESCE(c.chat_id, ''),
		m.bot, m.platform_msg_id FROM messages m LEFT JOIN conversations c ON c.id = m.conversation_id
		WHERE m.id > ? AND m.created_at < ? ORDER BY m.id`, []any{after, cutoff}, func(sc scanner) error {
		var m planMsg
		if err := sc.Scan(&m.id, &m.conv, &m.platform, &m.chat, &m.bot, &m.platformMsgID); err != nil {
			return err
		}
		if len(p.msgs) >= planMessages {
			p.truncated = true
			return errStop
		}
		if !pending[m.id] {
			p.msgs = append(p.msgs, m)
			msgs[m.id] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, t.planReferences(p, msgs, nil, nil)
}

// watermarks reads the snapshot's newest IDs.
func (t *txn) watermarks(p *plan) error {
	return t.scanOne(`SELECT (SELECT COALESCE(MAX(id), 0) FROM messages), (SELECT COALESCE(MAX(id), 0) FROM turns),
		(SELECT COALESCE(MAX(id), 0) FROM outbox)`, nil, &p.maxMsg, &p.maxTurn, &p.maxOutbox)
}

// planReferences finds what refers to the messages, sessions and
// delegations to delete: session links, turns, outbox entries and
// artifacts. None of these references has an index: each table is
// scanned once.
func (t *txn) planReferences(p *plan, msgs map[int64]bool, doomedSessions, doomedDelegations map[string]bool) error {
	err := t.each(`SELECT session_id, message_id FROM session_messages`, nil, func(sc scanner) error {
		var s string
		var m int64
		if err := sc.Scan(&s, &m); err != nil {
			return err
		}
		if msgs[m] {
			p.links[m] = append(p.links[m], s)
		}
		return nil
	})
	if err == nil {
		err = t.each(`SELECT id, message_id, session_id, COALESCE(delegation_id, '') FROM turns`, nil, func(sc scanner) error {
			var id, m int64
			var s, d string
			if err := sc.Scan(&id, &m, &s, &d); err != nil {
				return err
			}
			if msgs[m] {
				p.turnsOf[m] = append(p.turnsOf[m], id)
			}
			if doomedSessions[s] {
				p.sessionTurns[s] = append(p.sessionTurns[s], id)
			}
			if doomedDelegations[d] {
				p.delegTurns[d] = append(p.delegTurns[d], id)
			}
			return nil
		})
	}
	if err == nil {
		err = t.each(`SELECT id, message_id FROM outbox`, nil, func(sc scanner) error {
			var id, m int64
			if err := sc.Scan(&id, &m); err != nil {
				return err
			}
			if msgs[m] {
				p.outboxOf[m] = append(p.outboxOf[m], id)
			}
			return nil
		})
	}
	inputOf := map[string][]string{} // artifact → delegations taking it as input
	if err == nil {
		err = t.each(`SELECT delegation_id, artifact_id FROM delegation_inputs`, nil, func(sc scanner) error {
			var d, a string
			err := sc.Scan(&d, &a)
			inputOf[a] = append(inputOf[a], d)
			return err
		})
	}
	if err == nil {
		err = t.each(`SELECT id, COALESCE(message_id, 0), COALESCE(delegation_id, '') FROM artifacts`, nil, func(sc scanner) error {
			var id, d string
			var m int64
			if err := sc.Scan(&id, &m, &d); err != nil {
				return err
			}
			pa := &planArtifact{msg: msgs[m], deleg: doomedDelegations[d]}
			switch {
			case pa.msg:
				p.artifactsOf[m] = append(p.artifactsOf[m], id)
			case pa.deleg:
				p.delegArts[d] = append(p.delegArts[d], id)
			default:
				return nil
			}
			p.arts[id] = pa
			pa.keep = d != "" && !pa.deleg
			for _, in := range inputOf[id] {
				if doomedDelegations[in] {
					pa.inputOf = append(pa.inputOf, in)
				} else {
					pa.keep = true
				}
			}
			return nil
		})
	}
	return err
}
