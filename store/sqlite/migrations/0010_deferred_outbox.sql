-- (Undone by 0011_plain.sql.)
-- An instant exchange's outbox entry is written only if its reply is not
-- delivered at once (store/deferred.go). meta's outbox_upto and
-- outbox_id_upto are the watermark past which Open looks for exchanges
-- whose entries a crash left unwritten; every exchange stored so far has
-- its entry.
INSERT INTO meta (key, value) VALUES
	('outbox_upto', (SELECT COALESCE(max(id), 0) FROM messages)),
	('outbox_id_upto', (SELECT COALESCE(max(id), 0) FROM outbox));
