// Package store keeps Switchboard's data in SQLite (github.com/mattn/go-sqlite3):
// WAL journal, a busy timeout, foreign keys on, and migrations embedded in
// the binary and applied at open. It implements gateway.Store.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3" // also the database/sql driver "sqlite3"

	"github.com/switchboard-chat/switchboard/gateway"
)

//go:embed migrations/*.sql
var migrations embed.FS

// SQLite is a gateway.Store on one SQLite file. Writes go through a single
// connection (SQLite allows one writer at a time, and queueing in Go is
// cheaper than busy-waiting in SQLite); reads use a small pool that runs
// alongside thanks to WAL.
type SQLite struct {
	w *sql.DB
	// wc is the writer connection, held by the store for its lifetime and
	// used by the committer below database/sql (see conn).
	wc    *sql.Conn
	wconn conn
	r     *sql.DB
	log   atomic.Pointer[slog.Logger]
	// ck is the checkpointer's connection; commits counts commits for it.
	ck      *sql.DB
	commits atomic.Int64
	// stats counts the committer's work (WriterStats), with commits.
	stats struct{ writes, busy atomic.Int64 }
	// lastID is the largest message ID the committer has written, left
	// free or tried (a batch rolled back leaves it raised: IDs skip, and
	// still grow in commit order): an exchange's row takes the one after
	// next, leaving the next for its person's message (exchanges.go).
	// The committer owns it.
	lastID int64
	// lastOutbox is the largest outbox ID given out, to a row or to an
	// entry deferred (deferred.go): the committer's, as lastID.
	lastOutbox int64
	deferred   deferredOutbox
	// finishCheckpoint asks the committer to finish the checkpointer's
	// last checkpoint, once the WAL holds restartFrames (see checkpoint).
	finishCheckpoint atomic.Bool
	restartFrames    int
	// dbFile is the database file and syncDB syncs it, for the
	// checkpointer (see checkpoint); both nil if it could not be opened,
	// and the finish then syncs it all.
	dbFile *os.File
	syncDB func() error
	stmts  stmtCache
	ids    idCache
	recent recent
	// links are the index entries not yet written — session links and
	// dedupe keys (see links.go) — owned by the committer; unlinked is
	// how many committed ones wait.
	links    linkLog
	unlinked atomic.Int64
	// keys spares the lookup of a new inbound message's dedupe key (see
	// keyfilter.go).
	keys *keyFilter
	// hooks are the stored callbacks of the batch the committer runs, in
	// order, and hookEnds where each write's end; both are reused from
	// batch to batch (see txn.onStored).
	hooks    []hook
	hookEnds []int

	// Writes go to one committer goroutine, which runs whatever is waiting
	// in one transaction (group commit); see runBatch for how one failure
	// is kept from failing the others.
	writes chan writeReq
	// intake carries new inbound messages, which wait behind everything
	// else: under a burst, replies to what is already stored go first.
	intake chan writeReq
	// marks are delivery marks waiting for the next batch (see
	// markLater); lazyQueued tells the committer some are waiting.
	lazyMu     sync.Mutex
	marks      []int64
	lazyQueued chan struct{}
	quit       chan struct{}
	loop       sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// maxBatch bounds how many writes share one commit.
const maxBatch = 128

var _ gateway.Store = (*SQLite)(nil)

// Open opens (creating if needed) the database at path and migrates it.
func Open(ctx context.Context, path string) (*SQLite, error) {
	return open(ctx, path, checkpointEvery)
}

// open is Open with the checkpointer's interval (tests that drive the
// checkpointer themselves set it long).
func open(ctx context.Context, path string, ckEvery time.Duration) (*SQLite, error) {
	if configErr != nil {
		slog.Default().Warn("store: SQLite runs with its default settings", "err", configErr)
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "5000")
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", "immediate")
	// The writer gets a larger page cache (32 MiB) than SQLite's default
	// 2 MiB, which the readers keep: every write walks the indexes.
	wq := url.Values{}
	for k, v := range q {
		wq[k] = v
	}
	wq.Set("_cache_size", "-32768")
	w, err := sql.Open("sqlite3", "file:"+path+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	wc, err := w.Conn(ctx)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &SQLite{w: w, wc: wc, wconn: conn{stmts: make(map[string]*sqlite3.SQLiteStmt)}, restartFrames: restartFrames, ids: newIDCache()}
	if err := s.migrate(ctx); err != nil {
		s.closeWriter()
		return nil, err
	}
	s.links.lastRound, s.links.every, s.links.chunk = time.Now(), linkFlushEvery, flushChunk
	s.deferred.age = deferAge
	var stored int64
	if err := s.withConn(func(c *conn) error {
		return c.queryRow(`SELECT COALESCE(MAX(id), 0) FROM messages`).Scan(&stored)
	}); err != nil {
		s.closeWriter()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s.keys = newKeyFilter(2 * stored)
	s.lastID = stored
	if err := s.relink(ctx); err != nil {
		s.closeWriter()
		return nil, err
	}
	if err := s.refile(ctx); err != nil {
		s.closeWriter()
		return nil, err
	}
	q.Set("mode", "ro")
	q.Del("_txlock")
	r, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		s.closeWriter()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	s.r = r
	// Checkpoints run beside the committer, on their own connection (see
	// checkpointLoop); the writer's own automatic checkpoint stays as a
	// backstop at a much larger WAL.
	q.Del("mode")
	ck, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		r.Close()
		s.closeWriter()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	ck.SetMaxOpenConns(1)
	s.ck = ck
	// The checkpointer syncs the database file through a descriptor of
	// its own (see checkpoint), open until Close. Closing a descriptor of
	// a file drops every POSIX lock the process holds on it, SQLite's
	// included, so it is closed after the store's SQLite connections;
	// no other SQLite handle on the file in this process may outlive
	// Close. The file is the one SQLite opened (path may be a URI).
	var file string
	if err := ck.QueryRow("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err == nil && file != "" {
		if f, err := os.Open(file); err == nil {
			s.dbFile, s.syncDB = f, f.Sync
		}
	}
	if err := s.withConn(func(c *conn) error {
		_, err := c.c.Exec(fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", backstopCheckpointPages), nil)
		return err
	}); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s.writes = make(chan writeReq)
	s.intake = make(chan writeReq)
	s.lazyQueued = make(chan struct{}, 1)
	s.quit = make(chan struct{})
	s.loop.Go(s.commitLoop)
	s.loop.Go(func() { s.checkpointLoop(ckEvery) })
	s.loop.Go(s.loadKeys)
	return s, nil
}

// Checkpoints copy the WAL back into the database file (and fsync it).
// Left to SQLite, the committing connection runs one whenever the WAL
// passes 1,000 pages — under load, every few commits, with every write
// waiting behind it. Instead a separate connection runs a passive
// checkpoint (which never blocks the writer) every checkpointEvery while
// there are writes.
//
// The WAL starts again from its beginning only when a write transaction
// begins with every frame copied back. Under steady writes a checkpoint
// beside the writer never gets there — the writer adds frames while it
// copies — so the WAL would grow to the writer's own backstop
// (backstopCheckpointPages), whose checkpoint runs inside a commit and
// stalls every write for 15–25 ms. So once the WAL holds restartFrames,
// the committer, between two batches, checkpoints what was committed
// since the passive checkpoint began: a small copy and two fsyncs, a few
// milliseconds. Its next transaction restarts the WAL.
const (
	checkpointEvery         = 250 * time.Millisecond
	backstopCheckpointPages = 16384 // 64 MiB of 4 KiB pages
	restartFrames           = 4096  // 16 MiB
)

// checkpointLoop runs passive checkpoints, and drops idle windows from
// the recent cache, until Close.
func (s *SQLite) checkpointLoop(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var done int64
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		s.recent.sweep(time.Now())
		if n := s.commits.Load(); n != done {
			done = n
			s.checkpoint()
		}
	}
}

// checkpoint runs a passive checkpoint beside the writer and, when the
// WAL has grown to restartFrames, asks the committer to finish it. A
// failure is left to the next round and to the backstop.
//
// A checkpoint that does not copy every frame (under load, none does)
// writes the database file without syncing it: SQLite syncs the file
// only when a checkpoint completes, which here is the committer's finish.
// That sync would flush everything the passive checkpoints copied since
// the last finish, megabytes, while every write waits (10–17 ms on the
// bench's VM). So before asking for the finish, the checkpointer syncs
// the file itself, beside the writer, and copies once more what came
// meanwhile, and syncs again: the finish is left its own small copy and
// two small syncs. These syncs only move work off the writer: the finish
// still syncs the file itself, as SQLite always does before the WAL can
// start again, so a failed one is no loss and the finish is asked for
// anyway.
func (s *SQLite) checkpoint() {
	frames, err := s.passiveCheckpoint()
	if err != nil || frames < s.restartFrames {
		return
	}
	if s.syncDB != nil && s.syncDB() == nil {
		if _, err := s.passiveCheckpoint(); err == nil {
			s.syncDB()
		}
	}
	s.finishCheckpoint.Store(true)
}

// passiveCheckpoint runs a passive checkpoint on the checkpointer's
// connection and returns how many frames the WAL holds.
func (s *SQLite) passiveCheckpoint() (frames int, err error) {
	var busy, copied int
	err = s.ck.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
	return frames, err
}

// finishWAL copies back what the WAL gained since the last passive
// checkpoint, so the next write transaction restarts the WAL. It runs on
// the committer, between batches. A failure (a reader still using old
// frames) is left to the next round.
func (s *SQLite) finishWAL() {
	s.withConn(func(c *conn) error {
		// Unprepared: a prepared statement that returns a row would stay
		// in progress and keep the next COMMIT from finishing.
		_, err := c.c.Exec("PRAGMA wal_checkpoint(PASSIVE)", nil)
		return err
	})
}

// Close stops the committer and the checkpointer, then closes the
// connections of the readers, the checkpointer and the writer, and the
// checkpointer's own descriptor of the file (see Open: no other SQLite
// handle on the file in this process may outlive Close). Calling it
// again returns the first result.
func (s *SQLite) Close() error {
	s.closeOnce.Do(func() {
		if s.quit != nil {
			close(s.quit)
			s.loop.Wait()
		}
		s.closeStmts()
		var ckErr error
		if s.ck != nil {
			ckErr = s.ck.Close()
		}
		s.closeErr = errors.Join(s.r.Close(), ckErr, s.closeWriter())
		if s.dbFile != nil {
			s.dbFile.Close()
		}
	})
	return s.closeErr
}

// closeWriter finalizes the committer's statements and closes the writer.
func (s *SQLite) closeWriter() error {
	s.withConn(func(c *conn) error {
		c.closeStmts()
		return nil
	})
	return errors.Join(s.wc.Close(), s.w.Close())
}

// withConn runs fn on the writer connection. Only the committer calls it
// (and Open and Close, while there is no committer; and
// BenchmarkExchangeRecord, while nothing is written through the store).
func (s *SQLite) withConn(fn func(*conn) error) error {
	return s.wc.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("store: the writer connection is a %T", dc)
		}
		s.wconn.c = c
		return fn(&s.wconn)
	})
}

// migrate applies the embedded migrations newer than the database's
// user_version, each in its own transaction. Foreign keys are off while a
// migration runs, so it can rebuild a table others refer to (SQLite's
// procedure for changes ALTER TABLE cannot make), and are checked before
// it commits: a migration that breaks a reference is rolled back.
func (s *SQLite) migrate(ctx context.Context) error {
	var version int
	err := s.withConn(func(c *conn) error {
		return c.queryRow("PRAGMA user_version").Scan(&version)
	})
	if err != nil {
		return fmt.Errorf("store: read schema version: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	if version > len(names) {
		return fmt.Errorf("store: database schema %d is newer than this binary's %d", version, len(names))
	}
	for i := version; i < len(names); i++ {
		body, err := migrations.ReadFile(names[i])
		if err != nil {
			return err
		}
		err = s.migration(ctx, string(body), i+1)
		if err != nil {
			return fmt.Errorf("store: migration %s: %w", names[i], err)
		}
	}
	return nil
}

// migration runs one migration's statements and sets user_version to
// version, in one transaction, with foreign keys off until it ends.
func (s *SQLite) migration(ctx context.Context, body string, version int) error {
	setKeys := func(on string) error {
		// Not in a transaction: SQLite ignores the pragma inside one.
		return s.withConn(func(c *conn) error {
			_, err := c.c.Exec("PRAGMA foreign_keys = "+on, nil)
			return err
		})
	}
	if err := setKeys("OFF"); err != nil {
		return err
	}
	err := s.tx(ctx, func(tx *txn) error {
		// A migration holds several statements: run it unprepared.
		if _, err := tx.c.c.Exec(body, nil); err != nil {
			return err
		}
		var table, parent string
		var rowid, fk any
		err := tx.QueryRowContext(ctx, "PRAGMA foreign_key_check").Scan(&table, &rowid, &parent, &fk)
		if err == nil {
			if rowid == nil { // a WITHOUT ROWID table
				return fmt.Errorf("a row of %s refers to a missing row of %s", table, parent)
			}
			return fmt.Errorf("a row of %s (rowid %v) refers to a missing row of %s", table, rowid, parent)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		_, err = tx.c.c.Exec(fmt.Sprintf("PRAGMA user_version = %d", version), nil)
		return err
	})
	if kerr := setKeys("ON"); err == nil {
		err = kerr
	}
	return err
}

// writeReq is one write waiting for the committer.
type writeReq struct {
	ctx  context.Context
	fn   func(*txn) error
	done chan error
	// marks is how many delivery marks a write of them holds
	// (takeMarks), each counted as a write of its own.
	marks int
}

// errClosed is returned by writes after Close.
var errClosed = errors.New("store: closed")

// tx runs fn in a write transaction: all of fn or none of it is stored
// when tx returns. fn may share its transaction with other writes (group
// commit) and may be run twice (see runBatch): it must set its results
// afresh on each run and act on the outside only through onStored.
func (s *SQLite) tx(ctx context.Context, fn func(*txn) error) error {
	return s.write(ctx, fn, s.writes)
}

// txIntake is tx for new inbound messages, at the lower priority.
func (s *SQLite) txIntake(ctx context.Context, fn func(*txn) error) error {
	return s.write(ctx, fn, s.intake)
}

func (s *SQLite) write(ctx context.Context, fn func(*txn) error, queue chan writeReq) error {
	if queue == nil {
		return s.txNow(ctx, fn) // while opening (migrations)
	}
	req := writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case queue <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.quit:
		return errClosed
	}
	// Once taken, the write is waited for even if ctx ends, so the caller
	// never mistakes a stored write for a failed one.
	return <-req.done
}

// commitLoop runs queued writes in batches until Close.
func (s *SQLite) commitLoop() {
	// lazyDue fires lazyWait after a delivery mark was queued with nothing
	// else to commit it with.
	lazyDue := time.NewTimer(lazyWait)
	lazyDue.Stop()
	armed := false
	// linksDue writes the log's entries (links.go), and the deferred
	// outbox entries and watermark (deferred.go), left waiting when
	// writes stop: busy says a batch ran since it was armed.
	linksDue := time.NewTimer(linkFlushEvery)
	linksDue.Stop()
	linksArmed, busy := false, false
	for {
		var batch []writeReq
		select {
		case r := <-s.writes:
			batch = append(batch, r)
		default:
			select {
			case r := <-s.writes:
				batch = append(batch, r)
			case r := <-s.intake:
				batch = append(batch, r)
			case <-s.lazyQueued:
				if !armed {
					lazyDue.Reset(lazyWait)
					armed = true
				}
				continue
			case <-lazyDue.C:
				armed = false
			case <-linksDue.C:
				if !busy {
					s.runBatch([]writeReq{background(s.flushAll), background(s.flushDeferred)})
				}
				busy = false
				if linksArmed = s.waitingWrites(); linksArmed {
					linksDue.Reset(linkFlushEvery)
				}
				continue
			case <-s.quit:
				// Rows for the replies not delivered first: the marks of
				// those delivered while their rows were written follow.
				s.runBatch([]writeReq{background(s.flushAllDeferred)})
				if marks, ok := s.takeMarks(); ok {
					s.runBatch([]writeReq{marks})
				}
				s.runBatch([]writeReq{background(s.flushAll)})
				return
			}
		}
		// Fill the batch with what waits, completions before intake, and
		// the delivery marks last.
		for _, q := range []chan writeReq{s.writes, s.intake} {
		gather:
			for len(batch) < maxBatch {
				select {
				case r := <-q:
					batch = append(batch, r)
				default:
					break gather
				}
			}
		}
		if marks, ok := s.takeMarks(); ok {
			batch = append(batch, marks)
			lazyDue.Stop()
			armed = false
		}
		if len(batch) > 0 {
			if s.links.round != nil {
				// A chunk of the log's round of flushing goes first.
				batch = append([]writeReq{background(s.flushChunk)}, batch...)
			}
			if s.deferredDue(time.Now()) {
				batch = append([]writeReq{background(s.flushDeferred)}, batch...)
			}
			s.runBatch(batch)
			busy = true
			// The batch's callbacks and answers made goroutines runnable
			// (socket writers with its frames, callers with their next
			// write), and Go queues them on the committer's own processor,
			// to run when the committer blocks. Under load it does not
			// block: it goes straight into its next batch, and they wait
			// for that batch unless the other processor is free to take
			// them. So the committer yields here, outside the time
			// counted busy: it goes to the back of the global run queue,
			// and what its processor holds — this batch's wake-ups first —
			// runs before its next transaction. In round 7 of
			// docs/performance.md this took the p99 at 2,000 messages/s
			// under 20 ms in every run.
			runtime.Gosched()
		}
		if s.finishCheckpoint.Swap(false) {
			s.finishWAL()
		}
		s.links.startRound(time.Now())
		if !linksArmed && s.waitingWrites() {
			linksDue.Reset(linkFlushEvery)
			linksArmed = true
		}
	}
}

// waitingWrites reports whether writes wait for the committer's timer:
// entries of the link log, outbox entries without rows, or the outbox's
// watermark (deferred.go).
func (s *SQLite) waitingWrites() bool {
	return s.links.waiting() > 0 || s.deferredWaiting()
}

// background is a write no one waits for, the committer's own (a flush
// of the link log or of deferred outbox entries): if it fails, what it
// held waits for the next.
func background(fn func(*txn) error) writeReq {
	return writeReq{ctx: context.Background(), fn: fn}
}

// lazyWait bounds how long a delivery mark waits for other writes to
// share its commit.
const lazyWait = 50 * time.Millisecond

// markLater queues the delivery mark of the outbox entry id: it is
// written with the next batch, or on its own after lazyWait, and no one
// waits for it. If its write fails it is dropped, which costs no more
// than a message sent again after a restart.
func (s *SQLite) markLater(id int64) error {
	return s.queueMarks(false, id)
}

// queueMarks queues delivery marks for the committer's next batch;
// once the store is closing, only the committer's own (whileClosing),
// which it writes before it stops. (The check shares the lock with the
// append, so a mark queued before Close is taken by the committer's last
// takeMarks.)
func (s *SQLite) queueMarks(whileClosing bool, ids ...int64) error {
	s.lazyMu.Lock()
	if !whileClosing {
		select {
		case <-s.quit:
			s.lazyMu.Unlock()
			return errClosed
		default:
		}
	}
	s.marks = append(s.marks, ids...)
	s.lazyMu.Unlock()
	select {
	case s.lazyQueued <- struct{}{}:
	default:
	}
	return nil
}

// takeMarks takes the queued delivery marks as one write, if there are
// any. (They are not capped: each run of consecutive IDs among them is one
// statement.)
func (s *SQLite) takeMarks() (writeReq, bool) {
	s.lazyMu.Lock()
	ids := s.marks
	s.marks = nil
	s.lazyMu.Unlock()
	if len(ids) == 0 {
		return writeReq{}, false
	}
	slices.Sort(ids)
	runs := markRuns(ids)
	return writeReq{ctx: context.Background(), marks: len(ids), fn: func(tx *txn) error { return writeMarks(tx, runs) }}, true
}

// markRuns splits ids, sorted, into runs of consecutive IDs, each its
// first and last; an ID given twice counts once. Outbox IDs are given in
// order as entries are queued, and their replies are mostly delivered in
// that order within the lazyWait that gathers their marks, so under load
// the marks of a batch's replies form a few long runs.
func markRuns(ids []int64) [][2]int64 {
	var runs [][2]int64
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && ids[j] <= ids[j-1]+1 {
			j++
		}
		runs = append(runs, [2]int64{ids[i], ids[j-1]})
		i = j
	}
	return runs
}

// writeMarks marks the outbox entries of runs sent, a statement a run.
func writeMarks(tx *txn, runs [][2]int64) error {
	now := micros(timeNow())
	for _, r := range runs {
		if _, err := tx.c.exec(`UPDATE outbox SET status = 'sent', platform_msg_id = '', updated_at = ? WHERE id BETWEEN ? AND ?`,
			now, r[0], r[1]); err != nil {
			return err
		}
	}
	return nil
}

// WriterStats is what the committer, the store's one writer, has done
// since the store opened. Busy over elapsed time is how close the writer
// is to its limit: writes queue once it nears one.
type WriterStats struct {
	// Batches counts the transactions committed; Writes the writes in
	// them.
	Batches, Writes int64
	// Busy is the time spent running them, their callbacks included.
	Busy time.Duration
}

// WriterStats returns the committer's counts so far.
func (s *SQLite) WriterStats() WriterStats {
	return WriterStats{
		Batches: s.commits.Load(),
		Writes:  s.stats.writes.Load(),
		Busy:    time.Duration(s.stats.busy.Load()),
	}
}

// runBatch commits a batch of writes in one transaction. The batch is run
// optimistically, without a savepoint per write (a savepoint costs two
// statements per write); if any write fails, the transaction is rolled
// back and every write is run again in its own transaction, so a failure
// is its write's alone. A write therefore runs at most twice.
func (s *SQLite) runBatch(batch []writeReq) {
	defer func(start time.Time) { s.stats.busy.Add(int64(time.Since(start))) }(time.Now())
	if len(batch) > 1 {
		if errs, ok := s.tryBatch(batch); ok {
			s.finish(batch, errs)
			return
		}
	}
	for _, r := range batch {
		one := []writeReq{r}
		errs, _ := s.tryBatch(one)
		s.finish(one, errs)
	}
}

// tryBatch runs the writes of batch in one transaction and commits it,
// leaving their stored callbacks in s.hooks (the i-th write's end at
// s.hookEnds[i]). ok is false when a write or the commit failed and the
// transaction was rolled back; a write whose caller has gone is skipped,
// not failed.
func (s *SQLite) tryBatch(batch []writeReq) (errs []error, ok bool) {
	errs = make([]error, len(batch))
	s.resetHooks()
	s.hookEnds = slices.Grow(s.hookEnds[:0], len(batch))[:len(batch)]
	s.links.begin()
	s.deferred.begin()
	err := s.withConn(func(c *conn) error {
		if _, err := c.exec("BEGIN IMMEDIATE"); err != nil {
			return err
		}
		t := &txn{c: c, s: s}
		for i, r := range batch {
			start := len(s.hooks)
			if err := r.ctx.Err(); err != nil {
				errs[i] = err
				s.hookEnds[i] = start
				continue
			}
			if err := r.fn(t); err != nil {
				errs[i] = err
				c.exec("ROLLBACK")
				return err
			}
			s.hookEnds[i] = len(s.hooks)
		}
		if _, err := c.exec("COMMIT"); err != nil {
			c.exec("ROLLBACK") // in case the failed commit left it open
			return err
		}
		s.commits.Add(1)
		writes := len(batch)
		for _, r := range batch {
			writes += max(r.marks-1, 0)
		}
		s.stats.writes.Add(int64(writes))
		s.links.committed()
		s.unlinked.Store(int64(s.links.waiting()))
		s.deferredCommitted()
		return nil
	})
	if err != nil {
		s.links.rolledBack()
		s.deferred.rolledBack()
		s.resetHooks()
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return errs, false
	}
	return errs, true
}

// resetHooks empties s.hooks, letting go of what its callbacks held.
func (s *SQLite) resetHooks() {
	clear(s.hooks)
	s.hooks = s.hooks[:0]
}

// finish runs the stored callbacks of the writes that committed and
// answers every caller. Callbacks run here, on the committer, so they see
// writes in the order they were stored.
func (s *SQLite) finish(batch []writeReq, errs []error) {
	start := 0
	for i := range batch {
		end := s.hookEnds[i]
		if errs[i] == nil {
			for j := start; j < end; j++ {
				s.hooks[j].run(s)
			}
		}
		start = end
	}
	s.resetHooks()
	for i, r := range batch {
		switch {
		case r.done != nil:
			r.done <- errs[i]
		case errs[i] != nil && r.marks > 0:
			s.logger().Warn("store: delivery marks failed; those replies will be sent again after a restart", "marks", r.marks, "err", errs[i])
		case errs[i] != nil: // a flush of the link log or of deferred outbox entries
			s.logger().Warn("store: a flush failed (link log or deferred outbox entries); what it held waits for the next", "err", errs[i])
		}
	}
}

// SetLogger sets where the store logs what no caller hears of (writes no
// one waits for that failed: delivery marks, the link log's); the
// default is slog.Default().
func (s *SQLite) SetLogger(l *slog.Logger) { s.log.Store(l) }

func (s *SQLite) logger() *slog.Logger {
	if l := s.log.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// txNow runs fn in its own transaction on the caller's goroutine: while
// opening, before the committer runs.
func (s *SQLite) txNow(ctx context.Context, fn func(*txn) error) error {
	one := []writeReq{{ctx: ctx, fn: fn, done: make(chan error, 1)}}
	errs, _ := s.tryBatch(one)
	s.finish(one, errs)
	return <-one[0].done
}

// Secret implements gateway.Store.
func (s *SQLite) Secret(ctx context.Context, name string, n int) ([]byte, error) {
	var v []byte
	err := s.tx(ctx, func(tx *txn) error {
		err := tx.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", "secret:"+name).Scan(&v)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		v = make([]byte, n)
		rand.Read(v)
		_, err = tx.ExecContext(ctx, "INSERT INTO meta (key, value) VALUES (?, ?)", "secret:"+name, v)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: secret: %w", err)
	}
	return v, nil
}

func micros(t time.Time) int64 { return t.UTC().UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
