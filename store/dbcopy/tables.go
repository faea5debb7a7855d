package dbcopy

// table is one table of the stores' schema, as both stores have it: the
// columns copied, in the order they are read and written.
type table struct {
	name string
	cols []string
	// bools are the columns that are BOOLEAN on PostgreSQL and 0 or 1 on
	// SQLite.
	bools []string
	// objects are the columns that are JSONB on PostgreSQL and TEXT on
	// SQLite, each a JSON object.
	objects []string
	// order is the ORDER BY of the source's rows; sqliteOrder, when set,
	// replaces it on SQLite.
	order, sqliteOrder string
	// identity is the column whose sequence a PostgreSQL target moves
	// past the copied values, "" for none.
	identity string
}

// tables lists the schema in an order in which every row is written
// after the rows it refers to (a delegation's parent aside: see
// copyTable).
var tables = []table{
	{name: "meta", cols: []string{"key", "value"}, order: "key"},
	{name: "conversations", cols: []string{"id", "platform", "chat_id", "bot", "kind", "name", "created_at"},
		order: "id", identity: "id"},
	// A room lists its bots in the order they joined: the rows are copied
	// in that order (SQLite's rowid, PostgreSQL's seq), which the target
	// keeps.
	{name: "participants", cols: []string{"conversation_id", "kind", "participant_id", "joined_at"},
		order: "seq", sqliteOrder: "rowid", identity: "seq"},
	{name: "sessions", cols: []string{"id", "bot", "scope", "scope_id", "resume_id", "created_at", "updated_at"},
		order: "created_at, id"},
	{name: "messages", cols: []string{"id", "conversation_id", "platform_msg_id", "kind", "from_kind", "from_id",
		"from_name", "user_id", "bot", "text", "mentions", "reply_to", "created_at", "delegation_id", "reply_to_id", "failed"},
		bools: []string{"failed"}, order: "id", identity: "id"},
	{name: "inbound_keys", cols: []string{"platform", "bot", "chat_id", "platform_msg_id", "message_id"},
		order: "message_id, platform, bot, chat_id, platform_msg_id"},
	{name: "session_messages", cols: []string{"session_id", "message_id"}, order: "session_id, message_id"},
	{name: "delegations", cols: []string{"id", "kind", "from_bot", "to_bot", "user_id", "user_name", "task", "depth",
		"parent_id", "status", "result", "error", "progress", "origin_platform", "origin_chat", "origin_chat_type",
		"origin_sender", "from_session", "expected_outputs", "retries", "created_at", "updated_at", "space", "ended_at"},
		order: "created_at, id"},
	{name: "artifacts", cols: []string{"id", "name", "media_type", "size", "sha256", "producer", "content",
		"message_id", "delegation_id", "created_at"}, order: "created_at, id"},
	{name: "delegation_inputs", cols: []string{"delegation_id", "artifact_id", "position"}, order: "delegation_id, position"},
	{name: "message_artifacts", cols: []string{"message_id", "artifact_id", "position"}, order: "message_id, position"},
	{name: "turns", cols: []string{"id", "session_id", "message_id", "text", "status", "reply_id", "created_at",
		"done_at", "after_turn", "delegation_id", "chain_step", "chain_closing"}, bools: []string{"chain_closing"},
		order: "id", identity: "id"},
	{name: "outbox", cols: []string{"id", "message_id", "platform", "bot", "chat_id", "status", "attempts",
		"last_error", "platform_msg_id", "parts_sent", "created_at", "updated_at"}, order: "id", identity: "id"},
	{name: "platform_ids", cols: []string{"conversation_id", "platform_msg_id", "message_id"},
		order: "conversation_id, platform_msg_id"},
	{name: "rooms", cols: []string{"conversation_id", "open", "created_at"}, bools: []string{"open"},
		order: "conversation_id"},
	{name: "room_members", cols: []string{"conversation_id", "member_id", "invited_by", "joined_at"},
		order: "conversation_id, member_id"},
	// Focus in group chats (SPEC §10.3).
	{name: "focus", cols: []string{"platform", "chat_id", "person", "bot", "seen_at"}, order: "platform, chat_id, person"},
	// The findings board (SPEC §10.2).
	{name: "stages", cols: []string{"id", "space", "name", "isolated", "started_at", "ended_at", "start_key", "end_key"},
		bools: []string{"isolated"}, order: "id", identity: "id"},
	{name: "findings", cols: []string{"id", "space", "bot", "text", "severity", "stage", "visible", "created_at"},
		bools: []string{"visible"}, order: "id", identity: "id"},
	// Insights (SPEC §10.4). A SQLite target's full-text index of them
	// is the store's to write: Copy rebuilds it.
	{name: "insights", cols: []string{"id", "user_id", "bot", "kind", "text", "confidence", "created_at"},
		order: "id", identity: "id"},
	// Bot-to-bot chains in group chats (SPEC §10.6).
	{name: "crossbot_chains", cols: []string{"platform", "chat_id", "chain", "status", "steps", "started_at", "last_at",
		"mark", "burst_bot", "burst_at", "burst_first", "burst_woke", "draws", "version", "updated_at"},
		bools: []string{"burst_first"}, order: "platform, chat_id"},
	// Gossip (SPEC §10.5).
	{name: "gossip_events", cols: []string{"id", "user_id", "user_name", "source_bot", "message_id", "message_key", "topic", "summary",
		"depth", "status", "reason", "created_at", "updated_at"}, order: "id", identity: "id"},
	{name: "gossip_deliveries", cols: []string{"event_id", "bot", "user_id", "status", "reason", "delivered_at"},
		order: "event_id, bot"},
	// The shared context (SPEC §10.7); the artifact chain is the
	// delegations'.
	{name: "context_events", cols: []string{"id", "space", "bot", "text", "created_at"}, order: "id", identity: "id"},
	{name: "context_entities", cols: []string{"space", "name", "attributes", "updated_by", "updated_at"},
		objects: []string{"attributes"}, order: "space, name"},
	{name: "context_facts", cols: []string{"space", "subject", "predicate", "object", "confidence", "bot", "created_at"},
		order: "space, subject, predicate"},
}
