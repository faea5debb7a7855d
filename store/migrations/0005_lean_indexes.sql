-- Every index is written with every message, and under load each write
-- lands on a different page of it. messages_by_platform_id served no
-- query: inbound messages are found by inbound_keys, bots' messages by
-- platform_ids.
DROP INDEX messages_by_platform_id;
