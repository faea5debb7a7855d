-- Under load every message lands on its own page of each per-chat index,
-- and every such page is written to the WAL with each commit. The index
-- of messages by conversation serves one query, a group's recent
-- messages (a private chat's history is read through its session), so it
-- now holds group messages only. messages.in_group says which those are.
ALTER TABLE messages ADD COLUMN in_group INTEGER NOT NULL DEFAULT 0;
UPDATE messages SET in_group = 1
	WHERE conversation_id IN (SELECT id FROM conversations WHERE kind = 'group');
DROP INDEX messages_by_conversation;
CREATE INDEX messages_of_groups ON messages (conversation_id, id) WHERE in_group = 1;
