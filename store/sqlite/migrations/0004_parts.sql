-- Long replies are split to the platform's length limit and sent as
-- several platform messages: the outbox remembers how many parts went out,
-- and every part's platform ID maps back to the stored message (so a reply
-- to any part addresses the bot that wrote it).
ALTER TABLE outbox ADD COLUMN parts_sent INTEGER NOT NULL DEFAULT 0;

CREATE TABLE platform_ids (
	conversation_id INTEGER NOT NULL REFERENCES conversations (id),
	platform_msg_id TEXT NOT NULL,
	message_id      INTEGER NOT NULL REFERENCES messages (id),
	PRIMARY KEY (conversation_id, platform_msg_id)
) WITHOUT ROWID;
