package store

import "sync"

// idCache remembers rows that never change once written — a chat's
// conversation ID, who takes part in it, a session's ID — so the hot path
// does not ask SQLite again. Entries are added only after the transaction
// that wrote (or read) them commits, so a rolled-back write is never
// remembered. The cache is bounded by the number of chats, participants
// and sessions, which the database holds anyway.
type idCache struct {
	convs    sync.Map // convKey → int64
	members  sync.Map // memberKey → struct{}
	sessions sync.Map // gateway.SessionKey → session ID
}

type convKey struct{ platform, chat, bot string }

type memberKey struct {
	conv     int64
	kind, id string
}
