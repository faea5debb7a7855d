-- One row per message, every link written with its message.
--
-- Until now the store kept three shortcuts, undone here so that every
-- row means one thing and every table says what it holds:
--
--   * messages after meta's linked_upto might still lack their rows in
--     session_messages and inbound_keys (their sessions were listed in
--     messages.sessions until a bulk write);
--   * an exchange (a person's private message and a reply made at once)
--     could be one row of messages, the reply in its reply_* columns:
--     the row's ID was the reply's, the person's message the ID before
--     it, left free for it;
--   * such a reply's outbox row was written only if it was not delivered
--     at once, and meta's outbox_upto marked the messages after which a
--     crash may have lost one.
--
-- Everything those shortcuts left pending is written now, as the store
-- that made them would have written it when it next opened: the missing
-- links and dedupe keys, and a pending outbox row for every exchange
-- after the watermark without one (its reply is sent again: delivery is
-- at least once). Then each exchange row becomes its two messages, and
-- the tables are rebuilt without the shortcuts' columns, with their
-- references declared again.

-- The links the bulk writer had not written yet.
WITH RECURSIVE unlinked (id, rest, session_id) AS (
	SELECT id, sessions || ' ', '' FROM messages
	WHERE sessions != '' AND id > (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'linked_upto')
	UNION ALL
	SELECT id, substr(rest, instr(rest, ' ') + 1), substr(rest, 1, instr(rest, ' ') - 1)
	FROM unlinked WHERE rest != ''
)
INSERT OR IGNORE INTO session_messages (session_id, message_id)
SELECT session_id, id FROM unlinked WHERE session_id != '';

-- Only inbound messages have a platform message ID in messages.
INSERT OR IGNORE INTO inbound_keys (platform, bot, chat_id, platform_msg_id, message_id)
SELECT c.platform, m.bot, c.chat_id, m.platform_msg_id, m.id
FROM messages m JOIN conversations c ON c.id = m.conversation_id
WHERE m.platform_msg_id != '' AND m.id > (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'linked_upto');

-- Replies a crash may have left without an outbox row.
INSERT INTO outbox (message_id, platform, bot, chat_id, created_at, updated_at)
SELECT m.id, c.platform, m.bot, c.chat_id, m.reply_at, m.reply_at
FROM messages m JOIN conversations c ON c.id = m.conversation_id
WHERE m.reply_at IS NOT NULL
	AND m.id > (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'outbox_upto')
	AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.message_id = m.id)
ORDER BY m.id;

-- Each exchange row becomes two messages: the person's at the ID before
-- the row, the reply in the row itself (what names the row, its outbox
-- entry and platform IDs, names the reply). The person's message joins
-- the row's sessions and takes its dedupe key and turns.
INSERT INTO session_messages (session_id, message_id)
SELECT sm.session_id, sm.message_id - 1
FROM session_messages sm JOIN messages m ON m.id = sm.message_id
WHERE m.reply_at IS NOT NULL;

UPDATE inbound_keys SET message_id = message_id - 1
WHERE message_id IN (SELECT id FROM messages WHERE reply_at IS NOT NULL);

UPDATE turns SET message_id = message_id - 1
WHERE message_id IN (SELECT id FROM messages WHERE reply_at IS NOT NULL);

INSERT INTO messages (id, conversation_id, platform_msg_id, kind, from_kind, from_id, from_name,
	user_id, bot, text, mentions, reply_to, created_at, delegation_id, in_group, sessions)
SELECT id - 1, conversation_id, platform_msg_id, 'chat', from_kind, from_id, from_name,
	user_id, bot, text, mentions, reply_to, created_at, delegation_id, in_group, ''
FROM messages WHERE reply_at IS NOT NULL;

UPDATE messages SET
	platform_msg_id = '', from_kind = 'bot', from_id = reply_from_id, from_name = reply_from_name,
	text = reply_text, mentions = '', reply_to = platform_msg_id, created_at = reply_at
WHERE reply_at IS NOT NULL;

-- The tables rebuilt (SQLite's procedure for changes ALTER TABLE cannot
-- make: copy, drop, rename; the migrator runs it with foreign keys off
-- and checks them before committing). IDs are kept.
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
	delegation_id   TEXT NOT NULL DEFAULT ''
);
INSERT INTO messages_new (id, conversation_id, platform_msg_id, kind, from_kind, from_id, from_name,
	user_id, bot, text, mentions, reply_to, created_at, delegation_id)
SELECT id, conversation_id, platform_msg_id, kind, from_kind, from_id, from_name,
	user_id, bot, text, mentions, reply_to, created_at, delegation_id FROM messages;
DROP TABLE messages;
ALTER TABLE messages_new RENAME TO messages;
-- A chat's messages, for a group's history and reply-to look-ups.
CREATE INDEX messages_by_conversation ON messages (conversation_id, id);

CREATE TABLE session_messages_new (
	session_id TEXT NOT NULL REFERENCES sessions (id),
	message_id INTEGER NOT NULL REFERENCES messages (id),
	PRIMARY KEY (session_id, message_id)
) WITHOUT ROWID;
INSERT INTO session_messages_new (session_id, message_id)
SELECT session_id, message_id FROM session_messages;
DROP TABLE session_messages;
ALTER TABLE session_messages_new RENAME TO session_messages;

CREATE TABLE inbound_keys_new (
	platform        TEXT NOT NULL,
	bot             TEXT NOT NULL,
	chat_id         TEXT NOT NULL,
	platform_msg_id TEXT NOT NULL,
	message_id      INTEGER NOT NULL REFERENCES messages (id),
	PRIMARY KEY (platform, bot, chat_id, platform_msg_id)
) WITHOUT ROWID;
INSERT INTO inbound_keys_new (platform, bot, chat_id, platform_msg_id, message_id)
SELECT platform, bot, chat_id, platform_msg_id, message_id FROM inbound_keys;
DROP TABLE inbound_keys;
ALTER TABLE inbound_keys_new RENAME TO inbound_keys;

DELETE FROM meta WHERE key IN ('linked_upto', 'outbox_upto', 'outbox_id_upto');

-- A session's oldest unanswered turn, which its runner asks for.
CREATE INDEX turns_pending_by_session ON turns (session_id, id) WHERE status = 'pending';

-- Delegation records say what kind of request they are (a hand-off, or a
-- request for help) and carry a running delegation's newest progress
-- report ({text, step, total} as JSON, '' for none).
ALTER TABLE delegations ADD COLUMN kind TEXT NOT NULL DEFAULT 'handoff' CHECK (kind = 'handoff' OR kind = 'help');
ALTER TABLE delegations ADD COLUMN progress TEXT NOT NULL DEFAULT '';
