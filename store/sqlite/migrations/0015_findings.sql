-- The findings board of SPEC §10.2: findings posted by bots to the board
-- of a space ("user:<id>" or "chat:<platform>:<chat id>"), and the
-- stages a space runs. A finding posted during an isolated stage is
-- hidden (visible = 0) from every bot but its author until the stage
-- ends; only the running stage of a space can have hidden findings, so
-- ending it shows every hidden finding of the space.
CREATE TABLE stages (
	id         INTEGER PRIMARY KEY,
	space      TEXT NOT NULL,
	name       TEXT NOT NULL,
	isolated   INTEGER NOT NULL CHECK (isolated IN (0, 1)),
	started_at INTEGER NOT NULL,
	-- NULL while the stage runs.
	ended_at   INTEGER,
	-- The commands that started and ended it (a chat message's platform,
	-- chat and ID), so that a command delivered twice, to two bots of a
	-- group, is carried out once; '' for the API's.
	start_key  TEXT NOT NULL DEFAULT '',
	end_key    TEXT NOT NULL DEFAULT ''
);
-- At most one stage runs in a space.
CREATE UNIQUE INDEX stages_running ON stages (space) WHERE ended_at IS NULL;
CREATE UNIQUE INDEX stages_by_start_key ON stages (start_key) WHERE start_key <> '';
CREATE UNIQUE INDEX stages_by_end_key ON stages (end_key) WHERE end_key <> '';

CREATE TABLE findings (
	id         INTEGER PRIMARY KEY,
	space      TEXT NOT NULL,
	bot        TEXT NOT NULL,
	text       TEXT NOT NULL,
	severity   TEXT NOT NULL CHECK (severity IN ('low', 'medium', 'high', 'critical')),
	-- The name of the stage it was posted in, '' for none.
	stage      TEXT NOT NULL DEFAULT '',
	visible    INTEGER NOT NULL CHECK (visible IN (0, 1)),
	created_at INTEGER NOT NULL
);
-- A space's newest findings, for prompts and the board.
CREATE INDEX findings_by_space ON findings (space, id);
-- A space's hidden findings, which a release shows.
CREATE INDEX findings_hidden ON findings (space) WHERE visible = 0;
