package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
)

// This file is what several gateway processes sharing the database need
// of PostgreSQL itself (SPEC §11), with no coordination service of its
// own: each process is an instance, alive while it holds an advisory lock
// on a connection of its own (Member); a bot's connection to a platform
// is led by the instance holding that bot's advisory lock (Member.Lead);
// and what one instance stores that another must show is announced with
// NOTIFY by triggers (migrations/0002_cluster.sql) and heard by Listen.

var (
	_ gateway.SharedStore = (*Store)(nil)
	_ gateway.Leader      = (*Member)(nil)
)

// Timing of an instance's coordination connection.
const (
	// leadTry is how often a lead that is wanted and not held is tried,
	// and how often the connection is checked: an instance takes over a
	// bot from one that died within about this.
	leadTry = time.Second
	// heartbeat is how often the instance row is refreshed (for the
	// instances list: liveness itself is the lock).
	heartbeat = 3 * time.Second
	// reconnectMax caps the wait between tries to reconnect.
	reconnectMax = 5 * time.Second
	// statementTimeout bounds one statement on a dedicated connection,
	// so that a server gone silent is noticed.
	statementTimeout = 5 * time.Second
)

// pause waits wait, or until ctx ends, and returns the next wait of a
// doubling back-off up to reconnectMax.
func pause(ctx context.Context, wait time.Duration) time.Duration {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return min(2*wait, reconnectMax)
}

// NewInstanceID returns a new instance name: "i-" and 12 hex digits.
func NewInstanceID() string {
	var b [6]byte
	rand.Read(b[:])
	return "i-" + hex.EncodeToString(b[:])
}

// Instance is the store's instance name.
func (s *Store) Instance() string { return s.instance }

// lockKey is the advisory lock key of a name: the first 8 bytes of its
// FNV-1a hash. Keys of different names meeting is as likely as two
// random 64-bit numbers meeting.
func lockKey(kind, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("switchboard " + kind + " " + name))
	return int64(h.Sum64())
}

// Member is this process's membership of the database's instances. Join
// makes one; Run keeps it (and its leads) until its context ends.
type Member struct {
	s       *Store
	address string
	log     *slog.Logger
	wake    chan struct{}

	mu sync.Mutex
	// conn is the coordination connection, nil while it is lost; gen
	// counts connections, so a lead taken on a lost one is known lost.
	conn *pgx.Conn
	gen  int
	// wants are the leads asked for, held or not; unlocks are the keys
	// of leads given up whose lock is still held.
	wants   map[gateway.Lead]*want
	unlocks []int64
	closed  bool
}

// want is one lead asked for.
type want struct {
	key int64
	// held is the connection generation the lock was taken on; 0: not
	// held. granted is closed, and lost set, when it is taken.
	held    int
	granted chan struct{}
	ctx     context.Context
	lost    context.CancelFunc
}

// Join connects this process's coordination connection, takes its
// instance lock and registers it, under address (how the others and an
// operator reach it). Run must follow.
func (s *Store) Join(ctx context.Context, address string) (*Member, error) {
	m := &Member{s: s, address: address, log: s.log.With("instance", s.instance),
		wake: make(chan struct{}, 1), wants: make(map[gateway.Lead]*want)}
	if err := m.connect(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// connect opens the coordination connection, takes the instance lock and
// writes the instance's row.
func (m *Member) connect(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, m.s.connConfig.Copy())
	if err != nil {
		return hide(fmt.Errorf("store: cluster connection to %s: %w", m.s.where, err), m.s.secret)
	}
	key := lockKey("instance", m.s.instance)
	err = func() error {
		ctx, cancel := context.WithTimeout(ctx, statementTimeout)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, `INSERT INTO instances (id, address, lock_key) VALUES ($1, $2, $3)
			ON CONFLICT (id) DO UPDATE SET address = $2, lock_key = $3, heartbeat_at = now()`,
			m.s.instance, m.address, key)
		return err
	}()
	if err != nil {
		conn.Close(context.Background())
		return hide(fmt.Errorf("store: joining the instances on %s: %w", m.s.where, err), m.s.secret)
	}
	m.mu.Lock()
	m.conn = conn
	m.gen++
	m.mu.Unlock()
	return nil
}

// Lead implements gateway.Leader with a session-level advisory lock per
// bot and platform on the coordination connection: PostgreSQL gives it
// to one connection at a time and frees it when that connection ends.
func (m *Member) Lead(ctx context.Context, platform, bot string) (context.Context, error) {
	l := gateway.Lead{Bot: bot, Platform: platform}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if w := m.wants[l]; w != nil {
		// Asked twice (a connection replaced by its successor, which
		// waits for it to stop): the second waits for the first to go.
		m.mu.Unlock()
		return m.leadAgain(ctx, l)
	}
	w := &want{key: lockKey("lead", platform+" "+bot), granted: make(chan struct{})}
	w.ctx, w.lost = context.WithCancel(ctx)
	m.wants[l] = w
	m.mu.Unlock()
	m.poke()
	context.AfterFunc(ctx, func() { m.giveUp(l, w) })
	select {
	case <-w.granted:
		return w.ctx, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// leadAgain waits for an earlier want of l to be given up, then asks.
func (m *Member) leadAgain(ctx context.Context, l gateway.Lead) (context.Context, error) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		m.mu.Lock()
		_, busy := m.wants[l]
		m.mu.Unlock()
		if !busy {
			return m.Lead(ctx, l.Platform, l.Bot)
		}
	}
}

// giveUp forgets a want whose context ended, unlocking it if held.
func (m *Member) giveUp(l gateway.Lead, w *want) {
	m.mu.Lock()
	if m.wants[l] == w {
		delete(m.wants, l)
	}
	if w.held != 0 && w.held == m.gen && m.conn != nil {
		m.unlocks = append(m.unlocks, w.key)
	}
	w.held = 0
	m.mu.Unlock()
	w.lost()
	m.poke()
}

// poke wakes Run's loop.
func (m *Member) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Leads lists the bots' leads this instance holds (not those of tasks
// such as retention, whose Lead names no bot).
func (m *Member) Leads() []gateway.Lead {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []gateway.Lead{}
	for l, w := range m.wants {
		if w.held != 0 && l.Bot != "" {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b gateway.Lead) int {
		if a.Platform != b.Platform {
			return cmpString(a.Platform, b.Platform)
		}
		return cmpString(a.Bot, b.Bot)
	})
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Run keeps the membership until ctx ends: it tries the leads wanted,
// refreshes the instance's row, and reconnects when the connection is
// lost (every lead held on it is lost then, and taken again). When ctx
// ends it leaves: the instance's session leases are given back, its row
// deleted and its connection closed, which frees its locks.
func (m *Member) Run(ctx context.Context) error {
	tick := time.NewTicker(leadTry)
	defer tick.Stop()
	lastBeat := time.Now()
	wait := leadTry
	for {
		select {
		case <-ctx.Done():
			m.leave()
			return nil
		case <-tick.C:
		case <-m.wake:
		}
		m.mu.Lock()
		conn := m.conn
		m.mu.Unlock()
		if conn == nil {
			if err := m.connect(ctx); err != nil {
				if ctx.Err() == nil {
					m.log.Warn("cluster: reconnecting", "err", err, "wait", wait)
					wait = pause(ctx, wait)
				}
				continue
			}
			wait = leadTry
			m.log.Info("cluster: connection back; leads are tried again")
			conn = m.conn
		}
		beat := time.Since(lastBeat) >= heartbeat
		if err := m.step(ctx, conn, beat); err != nil {
			if ctx.Err() != nil {
				continue
			}
			m.log.Warn("cluster: connection lost; every lead here is given up until it is back", "err", err)
			m.drop(conn)
			continue
		}
		if beat {
			lastBeat = time.Now()
		}
	}
}

// step does one round on conn: unlocks given-up leads, tries wanted
// ones, and when beat is set refreshes the row and forgets instances
// that died.
func (m *Member) step(ctx context.Context, conn *pgx.Conn, beat bool) error {
	// Not ended with ctx: pgx closes a connection whose query is
	// cancelled, and leave still needs it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statementTimeout)
	defer cancel()
	m.mu.Lock()
	unlocks := m.unlocks
	m.unlocks = nil
	gen := m.gen
	var try []*want
	for _, w := range m.wants {
		if w.held == 0 {
			try = append(try, w)
		}
	}
	m.mu.Unlock()
	for _, key := range unlocks {
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
			return err
		}
	}
	for _, w := range try {
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, w.key).Scan(&got); err != nil {
			return err
		}
		if !got {
			continue
		}
		m.mu.Lock()
		if m.gen != gen || w.ctx.Err() != nil {
			// Given up meanwhile: unlock at once.
			m.mu.Unlock()
			if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, w.key); err != nil {
				return err
			}
			continue
		}
		w.held = gen
		close(w.granted)
		m.mu.Unlock()
		beat = true // the list shows the new lead at once
	}
	if !beat {
		return conn.Ping(ctx)
	}
	leads, err := json.Marshal(m.Leads())
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `UPDATE instances SET heartbeat_at = now(), leads = $2 WHERE id = $1`,
		m.s.instance, leads); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, `DELETE FROM instances WHERE id != $1 AND NOT switchboard_alive(id)`, m.s.instance)
	return err
}

// drop forgets a lost connection: every lead held on it is lost, and
// its wants are tried again on the next connection (each with a new
// context).
func (m *Member) drop(conn *pgx.Conn) {
	conn.Close(context.Background())
	m.mu.Lock()
	if m.conn == conn {
		m.conn = nil
	}
	var lost []context.CancelFunc
	for l, w := range m.wants {
		if w.held == 0 {
			continue
		}
		lost = append(lost, w.lost)
		// The holder's context ends; when it asks again, it waits for
		// the lock like any other.
		delete(m.wants, l)
	}
	m.unlocks = nil
	m.mu.Unlock()
	for _, cancel := range lost {
		cancel()
	}
}

// leave gives back the instance's session leases, deletes its row and
// closes its connection (freeing its locks).
func (m *Member) leave() {
	m.mu.Lock()
	m.closed = true
	conn := m.conn
	m.conn = nil
	var lost []context.CancelFunc
	for _, w := range m.wants {
		lost = append(lost, w.lost)
	}
	m.mu.Unlock()
	for _, cancel := range lost {
		cancel()
	}
	if conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), statementTimeout)
	defer cancel()
	if _, err := conn.Exec(ctx, `UPDATE sessions SET lease_owner = NULL WHERE lease_owner = $1`, m.s.instance); err != nil {
		m.log.Warn("cluster: session leases not given back; they are taken over as the instance's death", "err", err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM instances WHERE id = $1`, m.s.instance); err != nil {
		m.log.Debug("cluster: instance row not deleted", "err", err)
	}
	conn.Close(ctx)
}

// Instances lists the live instances, the longest running first.
func (s *Store) Instances(ctx context.Context) ([]gateway.Instance, error) {
	var out []gateway.Instance
	err := s.pooled(ctx).each(`SELECT id, address, started_at, heartbeat_at, leads FROM instances
		WHERE switchboard_alive(id) ORDER BY started_at, id`, nil, func(rows pgx.Rows) error {
		var in gateway.Instance
		var leads []byte
		if err := rows.Scan(&in.ID, &in.Address, &in.StartedAt, &in.HeartbeatAt, &leads); err != nil {
			return err
		}
		if err := json.Unmarshal(leads, &in.Leads); err != nil {
			return fmt.Errorf("leads of %s: %w", in.ID, err)
		}
		if in.Leads == nil {
			in.Leads = []gateway.Lead{}
		}
		in.StartedAt, in.HeartbeatAt = in.StartedAt.UTC(), in.HeartbeatAt.UTC()
		out = append(out, in)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: instances: %w", err)
	}
	return out, nil
}

// Listen hears what other instances store (the notices the triggers
// send) and passes each to notice, on a connection of its own, until ctx
// ends. ready is closed once it first listens (or ctx ended first). When
// its connection was lost and is back, resync is called: notices sent
// meanwhile were lost.
func (s *Store) Listen(ctx context.Context, notice func(gateway.Notice), resync func(context.Context), ready chan<- struct{}) error {
	wait := leadTry
	first := true
	for ctx.Err() == nil {
		conn, err := s.listenConn(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			s.log.Warn("cluster: cannot listen; retrying", "err", err, "wait", wait)
			wait = pause(ctx, wait)
			continue
		}
		wait = leadTry
		if first {
			close(ready)
			first = false
		} else {
			resync(ctx)
		}
		err = s.hear(ctx, conn, notice)
		conn.Close(context.Background())
		if ctx.Err() == nil {
			s.log.Warn("cluster: listening connection lost; reconnecting", "err", err)
		}
	}
	if first {
		close(ready)
	}
	return nil
}

// listenConn connects and listens on the channel 'switchboard'.
func (s *Store) listenConn(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connConfig.Copy())
	if err != nil {
		return nil, hide(fmt.Errorf("store: listening connection to %s: %w", s.where, err), s.secret)
	}
	if _, err := conn.Exec(ctx, `LISTEN switchboard`); err != nil {
		conn.Close(context.Background())
		return nil, hide(fmt.Errorf("store: LISTEN on %s: %w", s.where, err), s.secret)
	}
	return conn, nil
}

// hear passes conn's notifications to notice until ctx ends or the
// connection fails; it checks the connection while it is quiet.
func (s *Store) hear(ctx context.Context, conn *pgx.Conn, notice func(gateway.Notice)) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, heartbeat)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			pctx, cancel := context.WithTimeout(ctx, statementTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		nt, ok, err := parseNotice(n.Payload, s.instance)
		if err != nil {
			s.log.Warn("cluster: a notice that cannot be read; ignored", "err", err)
			continue
		}
		if ok {
			notice(nt)
		}
	}
}

// parseNotice reads a notice's payload (see the triggers); ok is false
// for one of self's own.
func parseNotice(payload, self string) (n gateway.Notice, ok bool, err error) {
	var p struct {
		Kind       string `json:"k"`
		Instance   string `json:"i"`
		ID         int64  `json:"id"`
		Delegation string `json:"d"`
		New        bool   `json:"n"`
		Platform   string `json:"p"`
		Chat       string `json:"c"`
		User       string `json:"u"`
		Group      bool   `json:"g"`
		Space      string `json:"s"`
	}
	if err := json.Unmarshal([]byte(payload), &p); err != nil {
		return n, false, fmt.Errorf("notice of %d bytes: %w", len(payload), err)
	}
	n = gateway.Notice{Kind: gateway.NoticeKind(p.Kind), ID: p.ID, Delegation: p.Delegation, New: p.New,
		Platform: p.Platform, ChatID: p.Chat, User: p.User, Group: p.Group, Space: p.Space}
	switch n.Kind {
	case gateway.NoticeEntry, gateway.NoticeMessage:
		if n.ID <= 0 || n.Platform == "" || n.ChatID == "" {
			return n, false, fmt.Errorf("a %s notice without its ID, platform or chat", n.Kind)
		}
	case gateway.NoticeDelegation:
		if n.Delegation == "" {
			return n, false, errors.New("a delegation notice without its ID")
		}
	case gateway.NoticeFinding:
		if n.ID <= 0 || n.Space == "" {
			return n, false, errors.New("a finding notice without its ID or space")
		}
	case gateway.NoticeContext:
		if n.Space == "" {
			return n, false, errors.New("a context notice without its space")
		}
	default:
		return n, false, fmt.Errorf("a notice of unknown kind %q", p.Kind)
	}
	return n, p.Instance != self, nil
}

// Message implements gateway.SharedStore.
func (s *Store) Message(ctx context.Context, id int64) (chat.Message, error) {
	var msgs []chat.Message
	err := s.read(ctx, func(t *txn) (err error) {
		msgs, err = t.messages(`SELECT `+messageColumns+`
			FROM messages m LEFT JOIN conversations c ON c.id = m.conversation_id WHERE m.id = $1`, id)
		if err == nil {
			err = t.withArtifacts(msgs)
		}
		return err
	})
	if err != nil {
		return chat.Message{}, fmt.Errorf("store: message %d: %w", id, err)
	}
	if len(msgs) == 0 {
		return chat.Message{}, fmt.Errorf("store: message %d: %w", id, gateway.ErrUnknownChat)
	}
	return msgs[0], nil
}
