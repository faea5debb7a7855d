-- Switchboard's first schema: chats, their participants, messages, the
-- sessions that group messages per (bot, scope), the durable turn queue and
-- the outbox. Times are Unix microseconds (UTC).

CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value BLOB NOT NULL
);

-- A conversation is one chat on one platform: a private chat or a group.
-- A private chat belongs to one bot: on Telegram a person's private chats
-- with two bots share the chat ID (the person's ID), so the bot is part of
-- the key ('' for groups).
CREATE TABLE conversations (
	id         INTEGER PRIMARY KEY,
	platform   TEXT NOT NULL,
	chat_id    TEXT NOT NULL,
	bot        TEXT NOT NULL DEFAULT '',
	kind       TEXT NOT NULL CHECK (kind IN ('private', 'group')),
	name       TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	UNIQUE (platform, chat_id, bot)
);

CREATE TABLE participants (
	conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	kind            TEXT NOT NULL CHECK (kind IN ('user', 'bot')),
	participant_id  TEXT NOT NULL,
	joined_at       INTEGER NOT NULL,
	PRIMARY KEY (conversation_id, kind, participant_id)
);

CREATE TABLE sessions (
	id         TEXT PRIMARY KEY,
	bot        TEXT NOT NULL,
	scope      TEXT NOT NULL CHECK (scope IN ('user', 'group')),
	scope_id   TEXT NOT NULL,
	resume_id  TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	UNIQUE (bot, scope, scope_id)
);

-- Messages of chats (kind 'chat') and session-only messages: delegation
-- wrappers and system notes, which have no conversation.
CREATE TABLE messages (
	id              INTEGER PRIMARY KEY,
	conversation_id INTEGER REFERENCES conversations (id),
	platform_msg_id TEXT NOT NULL DEFAULT '',
	kind            TEXT NOT NULL CHECK (kind IN ('chat', 'wrapper', 'system')),
	from_kind       TEXT NOT NULL CHECK (from_kind IN ('human', 'bot', 'system')),
	from_id         TEXT NOT NULL,
	from_name       TEXT NOT NULL,
	user_id         TEXT NOT NULL DEFAULT '',
	bot             TEXT NOT NULL DEFAULT '',
	text            TEXT NOT NULL,
	mentions        TEXT NOT NULL DEFAULT '',
	reply_to        TEXT NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL
);
CREATE INDEX messages_by_conversation ON messages (conversation_id, id);
CREATE INDEX messages_by_platform_id ON messages (conversation_id, platform_msg_id)
	WHERE platform_msg_id != '';

-- Dedupe: a platform message is identified by (platform, bot, chat, id).
CREATE TABLE inbound_keys (
	platform        TEXT NOT NULL,
	bot             TEXT NOT NULL,
	chat_id         TEXT NOT NULL,
	platform_msg_id TEXT NOT NULL,
	message_id      INTEGER NOT NULL REFERENCES messages (id),
	PRIMARY KEY (platform, bot, chat_id, platform_msg_id)
) WITHOUT ROWID;

CREATE TABLE session_messages (
	session_id TEXT NOT NULL REFERENCES sessions (id),
	message_id INTEGER NOT NULL REFERENCES messages (id),
	PRIMARY KEY (session_id, message_id)
) WITHOUT ROWID;

-- The durable session queue: one row per bot answer owed.
CREATE TABLE turns (
	id         INTEGER PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions (id),
	message_id INTEGER NOT NULL REFERENCES messages (id),
	text       TEXT NOT NULL,
	status     TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done')),
	reply_id   INTEGER REFERENCES messages (id),
	created_at INTEGER NOT NULL,
	done_at    INTEGER
);
CREATE INDEX turns_pending ON turns (id) WHERE status = 'pending';

CREATE TABLE outbox (
	id              INTEGER PRIMARY KEY,
	message_id      INTEGER NOT NULL REFERENCES messages (id),
	platform        TEXT NOT NULL,
	bot             TEXT NOT NULL,
	chat_id         TEXT NOT NULL,
	status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
	attempts        INTEGER NOT NULL DEFAULT 0,
	last_error      TEXT NOT NULL DEFAULT '',
	platform_msg_id TEXT NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
);
CREATE INDEX outbox_pending ON outbox (id) WHERE status = 'pending';

CREATE TABLE artifacts (
	id            TEXT PRIMARY KEY,
	name          TEXT NOT NULL,
	media_type    TEXT NOT NULL,
	size          INTEGER NOT NULL,
	sha256        TEXT NOT NULL,
	producer      TEXT NOT NULL,
	content       BLOB NOT NULL,
	message_id    INTEGER REFERENCES messages (id),
	delegation_id TEXT,
	created_at    INTEGER NOT NULL
);
