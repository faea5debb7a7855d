package store

import (
	"context"
	"database/sql"
	"strings"

	"github.com/switchboard-chat/switchboard/gateway"
)

// An instant exchange, a person's message and the reply a brain made at
// once (AppendAnswered), is stored as one row of messages (migration
// 0008): the person's message, with the reply in its reply_* columns.
// The row's ID is the reply's, and the person's message has the ID before
// it, which the committer leaves free (lastID). Whatever names the
// exchange, its session link, its dedupe key, the reply's outbox entry,
// names the row. Readers serve the row as its two messages.
//
// The reply's other fields are the person's message's: its chat, its bot
// (a private chat's), its user, and it replies to the message's platform
// ID. exchangePost says which replies qualify.

// exchangeColumns is the select list, after messageColumns or
// historyColumns, that exchangeReply scans.
const exchangeColumns = `m.reply_at, m.reply_from_id, m.reply_from_name, m.reply_text`

// exchangeReply is the reply of an exchange's row; at is NULL for any
// other row.
type exchangeReply struct {
	at               sql.NullInt64
	fromID, fromName string
	text             string
}

func (r *exchangeReply) dest() []any { return []any{&r.at, &r.fromID, &r.fromName, &r.text} }

// reply is the reply of the row whose person's message is m, as the row
// read it (m.ID the row's).
func (r *exchangeReply) reply(m gateway.Message) gateway.Message {
	return gateway.Message{
		ID: m.ID, Platform: m.Platform, ChatID: m.ChatID, ChatType: m.ChatType, Kind: gateway.KindChat,
		From:   gateway.Party{Kind: "bot", ID: r.fromID, Name: r.fromName},
		UserID: m.UserID, Bot: m.Bot, Text: r.text, ReplyTo: m.PlatformMsgID, Time: fromMicros(r.at.Int64),
	}
}

// appendParts appends the messages of a row read as m, oldest first: m,
// or an exchange's person's message and reply.
func (r *exchangeReply) appendParts(dst []gateway.Message, m gateway.Message) []gateway.Message {
	if !r.at.Valid {
		return append(dst, m)
	}
	reply := r.reply(m)
	m.ID--
	return append(dst, m, reply)
}

// scanRow scans a row of messageColumns and exchangeColumns.
func scanRow(row scanner) (gateway.Message, exchangeReply, error) {
	var r exchangeReply
	m, err := scanMessage(aroundScanner{row, nil, r.dest()})
	return m, r, err
}

// exchangePost is the reply of c when the exchange of in and c can be
// stored as one row (ok false otherwise): a reply of one message to the
// person's chat, with nothing else to store. Any other answer is stored
// as its own messages.
func exchangePost(in gateway.Inbound, c gateway.Completion) (reply gateway.Message, ok bool) {
	if len(c.Posts) != 1 || len(c.Delegations) > 0 || len(c.Artifacts) > 0 || len(c.Notes) > 0 ||
		c.Update != nil || c.Retry != "" || c.ResumeID != "" {
		return gateway.Message{}, false
	}
	p, ev := c.Posts[0], in.Event
	m := p.Message
	ok = ev.ChatType == gateway.ChatPrivate && !ev.Sender.IsBot &&
		p.Session == c.Session && m.Kind == gateway.KindChat && m.DelegationID == "" && len(m.Mentions) == 0 &&
		m.Platform == ev.Platform && m.ChatID == ev.ChatID && m.ChatType == ev.ChatType &&
		m.From.Kind == "bot" && m.From.ID == ev.Bot && m.Bot == ev.Bot &&
		m.UserID == in.UserID && m.ReplyTo == ev.MessageID
	if !ok {
		return gateway.Message{}, false
	}
	return m, true
}

// insertExchange stores the exchange of m, the person's message, and
// reply as one row and returns the row's ID; m's is the one before it.
func insertExchange(tx *txn, conv int64, m gateway.Message, reply gateway.Message, session string) (int64, error) {
	row := tx.s.lastID + 2
	err := tx.c.run(`INSERT INTO messages (id, conversation_id, platform_msg_id, kind, from_kind,
		from_id, from_name, user_id, bot, text, mentions, reply_to, created_at, sessions,
		reply_at, reply_from_id, reply_from_name, reply_text)
		VALUES (?, ?, ?, 'chat', 'human', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		row, conv, m.PlatformMsgID, m.From.ID, m.From.Name, m.UserID, m.Bot, m.Text,
		strings.Join(m.Mentions, " "), m.ReplyTo, micros(m.Time), session,
		micros(reply.Time), reply.From.ID, reply.From.Name, reply.Text)
	if err != nil {
		return 0, err
	}
	tx.s.lastID = row
	return row, nil
}

// completeExchange stores what completes an exchange stored as row: the
// reply's outbox entry (deferred), and the session's touch.
func (s *SQLite) completeExchange(ctx context.Context, tx *txn, c gateway.Completion, reply gateway.Message, row int64, out *gateway.Completed, now int64) error {
	reply.ID = row
	o := outbound(reply)
	// The entry gets its row only if it needs one (deferred.go).
	o.OutboxID = s.deferOutbox(o, now)
	out.Outbox = append(out.Outbox, o)
	completed(tx, c, out)
	return s.touchSession(ctx, tx, c, now)
}

// appendExchange stores m, a person's message, and reply as an exchange's
// row (appendInbound's end for one): the row's dedupe key and session
// link name the row, and the session's window gains both messages.
func (s *SQLite) appendExchange(tx *txn, conv int64, m, reply gateway.Message, session string, key inboundKey, res *gateway.InboundResult) error {
	row, err := insertExchange(tx, conv, m, reply, session)
	if err != nil {
		return err
	}
	m.ID, reply.ID = row-1, row
	keyMessage(tx, key, row)
	s.links.stage(logEntry{session: session, message: row})
	tx.onLinked(session, &m)
	tx.onLinked(session, &reply)
	res.Message = m
	res.Turns = append(res.Turns, gateway.TurnRef{SessionID: session})
	return nil
}
