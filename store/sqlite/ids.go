package sqlite

import "github.com/switchboard-chat/switchboard/sessions"

// ids remembers what the writer has looked up of rows that do not change
// once written: a conversation's ID by its key, a session's ID by its
// key, and who takes part in which conversation. Every message needs
// these, and a look-up costs more than the write it serves. The writer
// goroutine owns it; what a write learns counts once its transaction has
// committed (see txn.learn and commit).
type ids struct {
	convs    map[convKey]int64
	sessions map[sessions.Key]string
	members  map[memberKey]bool
}

type convKey struct{ platform, chat, bot string }

type memberKey struct {
	conv     int64
	kind, id string
}

func newIDs() *ids {
	return &ids{convs: make(map[convKey]int64), sessions: make(map[sessions.Key]string), members: make(map[memberKey]bool)}
}

// maxIDs bounds what ids remembers: past it, it starts afresh, and looks
// up again what it forgot.
const maxIDs = 1 << 17

// merge adds what o learned.
func (c *ids) merge(o *ids) {
	if len(c.convs)+len(c.sessions)+len(c.members) > maxIDs {
		*c = *newIDs()
	}
	for k, v := range o.convs {
		c.convs[k] = v
	}
	for k, v := range o.sessions {
		c.sessions[k] = v
	}
	for k := range o.members {
		c.members[k] = true
	}
}

// drop forgets what o holds, and who takes part in the conversations o
// holds.
func (c *ids) drop(o *ids) {
	gone := map[int64]bool{}
	for k, id := range o.convs {
		delete(c.convs, k)
		gone[id] = true
	}
	for k := range o.sessions {
		delete(c.sessions, k)
	}
	for k := range o.members {
		delete(c.members, k)
	}
	if len(gone) == 0 {
		return
	}
	for k := range c.members {
		if gone[k.conv] {
			delete(c.members, k)
		}
	}
}

// noIDs is what a transaction on a reader knows: nothing. It is never
// written.
var noIDs = newIDs()

// known is what a write may rely on: the store's ids when it runs on the
// writer, nothing on a reader.
func (t *txn) known() *ids {
	if t.tx != nil {
		return noIDs
	}
	return t.s.ids
}

// forget records that the write deleted rows ids may remember: they are
// forgotten once it ends (see Store.writeAlone).
func (t *txn) forget() *ids {
	if t.forgot == nil {
		t.forgot = newIDs()
	}
	return t.forgot
}

// learned returns the write's own ids, made when it first learns
// something.
func (t *txn) learned() *ids {
	if t.learnt == nil {
		t.learnt = newIDs()
	}
	return t.learnt
}
