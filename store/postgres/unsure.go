package postgres

import (
	"strconv"
	"sync"

	"github.com/switchboard-chat/switchboard/gateway"
)

// A COMMIT whose answer is lost (the connection broke as it ran) may
// have taken effect. The caller sees an error and tries again, and the
// second try finds the work stored: the message a duplicate, the turn
// done. It must still learn what the first try stored, or the turns that
// try queued wait unwoken and its replies undelivered until a restart.
// So the store remembers, for each write whose commit failed, what the
// write would have returned, and a later try of the same write that
// finds it stored returns that instead, once the database shows the rows
// are there.
//
// This is no cache of rows that another process could change: it holds
// only this process's own writes of unknown outcome, each used once, and
// only after the database confirms it.

// maxUnsure bounds what is remembered: past it, the oldest is dropped (a
// restart still finds everything stored).
const maxUnsure = 1024

// unsure holds the results of writes whose commit failed, by write.
type unsure struct {
	mu    sync.Mutex
	order []string
	m     map[string]any
}

// put remembers r, the result of the write named key.
func (u *unsure) put(key string, r any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[string]any{}
	}
	if _, ok := u.m[key]; !ok {
		u.order = append(u.order, key)
	}
	u.m[key] = r
	for len(u.order) > maxUnsure {
		delete(u.m, u.order[0])
		u.order = u.order[1:]
	}
}

// take returns, and forgets, the result of the write named key.
func (u *unsure) take(key string) (any, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	r, ok := u.m[key]
	delete(u.m, key)
	return r, ok
}

// turnKey names the completion of turn id.
func turnKey(id int64) string { return "turn " + strconv.FormatInt(id, 10) }

// inboundKey names the storing of a platform message, by its dedupe key.
func inboundKey(in gateway.Inbound) string {
	m := in.Message
	return "inbound\x00" + m.Platform + "\x00" + m.Bot + "\x00" + m.ChatID + "\x00" + m.PlatformMsgID
}
