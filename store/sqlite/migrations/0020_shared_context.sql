-- The shared context of SPEC §10.7: what the bots working in a space
-- ("user:<id>" or "chat:<platform>:<chat id>") agree on. Events are its
-- timeline; entities are named things whose attributes (a JSON object,
-- in the written form of shared.CanonicalAttributes) each add_entity
-- merges key by key; facts are statements with a confidence, one per
-- subject and predicate, the newest replacing the one before.
CREATE TABLE context_events (
	id         INTEGER PRIMARY KEY,
	space      TEXT NOT NULL,
	bot        TEXT NOT NULL,
	text       TEXT NOT NULL,
	created_at INTEGER NOT NULL
);
-- A space's newest events.
CREATE INDEX context_events_by_space ON context_events (space, id);

CREATE TABLE context_entities (
	space      TEXT NOT NULL,
	name       TEXT NOT NULL,
	attributes TEXT NOT NULL,
	updated_by TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (space, name)
);
-- A space's most recently updated entities.
CREATE INDEX context_entities_by_space ON context_entities (space, updated_at, name);

CREATE TABLE context_facts (
	space      TEXT NOT NULL,
	subject    TEXT NOT NULL,
	predicate  TEXT NOT NULL,
	object     TEXT NOT NULL,
	confidence REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
	bot        TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (space, subject, predicate)
);
-- A space's newest facts.
CREATE INDEX context_facts_by_space ON context_facts (space, created_at);

-- A delegation's space is where its work is done ('' for the records
-- stored before spaces); ended_at is when its status became final (NULL
-- until then; the records already final ended when last updated). A
-- space's artifact chain is its finished hand-offs in the order they
-- ended.
ALTER TABLE delegations ADD COLUMN space TEXT NOT NULL DEFAULT '';
ALTER TABLE delegations ADD COLUMN ended_at INTEGER;
UPDATE delegations SET ended_at = updated_at WHERE status = 'done' OR status = 'failed' OR status = 'refused';
CREATE INDEX delegations_chain ON delegations (space, ended_at, id)
	WHERE kind = 'handoff' AND (status = 'done' OR status = 'failed');
