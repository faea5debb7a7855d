-- Rooms belong to their members (SPEC §12). A room is a group chat that
-- Switchboard keeps itself (a web room; Telegram and Discord groups are
-- the platforms' own and have no row here): rooms says whether anyone may
-- join it or only its members, room_members who its members are. A
-- member is a person: their master user ID from users.yaml, or the
-- platform ID of a person users.yaml does not list (the gateway counts a
-- membership recorded under any of a person's IDs as theirs).
-- participants keeps its meaning: the bots of a chat, and the platform
-- IDs that spoke in it.
CREATE TABLE rooms (
	conversation_id INTEGER PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
	open            INTEGER NOT NULL CHECK (open = 0 OR open = 1),
	created_at      INTEGER NOT NULL
);

CREATE TABLE room_members (
	conversation_id INTEGER NOT NULL REFERENCES rooms (conversation_id) ON DELETE CASCADE,
	member_id       TEXT NOT NULL,
	-- The member who invited them; '' when they joined themselves (the
	-- room's creator, a joiner of an open room, a member from before
	-- rooms had members).
	invited_by      TEXT NOT NULL,
	joined_at       INTEGER NOT NULL,
	PRIMARY KEY (conversation_id, member_id)
) WITHOUT ROWID;

-- Until now every web room was open to whoever knew its name. Each
-- becomes a closed room whose members are the people who took part in it
-- (joined it or spoke in it), so none of them loses their room and
-- nobody else can read it any more; a member invites whom they want.
INSERT INTO rooms (conversation_id, open, created_at)
SELECT id, 0, created_at FROM conversations WHERE platform = 'web' AND kind = 'group';

INSERT INTO room_members (conversation_id, member_id, invited_by, joined_at)
SELECT p.conversation_id, p.participant_id, '', p.joined_at
FROM participants p JOIN rooms r ON r.conversation_id = p.conversation_id
WHERE p.kind = 'user';
