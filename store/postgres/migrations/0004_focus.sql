-- Focus (SPEC §10.3): in a group chat, a person's unaddressed messages
-- go to the bot they focused. One row per person (a platform ID) and
-- chat; seen_at (Unix microseconds) is when they last spoke there or
-- focused, and a focus older than a day is over (the gateway judges it;
-- the row stays until replaced, ended or deleted by retention with its
-- visitor).
CREATE TABLE focus (
	platform TEXT NOT NULL,
	chat_id  TEXT NOT NULL,
	person   TEXT NOT NULL,
	bot      TEXT NOT NULL,
	seen_at  BIGINT NOT NULL,
	PRIMARY KEY (platform, chat_id, person)
);
CREATE INDEX focus_by_person ON focus (person);
