-- Which messages show which artifacts (SPEC §7: a message frame's
-- artifacts). A turn's artifacts are shown with the reply that made them
-- and, for a hand-off, with the asking bot's notice in the chat the
-- hand-off came from ("Finn Shipley finished: …"), so that the person
-- can open them where they asked. artifacts.message_id keeps its meaning:
-- the message the artifact was made with.
CREATE TABLE message_artifacts (
	message_id  INTEGER NOT NULL REFERENCES messages (id),
	artifact_id TEXT NOT NULL REFERENCES artifacts (id),
	-- The artifact's place among the message's, from 0.
	position    INTEGER NOT NULL,
	PRIMARY KEY (message_id, artifact_id)
) WITHOUT ROWID;
-- Who may read an artifact is found from the artifact.
CREATE INDEX message_artifacts_by_artifact ON message_artifacts (artifact_id);

-- Every artifact stored so far is shown with the message it was made
-- with, in the order the turn made them.
INSERT INTO message_artifacts (message_id, artifact_id, position)
SELECT message_id, id, ROW_NUMBER() OVER (PARTITION BY message_id ORDER BY rowid) - 1
FROM artifacts WHERE message_id IS NOT NULL;
