-- Two changes that make every message cheaper to write.
--
-- A CHECK (x IN ('a', 'b', 'c')) costs a temporary table every time a row
-- is written: SQLite codes a constant IN list of more than two values as
-- an ephemeral index, built and torn down per row, and the teardown hands
-- memory back to the OS. messages (two such checks), outbox and
-- delegations are rebuilt with the same checks written as comparisons.
--
-- Every message lands on its own page of each per-chat index, and every
-- such page is written to the WAL with each commit. The index
-- of messages by conversation served one query, a group's recent
-- messages (a private chat's history is read through its session), so it
-- now holds group messages only: messages.in_group says which those are.
--
-- SQLite cannot alter a CHECK in place: each table is copied into a new
-- one, the old one dropped and the new one renamed (SQLite's documented
-- procedure; the migrator runs it with foreign keys off and checks them
-- before committing). IDs are kept, so every reference still holds.

CREATE TABLE messages_new (
	id              INTEGER PRIMARY KEY,
	conversation_id INTEGER REFERENCES conversations (id),
	platform_msg_id TEXT NOT NULL DEFAULT '',
	kind            TEXT NOT NULL CHECK (kind = 'chat' OR kind = 'wrapper' OR kind = 'system'),
	from_kind       TEXT NOT NULL CHECK (from_kind = 'human' OR from_kind = 'bot' OR from_kind = 'system'),
	from_id         TEXT NOT NULL,
	from_name       TEXT NOT NULL,
	user_id         TEXT NOT NULL DEFAULT '',
	bot             TEXT NOT NULL DEFAULT '',
	text            TEXT NOT NULL,
	mentions        TEXT NOT NULL DEFAULT '',
	reply_to        TEXT NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	delegation_id   TEXT NOT NULL DEFAULT '',
	in_group        INTEGER NOT NULL DEFAULT 0
);
INSERT INTO messages_new (id, conversation_id, platform_msg_id, kind, from_kind, from_id, from_name,
	user_id, bot, text, mentions, reply_to, created_at, delegation_id, in_group)
SELECT id, conversation_id, platform_msg_id, kind, from_kind, from_id, from_name,
	user_id, bot, text, mentions, reply_to, created_at, delegation_id,
	conversation_id IN (SELECT id FROM conversations WHERE kind = 'group') FROM messages;
DROP TABLE messages;
ALTER TABLE messages_new RENAME TO messages;
CREATE INDEX messages_of_groups ON messages (conversation_id, id) WHERE in_group = 1;

CREATE TABLE outbox_new (
	id              INTEGER PRIMARY KEY,
	message_id      INTEGER NOT NULL REFERENCES messages (id),
	platform        TEXT NOT NULL,
	bot             TEXT NOT NULL,
	chat_id         TEXT NOT NULL,
	status          TEXT NOT NULL DEFAULT 'pending' CHECK (status = 'pending' OR status = 'sent' OR status = 'failed'),
	attempts        INTEGER NOT NULL DEFAULT 0,
	last_error      TEXT NOT NULL DEFAULT '',
	platform_msg_id TEXT NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	parts_sent      INTEGER NOT NULL DEFAULT 0
);
INSERT INTO outbox_new (id, message_id, platform, bot, chat_id, status, attempts, last_error,
	platform_msg_id, created_at, updated_at, parts_sent)
SELECT id, message_id, platform, bot, chat_id, status, attempts, last_error,
	platform_msg_id, created_at, updated_at, parts_sent FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_new RENAME TO outbox;
CREATE INDEX outbox_pending ON outbox (id) WHERE status = 'pending';

CREATE TABLE delegations_new (
	id               TEXT PRIMARY KEY,
	from_bot         TEXT NOT NULL,
	to_bot           TEXT NOT NULL,
	user_id          TEXT NOT NULL,
	user_name        TEXT NOT NULL DEFAULT '',
	task             TEXT NOT NULL,
	depth            INTEGER NOT NULL,
	parent_id        TEXT REFERENCES delegations (id),
	status           TEXT NOT NULL CHECK (status = 'queued' OR status = 'running' OR status = 'done'
		OR status = 'failed' OR status = 'refused'),
	result           TEXT NOT NULL DEFAULT '',
	error            TEXT NOT NULL DEFAULT '',
	origin_platform  TEXT NOT NULL DEFAULT '',
	origin_chat      TEXT NOT NULL DEFAULT '',
	origin_chat_type TEXT NOT NULL DEFAULT '',
	origin_sender    TEXT NOT NULL DEFAULT '',
	from_session     TEXT REFERENCES sessions (id),
	expected_outputs TEXT NOT NULL DEFAULT '',
	retries          INTEGER NOT NULL DEFAULT 0,
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL
);
INSERT INTO delegations_new (id, from_bot, to_bot, user_id, user_name, task, depth, parent_id,
	status, result, error, origin_platform, origin_chat, origin_chat_type, origin_sender, from_session,
	expected_outputs, retries, created_at, updated_at)
SELECT id, from_bot, to_bot, user_id, user_name, task, depth, parent_id,
	status, result, error, origin_platform, origin_chat, origin_chat_type, origin_sender, from_session,
	expected_outputs, retries, created_at, updated_at FROM delegations;
DROP TABLE delegations;
ALTER TABLE delegations_new RENAME TO delegations;
CREATE INDEX delegations_by_user ON delegations (user_id, created_at);
CREATE INDEX delegations_open ON delegations (status) WHERE status IN ('queued', 'running');
