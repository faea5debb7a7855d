-- (Undone by 0011_plain.sql.)
-- An instant exchange (a person's message in a private chat and the
-- reply a brain made at once, stored together: Store.AppendAnswered) is
-- one row of messages instead of two messages, a done turn and their
-- session links. The row is the person's message, with the reply in the
-- reply_* columns; it is the reply's ID, and the person's message has
-- the ID before it, which the committer leaves free for it. Readers of
-- messages serve such a row as the two messages (store/exchanges.go).
-- The reply's other fields are the row's: its chat, its bot (the
-- chat's), its user, and reply_to the person's platform message ID.
-- Everything that names the exchange (the session link, the dedupe key,
-- the reply's outbox entry and platform IDs) names the row.

ALTER TABLE messages ADD COLUMN reply_at INTEGER;
ALTER TABLE messages ADD COLUMN reply_from_id TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN reply_from_name TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN reply_text TEXT NOT NULL DEFAULT '';
