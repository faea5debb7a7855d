-- Several gateway processes ("instances") may share this database
-- (SPEC §11). Each registers here while it runs. An instance is alive
-- while it holds the session-level advisory lock lock_key on its
-- coordination connection: PostgreSQL releases the lock the moment that
-- connection ends, so a process killed with kill -9 is dead to the others
-- at once, with no clock involved. heartbeat_at and leads are what the
-- instances list shows; leads are the (bot, platform) connections the
-- instance holds.
CREATE TABLE instances (
	id           TEXT PRIMARY KEY,
	address      TEXT NOT NULL,
	lock_key     BIGINT NOT NULL,
	started_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
	heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now(),
	leads        JSONB NOT NULL DEFAULT '[]'
);

-- switchboard_alive says whether the instance id holds its lock.
CREATE FUNCTION switchboard_alive(instance TEXT) RETURNS BOOLEAN
LANGUAGE sql STABLE AS $$
	SELECT EXISTS (
		SELECT 1 FROM instances i JOIN pg_locks l
			ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND l.classid = ((i.lock_key >> 32) & 4294967295)::oid
			AND l.objid = (i.lock_key & 4294967295)::oid
		WHERE i.id = instance)
$$;

-- The instance whose connections these are, as each pooled connection
-- of a gateway sets it at connect ('' or unset: a tool such as db copy).
CREATE FUNCTION switchboard_instance() RETURNS TEXT
LANGUAGE sql STABLE AS $$
	SELECT NULLIF(current_setting('switchboard.instance', true), '')
$$;

-- A session's turns run on one instance at a time: the one holding its
-- lease, taken by the first turn it answers and given back when the
-- session has no turn left (or taken over when the holder dies).
ALTER TABLE sessions ADD COLUMN lease_owner TEXT;

-- An outbox entry is delivered by its owner, the instance that stored it,
-- until that one dies and another takes it over. NULL: anyone's.
ALTER TABLE outbox ADD COLUMN owner TEXT DEFAULT switchboard_instance();

-- What another instance may have to show its own connections is
-- announced on the channel 'switchboard' when it commits, as JSON
-- carrying IDs (the data is read from the tables): outbox entries for
-- the platforms whose deliveries go to connections held by one process
-- (the web widget and the terminal), a person's message there (which
-- counts against their message rate everywhere, and which the others in
-- a room see), a delegation that changed ("n": a new one, which the
-- others count against their hand-off limits). "i" is the instance that
-- stored it, which ignores its own.
CREATE FUNCTION switchboard_notify_outbox() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('switchboard', json_build_object('k', 'entry', 'i', COALESCE(NEW.owner, ''),
		'id', NEW.id, 'p', NEW.platform, 'c', NEW.chat_id)::text);
	RETURN NULL;
END
$$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH ROW
	WHEN (NEW.platform IN ('web', 'cli')) EXECUTE FUNCTION switchboard_notify_outbox();

CREATE FUNCTION switchboard_notify_message() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	c conversations%ROWTYPE;
BEGIN
	SELECT * INTO c FROM conversations WHERE id = NEW.conversation_id;
	IF c.platform IN ('web', 'cli') THEN
		PERFORM pg_notify('switchboard', json_build_object('k', 'message', 'i', COALESCE(switchboard_instance(), ''),
			'id', NEW.id, 'p', c.platform, 'c', c.chat_id, 'u', NEW.user_id, 'g', c.kind = 'group')::text);
	END IF;
	RETURN NULL;
END
$$;
CREATE TRIGGER messages_notify AFTER INSERT ON messages FOR EACH ROW
	WHEN (NEW.from_kind = 'human' AND NEW.conversation_id IS NOT NULL) EXECUTE FUNCTION switchboard_notify_message();

CREATE FUNCTION switchboard_notify_delegation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('switchboard', json_build_object('k', 'delegation', 'i', COALESCE(switchboard_instance(), ''),
		'd', NEW.id, 'n', TG_OP = 'INSERT')::text);
	RETURN NULL;
END
$$;
CREATE TRIGGER delegations_notify AFTER INSERT OR UPDATE ON delegations FOR EACH ROW
	EXECUTE FUNCTION switchboard_notify_delegation();
