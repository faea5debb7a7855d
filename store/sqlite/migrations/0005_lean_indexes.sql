-- Every index is written with every message: an index must earn its
-- keep.
-- messages_by_platform_id served no query (inbound messages are found by
-- inbound_keys, bots' messages by platform_ids); messages_by_user served
-- one rare query (where did this user last write privately), which now
-- goes through the user's sessions instead.
DROP INDEX messages_by_platform_id;
DROP INDEX messages_by_user;
CREATE INDEX sessions_of_user ON sessions (scope_id) WHERE scope = 'user';
