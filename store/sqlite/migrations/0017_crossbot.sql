-- Bot-to-bot chains in group chats (SPEC §10.6). One row per group chat
-- that a bot's message was judged in: its latest chain (chain counts
-- them), the chain's status and steps, and what judging the next bot
-- message needs: the newest bot message judged (mark; a person's message
-- after it ends the chain), the current burst of one bot's messages and
-- the bots it woke (space-separated IDs), and the number of draws made.
-- Times are Unix microseconds, 0 for none. version grows with every
-- write: a judgement is stored only over the version it read. The rows
-- hold bot IDs and numbers only, nothing of a person.
CREATE TABLE crossbot_chains (
	platform    TEXT NOT NULL,
	chat_id     TEXT NOT NULL,
	chain       INTEGER NOT NULL,
	status      TEXT NOT NULL,
	steps       INTEGER NOT NULL,
	started_at  INTEGER NOT NULL,
	last_at     INTEGER NOT NULL,
	mark        INTEGER NOT NULL,
	burst_bot   TEXT NOT NULL,
	burst_at    INTEGER NOT NULL,
	burst_first INTEGER NOT NULL,
	burst_woke  TEXT NOT NULL,
	draws       INTEGER NOT NULL,
	version     INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	PRIMARY KEY (platform, chat_id)
) WITHOUT ROWID;

-- A turn that answers a bot's message as a chain step: its step (the
-- chain's length with it) and whether it is the closing one. NULL for
-- every other turn; the columns go with their turn.
ALTER TABLE turns ADD COLUMN chain_step INTEGER;
ALTER TABLE turns ADD COLUMN chain_closing INTEGER;
