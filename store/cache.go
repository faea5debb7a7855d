package store

import "github.com/switchboard-chat/switchboard/gateway"

// idCache remembers rows that never change once written — a chat's
// conversation ID, who takes part in it, a session's ID — so the hot path
// does not ask SQLite again. Entries are added only after the transaction
// that wrote (or read) them commits, so a rolled-back write is never
// remembered. The cache is bounded by the number of chats, participants
// and sessions, which the database holds anyway.
//
// Only the committer uses it — inside writes and their onStored
// callbacks — so its maps need no lock.
type idCache struct {
	convs    map[convKey]int64
	members  map[memberKey]struct{}
	sessions map[gateway.SessionKey]string
}

func newIDCache() idCache {
	return idCache{
		convs:    make(map[convKey]int64),
		members:  make(map[memberKey]struct{}),
		sessions: make(map[gateway.SessionKey]string),
	}
}

type convKey struct{ platform, chat, bot string }

type memberKey struct {
	conv     int64
	kind, id string
}
