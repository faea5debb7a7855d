-- Gossip (SPEC §10.5): news a person told one bot, as an event, and its
-- delivery queue, one row per bot due to hear it. A delivery is pending
-- until it is carried out (its memory, a system message in the
-- recipient's session with the person, is stored in the same
-- transaction) or dropped (its bot gone, or the event blocked before it
-- was carried out). An event's recipients are its delivered rows.
--
-- message_id (the message the news was heard in) declares no reference:
-- retention may delete that message first, and a reader takes an ID it
-- cannot find as none.
CREATE TABLE gossip_events (
	id         INTEGER PRIMARY KEY,
	user_id    TEXT NOT NULL,
	user_name  TEXT NOT NULL,
	source_bot TEXT NOT NULL,
	message_id INTEGER NOT NULL,
	-- The message as its platform knows it (platform, chat, platform
	-- message ID): the copies of one group message that several bots
	-- receive make one event. '' for none.
	message_key TEXT NOT NULL DEFAULT '',
	topic      TEXT NOT NULL,
	summary    TEXT NOT NULL,
	depth      INTEGER NOT NULL,
	status     TEXT NOT NULL CHECK (status = 'queued' OR status = 'delivered' OR status = 'blocked'),
	reason     TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
-- One event per message, however many bots received it.
CREATE UNIQUE INDEX gossip_events_by_key ON gossip_events (message_key) WHERE message_key <> '';
-- A person's events, for the API and retention.
CREATE INDEX gossip_events_by_user ON gossip_events (user_id, id);

CREATE TABLE gossip_deliveries (
	event_id     INTEGER NOT NULL REFERENCES gossip_events (id) ON DELETE CASCADE,
	bot          TEXT NOT NULL,
	-- The event's person, for a bot's memories of them.
	user_id      TEXT NOT NULL,
	status       TEXT NOT NULL DEFAULT 'pending' CHECK (status = 'pending' OR status = 'delivered' OR status = 'dropped'),
	reason       TEXT NOT NULL DEFAULT '',
	-- The order deliveries are made in (0 while pending).
	delivered_at INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (event_id, bot)
) WITHOUT ROWID;
-- The queue.
CREATE INDEX gossip_deliveries_pending ON gossip_deliveries (event_id) WHERE status = 'pending';
-- A bot's memories of a person, newest first.
CREATE INDEX gossip_memories ON gossip_deliveries (bot, user_id, delivered_at) WHERE status = 'delivered';
