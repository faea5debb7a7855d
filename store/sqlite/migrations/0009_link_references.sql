-- The two indexes the link log writes in bulk (links.go, migration 0007),
-- session_messages and inbound_keys, no longer declare their references
-- to sessions and messages. Foreign keys stay on for every other table.
--
-- Their rows are derived data: the committer writes them from messages
-- it has just stored (and Open writes again those a crash left out, from
-- the messages themselves), and nothing deletes a message or a session.
-- The declared references made SQLite look up a session and a message
-- for every row written. (Migration 0011 declares them again.)
--
-- SQLite cannot drop a reference in place: each table is copied into a
-- new one without it, the old one dropped and the new one renamed, as in
-- 0006.

CREATE TABLE session_messages_new (
	session_id TEXT NOT NULL,
	message_id INTEGER NOT NULL,
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
	message_id      INTEGER NOT NULL,
	PRIMARY KEY (platform, bot, chat_id, platform_msg_id)
) WITHOUT ROWID;
INSERT INTO inbound_keys_new (platform, bot, chat_id, platform_msg_id, message_id)
	SELECT platform, bot, chat_id, platform_msg_id, message_id FROM inbound_keys;
DROP TABLE inbound_keys;
ALTER TABLE inbound_keys_new RENAME TO inbound_keys;
