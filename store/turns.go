package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

// timeNow is the store's clock for rows the gateway gives no time for.
var timeNow = time.Now

// PendingTurns implements gateway.Store.
func (s *SQLite) PendingTurns(ctx context.Context) ([]gateway.TurnRef, error) {
	rows, err := s.query(ctx, `SELECT id, session_id, COALESCE(after_turn, 0) FROM turns WHERE status = 'pending' ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: pending turns: %w", err)
	}
	defer rows.Close()
	var out []gateway.TurnRef
	for rows.Next() {
		var t gateway.TurnRef
		if err := rows.Scan(&t.ID, &t.SessionID, &t.After); err != nil {
			return nil, fmt.Errorf("store: pending turns: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// LoadTurn implements gateway.Store.
func (s *SQLite) LoadTurn(ctx context.Context, turnID int64, historyLimit int) (gateway.TurnData, error) {
	s.recent.want(historyLimit)
	for pass := range 2 {
		d, delegation, st := s.recent.turn(turnID, historyLimit)
		if st == turnHit {
			if delegation != "" {
				del, err := s.GetDelegation(ctx, delegation)
				if err != nil {
					return d, fmt.Errorf("store: load turn %d: %w", turnID, err)
				}
				d.Delegation = &del
			}
			return d, nil
		}
		if st != windowMissing || pass > 0 {
			break
		}
		if err := s.loadWindow(ctx, d.Ref.SessionID); err != nil {
			return d, fmt.Errorf("store: load turn %d: %w", turnID, err)
		}
	}
	return s.loadTurn(ctx, turnID, historyLimit)
}

// PeekSession implements gateway.Store from the recent cache alone.
func (s *SQLite) PeekSession(key gateway.SessionKey, historyLimit int) (gateway.TurnData, int64, bool) {
	s.recent.want(historyLimit)
	sess, hist, latest, ok := s.recent.peek(key, historyLimit)
	if !ok {
		return gateway.TurnData{}, 0, false
	}
	return gateway.TurnData{Ref: gateway.TurnRef{SessionID: sess.ID}, Session: sess, History: hist}, latest, true
}

// loadTurn is LoadTurn from SQLite.
func (s *SQLite) loadTurn(ctx context.Context, turnID int64, historyLimit int) (gateway.TurnData, error) {
	var d gateway.TurnData
	var delegation sql.NullString
	// The turn, its session and its message in one read.
	row := s.queryRow(ctx, `SELECT t.text, COALESCE(t.after_turn, 0), t.delegation_id,
		s.id, s.bot, s.scope, s.scope_id, s.resume_id, s.created_at, s.updated_at, `+messageColumns+`
		FROM turns t JOIN sessions s ON s.id = t.session_id JOIN messages m ON m.id = t.message_id
		LEFT JOIN conversations c ON c.id = m.conversation_id WHERE t.id = ?`, turnID)
	var created, updated int64
	var mentions, chatType string
	var at int64
	m := &d.Message
	err := row.Scan(&d.Text, &d.Ref.After, &delegation,
		&d.Session.ID, &d.Session.Key.Bot, &d.Session.Key.Scope, &d.Session.Key.ScopeID, &d.Session.ResumeID, &created, &updated,
		&m.ID, &m.Platform, &m.ChatID, &chatType, &m.PlatformMsgID, &m.Kind,
		&m.From.Kind, &m.From.ID, &m.From.Name, &m.UserID, &m.Bot, &m.Text, &mentions, &m.ReplyTo, &at, &m.DelegationID)
	if err != nil {
		return d, fmt.Errorf("store: load turn %d: %w", turnID, notFound(err))
	}
	d.Ref.ID, d.Ref.SessionID = turnID, d.Session.ID
	d.Session.CreatedAt, d.Session.UpdatedAt = fromMicros(created), fromMicros(updated)
	m.ChatType, m.Time = gateway.ChatType(chatType), fromMicros(at)
	if mentions != "" {
		m.Mentions = strings.Split(mentions, " ")
	}
	msgID := m.ID
	if delegation.Valid {
		del, err := s.GetDelegation(ctx, delegation.String)
		if err != nil {
			return d, fmt.Errorf("store: load turn %d: %w", turnID, err)
		}
		d.Delegation = &del
	}
	if d.History, err = s.history(ctx, d.Ref.SessionID, msgID, historyLimit); err != nil {
		return d, fmt.Errorf("store: load turn %d history: %w", turnID, err)
	}
	return d, nil
}

// historyColumns is the select list appendHistory reads, from a session's
// messages m: what a brain is shown of its history (kind, author, text
// and time), as the recent cache's windows hold it too.
const historyColumns = `m.id, m.kind, m.from_kind, m.from_id, m.from_name, m.user_id, m.bot, m.text, m.created_at, ` + exchangeColumns

// appendHistory scans a row of historyColumns onto dst, newest first (as
// the history is read): its message, or an exchange's reply and then its
// person's message.
func appendHistory(dst []gateway.Message, row scanner) ([]gateway.Message, error) {
	var m gateway.Message
	var at int64
	var r exchangeReply
	err := row.Scan(append([]any{&m.ID, &m.Kind, &m.From.Kind, &m.From.ID, &m.From.Name, &m.UserID, &m.Bot, &m.Text, &at}, r.dest()...)...)
	if err != nil {
		return dst, err
	}
	m.Time = fromMicros(at)
	n := len(dst)
	dst = r.appendParts(dst, m)
	slices.Reverse(dst[n:])
	return dst, nil
}

// history reads the last limit messages of a session before the message
// being answered (and any later bot or system message), oldest first.
func (s *SQLite) history(ctx context.Context, session string, msgID int64, limit int) ([]gateway.Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	if err := s.linkedSession(ctx, session); err != nil {
		return nil, err
	}
	// (An exchange's row after the message is its person's message and
	// a bot's reply: read, and the person's part dropped below.)
	rows, err := s.query(ctx, `SELECT `+historyColumns+`
		FROM session_messages sm JOIN messages m ON m.id = sm.message_id
		WHERE sm.session_id = ? AND sm.message_id != ? AND (sm.message_id < ? OR m.from_kind != 'human' OR m.reply_at IS NOT NULL)
		ORDER BY sm.message_id DESC LIMIT ?`, session, msgID, msgID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []gateway.Message
	for rows.Next() {
		if out, err = appendHistory(out, rows); err != nil {
			return nil, err
		}
	}
	out = slices.DeleteFunc(out, func(m gateway.Message) bool { return m.ID > msgID && m.From.Kind == "human" })
	// (An exchange's row is two messages.)
	out = out[:min(len(out), limit)]
	slices.Reverse(out)
	return out, rows.Err()
}

// CompleteTurn implements gateway.Store. Completing a turn that is already
// done changes nothing and returns nothing, so a turn re-run after a crash
// is answered once.
func (s *SQLite) CompleteTurn(ctx context.Context, c gateway.Completion) (gateway.Completed, error) {
	var out gateway.Completed
	err := s.tx(ctx, func(tx *txn) error {
		out = gateway.Completed{}
		return s.completeTurn(ctx, tx, c, &out, micros(timeNow()), false)
	})
	if err != nil {
		return gateway.Completed{}, fmt.Errorf("store: complete turn %d: %w", c.Turn.ID, err)
	}
	return out, nil
}

// AppendAnswered implements gateway.Store: appendInbound and completeTurn
// in one transaction, the turn stored done.
func (s *SQLite) AppendAnswered(ctx context.Context, in gateway.Inbound, c gateway.Completion, latest int64) (gateway.InboundResult, gateway.Completed, error) {
	if len(in.Turns) != 1 {
		return gateway.InboundResult{}, gateway.Completed{}, fmt.Errorf("store: append answered: %d turns, want 1", len(in.Turns))
	}
	// The write's inputs and outcome, in one struct, used again by later
	// calls: once the write is answered, the committer holds nothing of
	// it that it will use again (its callbacks ran before, and copied what
	// they keep; its closure may linger in the finished batch, never
	// called).
	w := answeredWrites.Get().(*answeredWrite)
	w.in, w.c, w.latest = in, c, latest
	defer func() {
		*w = answeredWrite{}
		answeredWrites.Put(w)
	}()
	err := s.txIntake(ctx, func(tx *txn) error {
		w.res, w.out = gateway.InboundResult{}, gateway.Completed{}
		// The session's newest message: committed ones are in its window
		// (their callbacks ran before this batch), and the ones written
		// earlier in this batch wait in the link log. A session with a
		// pending turn is stale too: the turn came first. A stale answer
		// writes nothing and fails nothing: the batch it is in commits.
		newest, cached := s.recent.latest(w.c.Session)
		if ids := s.links.links[w.c.Session]; len(ids) > 0 {
			newest = max(newest, ids[len(ids)-1])
		}
		if w.stale = !cached || newest != w.latest; w.stale {
			return nil
		}
		now := micros(timeNow())
		// A reply to the person's chat and nothing else is stored with
		// the message, as one row (exchanges.go).
		var reply *gateway.Message
		if post, ok := exchangePost(w.in, w.c); ok {
			reply = &post
		}
		if err := s.appendInbound(ctx, tx, w.in, &w.res, now, reply); err != nil || w.res.Duplicate {
			return err
		}
		if sid := w.res.Turns[0].SessionID; sid != w.c.Session {
			return fmt.Errorf("the answer was made in session %s, the message's is %s", w.c.Session, sid)
		}
		c := w.c
		c.Turn = w.res.Turns[0]
		w.res.Turns = nil // done: nothing to queue
		if reply != nil {
			return s.completeExchange(ctx, tx, c, *reply, w.res.Message.ID+1, &w.out, now)
		}
		return s.completeTurn(ctx, tx, c, &w.out, now, true)
	})
	switch {
	case err != nil:
		return gateway.InboundResult{}, gateway.Completed{}, fmt.Errorf("store: append answered: %w", err)
	case w.stale:
		return gateway.InboundResult{}, gateway.Completed{}, fmt.Errorf("store: append answered: %w", gateway.ErrStale)
	case w.res.Duplicate:
		return w.res, gateway.Completed{}, nil
	}
	return w.res, w.out, nil
}

// answeredWrite is AppendAnswered's write: its inputs and outcome.
type answeredWrite struct {
	in     gateway.Inbound
	c      gateway.Completion
	latest int64
	res    gateway.InboundResult
	out    gateway.Completed
	stale  bool
}

// answeredWrites keeps answeredWrites for the next calls: one was about
// a sixth of the bytes an instant exchange allocated.
var answeredWrites = sync.Pool{New: func() any { return new(answeredWrite) }}

// completeTurn is CompleteTurn inside tx at now; closed says the turn was
// stored done already (AppendAnswered).
func (s *SQLite) completeTurn(ctx context.Context, tx *txn, c gateway.Completion, out *gateway.Completed, now int64, closed bool) error {
	// A completion without a turn settles a delegation (after a
	// restart); it has no turn to check or close.
	var delegation string
	if c.Turn.ID != 0 && !closed {
		// Closed first: a turn already done (or unknown) writes
		// nothing more. (turns.reply_id is no longer written: nothing
		// read it, and it cost a statement per turn.)
		res, err := tx.ExecContext(ctx, `UPDATE turns SET status = 'done', done_at = ? WHERE id = ? AND status = 'pending'`, now, c.Turn.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			var status string
			return notFound(tx.QueryRowContext(ctx, `SELECT status FROM turns WHERE id = ?`, c.Turn.ID).Scan(&status))
		}
	}
	if c.Turn.ID != 0 && len(c.Artifacts) > 0 {
		// Artifacts belong to the turn's delegation too.
		var d sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT delegation_id FROM turns WHERE id = ?`, c.Turn.ID).Scan(&d); err != nil {
			return err
		}
		delegation = d.String
	}
	// Hand-offs first, so the posts that mention them can carry their
	// status.
	for _, d := range c.Delegations {
		ref, err := startDelegation(ctx, tx, d, now)
		if err != nil {
			return err
		}
		if ref.ID != 0 {
			out.Turns = append(out.Turns, ref)
		}
	}
	for i, p := range c.Posts {
		o, err := post(ctx, tx, p, now)
		if err != nil {
			return err
		}
		if i == 0 {
			if err := insertArtifacts(ctx, tx, c.Artifacts, o.MessageID, delegation, now); err != nil {
				return err
			}
		}
		out.Outbox = append(out.Outbox, o)
	}
	if len(c.Posts) == 0 && len(c.Artifacts) > 0 {
		if err := insertArtifacts(ctx, tx, c.Artifacts, 0, delegation, now); err != nil {
			return err
		}
	}
	for _, n := range c.Notes {
		if err := note(ctx, tx, n); err != nil {
			return err
		}
	}
	if c.Update != nil {
		if err := updateDelegation(ctx, tx, *c.Update, now); err != nil {
			return err
		}
	}
	if c.Retry != "" {
		// (RETURNING would build a temporary table.)
		res, err := tx.ExecContext(ctx, `INSERT INTO turns (session_id, message_id, text, delegation_id, created_at)
				SELECT session_id, message_id, ?, delegation_id, ? FROM turns WHERE id = ?`,
			c.Retry, now, c.Turn.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("retry of turn %d: %d rows, %v", c.Turn.ID, n, err)
		}
		tid, err := res.LastInsertId()
		if err != nil {
			return err
		}
		out.Turns = append(out.Turns, gateway.TurnRef{ID: tid, SessionID: c.Session})
	}
	completed(tx, c, out)
	if c.Turn.ID == 0 {
		return nil
	}
	return s.touchSession(ctx, tx, c, now)
}

// completed hands out, what c's write stored, to c's callback once it
// commits.
func completed(tx *txn, c gateway.Completion, out *gateway.Completed) {
	if onStored := c.OnStored; onStored != nil {
		stored := *out
		tx.onStored(func() { onStored(stored) })
	}
}

// touchSession records that c's turn is done in its session: its
// resume ID, and its updated_at. (An exchange stored as one row has no
// turn ID: its turn was never queued.)
func (s *SQLite) touchSession(ctx context.Context, tx *txn, c gateway.Completion, now int64) error {
	// A session's updated_at moves with every turn, but is written at
	// most every touchEvery (10 s): a busy session would otherwise
	// update its row, on a page of its own, with every message.
	touch := c.ResumeID != "" || s.recent.stale(c.Session, now)
	turn, session, resume := c.Turn.ID, c.Session, c.ResumeID
	tx.onStored(func() { s.recent.doneTurn(turn, session, resume, now, touch) })
	if c.ResumeID != "" {
		_, err := tx.ExecContext(ctx, `UPDATE sessions SET resume_id = ?, updated_at = ? WHERE id = ?`, c.ResumeID, now, c.Session)
		return err
	}
	if touch {
		_, err := tx.ExecContext(ctx, `UPDATE sessions SET updated_at = ? WHERE id = ?`, now, c.Session)
		return err
	}
	return nil
}

// post stores a message in its chat (and session) and queues it in the
// outbox.
func post(ctx context.Context, tx *txn, p gateway.Post, now int64) (gateway.Outbound, error) {
	m := p.Message
	conv, _, err := ensureConversation(ctx, tx, m.Platform, m.ChatID, m.Bot, m.ChatType, "", now)
	if err != nil {
		return gateway.Outbound{}, err
	}
	if err := addParticipant(ctx, tx, conv, "bot", m.Bot, now); err != nil {
		return gateway.Outbound{}, err
	}
	id, err := insertMessage(ctx, tx, conv, m, p.Session)
	if err != nil {
		return gateway.Outbound{}, err
	}
	m.ID = id
	if p.Session != "" {
		linkMessage(tx, p.Session, &m)
	}
	o := outbound(m)
	if o.OutboxID, err = insertOutbox(tx, o, now); err != nil {
		return gateway.Outbound{}, err
	}
	if m.DelegationID != "" {
		if o.Delegation, err = delegationRef(ctx, tx, m.DelegationID); err != nil {
			return gateway.Outbound{}, err
		}
	}
	return o, nil
}

// outbound is the outbox entry of m, a stored message (its ID set).
func outbound(m gateway.Message) gateway.Outbound {
	return gateway.Outbound{
		MessageID: m.ID, Platform: m.Platform, Bot: m.Bot, ChatID: m.ChatID, ChatType: m.ChatType,
		From: m.From, Text: m.Text, ReplyTo: m.ReplyTo, Time: m.Time,
	}
}

// insertOutbox queues o, whose message is stored, in the outbox.
func insertOutbox(tx *txn, o gateway.Outbound, now int64) (int64, error) {
	// The committer gives out the IDs: deferred entries (deferred.go)
	// hold theirs before they have rows.
	r := tx.s.newOutboxRow(o, now)
	return r.id, r.insert(tx)
}

// note stores a session-only message.
func note(ctx context.Context, tx *txn, n gateway.Note) error {
	m := n.Message
	id, err := insertMessage(ctx, tx, 0, m, n.Session)
	if err != nil {
		return err
	}
	m.ID = id
	linkMessage(tx, n.Session, &m)
	return nil
}

func insertArtifacts(ctx context.Context, tx *txn, arts []gateway.ArtifactRecord, msgID int64, delegation string, now int64) error {
	var msg, del any
	if msgID != 0 {
		msg = msgID
	}
	if delegation != "" {
		del = delegation
	}
	for _, a := range arts {
		if _, err := tx.ExecContext(ctx, `INSERT INTO artifacts (id, name, media_type, size, sha256, producer, content, message_id, delegation_id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, a.Name, a.MediaType, a.Size, a.SHA256, a.Producer, a.Content, msg, del, now); err != nil {
			return err
		}
	}
	return nil
}

// PendingOutbox implements gateway.Store.
func (s *SQLite) PendingOutbox(ctx context.Context) ([]gateway.Outbound, error) {
	// Delivery marks still waiting to be committed go first, and the
	// rows of the entries deferred (deferred.go). Entries are listed in
	// their messages' order (that of their commits): one refiled after a
	// crash has a newer ID than the replies stored after it.
	if err := s.tx(ctx, s.flushAllDeferred); err != nil {
		return nil, fmt.Errorf("store: pending outbox: %w", err)
	}
	rows, err := s.query(ctx, `SELECT o.id, o.attempts, o.parts_sent, `+messageColumns+`, `+exchangeColumns+`
		FROM outbox o JOIN messages m ON m.id = o.message_id LEFT JOIN conversations c ON c.id = m.conversation_id
		WHERE o.status = 'pending' ORDER BY o.message_id, o.id`)
	if err != nil {
		return nil, fmt.Errorf("store: pending outbox: %w", err)
	}
	defer rows.Close()
	var out []gateway.Outbound
	for rows.Next() {
		var id int64
		var attempt, partsSent int
		var r exchangeReply
		m, err := scanMessage(aroundScanner{rows, []any{&id, &attempt, &partsSent}, r.dest()})
		if err != nil {
			return nil, fmt.Errorf("store: pending outbox: %w", err)
		}
		if r.at.Valid {
			m = r.reply(m) // an exchange's entry is its reply's
		}
		o := outbound(m)
		o.OutboxID, o.Attempt, o.PartsSent = id, attempt, partsSent
		if m.DelegationID != "" {
			if o.Delegation, err = s.delegationRef(ctx, m.DelegationID); err != nil {
				return nil, fmt.Errorf("store: pending outbox: %w", err)
			}
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// aroundScanner scans leading columns into prefix, then the rest as
// asked, then trailing ones into suffix.
type aroundScanner struct {
	row            scanner
	prefix, suffix []any
}

func (p aroundScanner) Scan(dest ...any) error {
	all := append(slices.Clone(p.prefix), dest...)
	return p.row.Scan(append(all, p.suffix...)...)
}

// MarkSent implements gateway.Store. The platform's message ID is kept on
// the outbox entry and in platform_ids, so replies to it can be traced back
// to the bot: that write is durable when MarkSent returns. A bare mark (no
// platform ID, as from the web) of an entry still without a row
// (deferred.go) forgets the entry; of any other, it is queued
// (markLater), to share the commit of whatever is written next, in one
// statement with the marks queued beside it.
func (s *SQLite) MarkSent(ctx context.Context, outboxID int64, platformMsgID string) error {
	var err error
	switch {
	case platformMsgID == "" && s.deferred.resolve(outboxID):
		// Delivered before its row was written: it needs none.
	case platformMsgID == "":
		err = s.markLater(outboxID)
	default:
		err = s.markRow(ctx, outboxID, func(tx *txn) error {
			if _, err := tx.ExecContext(ctx, `UPDATE outbox SET status = 'sent', platform_msg_id = ?, updated_at = ? WHERE id = ?`,
				platformMsgID, micros(timeNow()), outboxID); err != nil {
				return err
			}
			return addPlatformID(ctx, tx, outboxID, platformMsgID)
		})
	}
	if err != nil {
		return fmt.Errorf("store: mark sent %s: %w", strconv.FormatInt(outboxID, 10), err)
	}
	return nil
}

// MarkPart implements gateway.Store.
func (s *SQLite) MarkPart(ctx context.Context, outboxID int64, n int, platformMsgID string) error {
	err := s.markRow(ctx, outboxID, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `UPDATE outbox SET parts_sent = ?, updated_at = ? WHERE id = ?`,
			n, micros(timeNow()), outboxID); err != nil {
			return err
		}
		return addPlatformID(ctx, tx, outboxID, platformMsgID)
	})
	if err != nil {
		return fmt.Errorf("store: mark part: %w", err)
	}
	return nil
}

// addPlatformID maps a delivered part's platform ID to its message.
func addPlatformID(ctx context.Context, tx *txn, outboxID int64, platformMsgID string) error {
	if platformMsgID == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO platform_ids (conversation_id, platform_msg_id, message_id)
		SELECT m.conversation_id, ?, m.id FROM outbox o JOIN messages m ON m.id = o.message_id
		WHERE o.id = ? AND m.conversation_id IS NOT NULL`, platformMsgID, outboxID)
	return err
}

// MarkAttempt implements gateway.Store.
func (s *SQLite) MarkAttempt(ctx context.Context, outboxID int64, reason string) error {
	err := s.markRow(ctx, outboxID, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `UPDATE outbox SET attempts = attempts + 1, last_error = ?, updated_at = ? WHERE id = ?`,
			reason, micros(timeNow()), outboxID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: mark attempt: %w", err)
	}
	return nil
}

// MarkFailed implements gateway.Store.
func (s *SQLite) MarkFailed(ctx context.Context, outboxID int64, reason string) error {
	err := s.markRow(ctx, outboxID, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `UPDATE outbox SET status = 'failed', attempts = attempts + 1, last_error = ?, updated_at = ? WHERE id = ?`,
			reason, micros(timeNow()), outboxID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: mark failed: %w", err)
	}
	return nil
}

// notFound maps sql.ErrNoRows to gateway.ErrNotFound.
func notFound(err error) error {
	if err == sql.ErrNoRows {
		return gateway.ErrNotFound
	}
	return err
}
