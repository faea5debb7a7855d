-- The insights of SPEC §10.4: what a bot noticed about a person
-- (user_id: a master user ID, or the platform ID of a person users.yaml
-- does not list), found by the other bots' turns for that person through
-- the full-text index insights_fts.
CREATE TABLE insights (
	id         INTEGER PRIMARY KEY,
	user_id    TEXT NOT NULL,
	bot        TEXT NOT NULL,
	kind       TEXT NOT NULL CHECK (kind IN ('epiphany', 'diary', 'dream', 'observation')),
	text       TEXT NOT NULL,
	confidence REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
	created_at INTEGER NOT NULL
);
-- A person's insights, newest last, for listing and retention.
CREATE INDEX insights_by_user ON insights (user_id, id);

-- The full-text index of the insights, one row an insight (rowid: its
-- ID), written by the store with it: words is its text without
-- PostgreSQL's english stop words (the store leaves them out, as
-- PostgreSQL's index does; no tokenizer here knows them), split as
-- unicode61 splits text (letters and digits; accents kept, as
-- PostgreSQL keeps them) and stemmed by the porter stemmer, close to
-- PostgreSQL's english stemmer. person is the person as one token: a
-- search for words in one person's insights is a search for those words
-- AND that token, which reads the index only where that person's
-- insights are, however many other people it holds. A copy into SQLite
-- (switchboard db copy) rebuilds it.
CREATE VIRTUAL TABLE insights_fts USING fts5(
	words, person,
	tokenize = 'porter unicode61 remove_diacritics 0'
);
-- An insight deleted (forgotten, or by retention) leaves the index with
-- it.
CREATE TRIGGER insights_fts_delete AFTER DELETE ON insights BEGIN
	DELETE FROM insights_fts WHERE rowid = old.id;
END;
