-- Delegations (SPEC §5): every hand-off is a record with its chain
-- (parent), status, result and artifacts.
CREATE TABLE delegations (
	id               TEXT PRIMARY KEY,
	from_bot         TEXT NOT NULL,
	to_bot           TEXT NOT NULL,
	user_id          TEXT NOT NULL,
	user_name        TEXT NOT NULL DEFAULT '',
	task             TEXT NOT NULL,
	depth            INTEGER NOT NULL,
	parent_id        TEXT REFERENCES delegations (id),
	status           TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'refused')),
	result           TEXT NOT NULL DEFAULT '',
	error            TEXT NOT NULL DEFAULT '',
	origin_platform  TEXT NOT NULL DEFAULT '',
	origin_chat      TEXT NOT NULL DEFAULT '',
	origin_chat_type TEXT NOT NULL DEFAULT '',
	origin_sender    TEXT NOT NULL DEFAULT '',
	from_session     TEXT REFERENCES sessions (id),
	expected_outputs TEXT NOT NULL DEFAULT '',
	retries          INTEGER NOT NULL DEFAULT 0,
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL
);
CREATE INDEX delegations_by_user ON delegations (user_id, created_at);
CREATE INDEX delegations_open ON delegations (status) WHERE status IN ('queued', 'running');

CREATE TABLE delegation_inputs (
	delegation_id TEXT NOT NULL REFERENCES delegations (id),
	artifact_id   TEXT NOT NULL REFERENCES artifacts (id),
	position      INTEGER NOT NULL,
	PRIMARY KEY (delegation_id, artifact_id)
) WITHOUT ROWID;

ALTER TABLE turns ADD COLUMN delegation_id TEXT REFERENCES delegations (id);
ALTER TABLE messages ADD COLUMN delegation_id TEXT NOT NULL DEFAULT '';
CREATE INDEX artifacts_by_delegation ON artifacts (delegation_id) WHERE delegation_id IS NOT NULL;
CREATE INDEX messages_by_user ON messages (user_id, id) WHERE from_kind = 'human';
