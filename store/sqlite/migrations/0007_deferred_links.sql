-- (Undone by 0011_plain.sql.)
-- A session's history is the index session_messages, keyed by session.
-- Every message lands on its own page of it (sessions are many, their
-- messages interleave), and every such page is written to
-- the WAL with each commit: two pages per exchange, the inbound message
-- and its reply, each in its own commit.
--
-- The links are now written in bulk, about once a second, in session
-- order, so a busy session's links share one page write. Until then a
-- message carries its sessions itself (messages.sessions, space-separated
-- session IDs), and meta's linked_upto is the last message ID whose links
-- are all in session_messages: at start the store re-links the messages
-- after it, which a crash may have left unlinked.

ALTER TABLE messages ADD COLUMN sessions TEXT NOT NULL DEFAULT '';
INSERT INTO meta (key, value) VALUES ('linked_upto', (SELECT COALESCE(max(id), 0) FROM messages));
