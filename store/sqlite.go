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
	"net/url"
	"sort"
	"sync"
	"time"

	_ "github.com/mattn/go-sqlite3" // the database/sql driver "sqlite3"

	"github.com/switchboard-chat/switchboard/gateway"
)

//go:embed migrations/*.sql
var migrations embed.FS

// SQLite is a gateway.Store on one SQLite file. Writes go through a single
// connection (SQLite allows one writer at a time, and queueing in Go is
// cheaper than busy-waiting in SQLite); reads use a small pool that runs
// alongside thanks to WAL.
type SQLite struct {
	w     *sql.DB
	r     *sql.DB
	stmts stmtCache
	ids   idCache

	// Writes go to one committer goroutine, which runs whatever is waiting
	// in one transaction (group commit), each write in its own savepoint
	// so one failure does not fail the others.
	writes chan writeReq
	// intake carries new inbound messages, which wait behind everything
	// else: under a burst, replies to what is already stored go first.
	intake chan writeReq
	quit   chan struct{}
	loop   sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// maxBatch bounds how many writes share one commit.
const maxBatch = 128

var _ gateway.Store = (*SQLite)(nil)

// Open opens (creating if needed) the database at path and migrates it.
func Open(ctx context.Context, path string) (*SQLite, error) {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "5000")
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	w, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	s := &SQLite{w: w}
	if err := s.migrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	q.Set("mode", "ro")
	q.Del("_txlock")
	r, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	s.r = r
	s.writes = make(chan writeReq)
	s.intake = make(chan writeReq)
	s.quit = make(chan struct{})
	s.loop.Go(s.commitLoop)
	return s, nil
}

// Close stops the committer and closes both connection pools. Calling it
// again returns the first result.
func (s *SQLite) Close() error {
	s.closeOnce.Do(func() {
		if s.quit != nil {
			close(s.quit)
			s.loop.Wait()
		}
		s.closeStmts()
		s.closeErr = errors.Join(s.r.Close(), s.w.Close())
	})
	return s.closeErr
}

// migrate applies the embedded migrations newer than the database's
// user_version, each in its own transaction.
func (s *SQLite) migrate(ctx context.Context) error {
	var version int
	if err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
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
		err = s.tx(ctx, func(tx *txn) error {
			// A migration holds several statements: run it unprepared.
			if _, err := tx.tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", i+1))
			return err
		})
		if err != nil {
			return fmt.Errorf("store: migration %s: %w", names[i], err)
		}
	}
	return nil
}

// writeReq is one write waiting for the committer.
type writeReq struct {
	ctx  context.Context
	fn   func(*txn) error
	done chan error
}

// errClosed is returned by writes after Close.
var errClosed = errors.New("store: closed")

// tx runs fn in a write transaction: all of fn or none of it is stored
// when tx returns. fn may share its transaction with other writes (group
// commit); it must not keep state across calls, as it runs once.
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
	for {
		var first writeReq
		select {
		case first = <-s.writes:
		default:
			select {
			case first = <-s.writes:
			case first = <-s.intake:
			case <-s.quit:
				return
			}
		}
		batch := []writeReq{first}
		// Fill the batch with what waits, completions before intake.
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
		s.runBatch(batch)
	}
}

// runBatch commits a batch of writes in one transaction.
func (s *SQLite) runBatch(batch []writeReq) {
	ctx := context.Background()
	errs := make([]error, len(batch))
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	hooks := make([][]func(), len(batch))
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT w"); err != nil {
			errs[i] = err
			continue
		}
		t := &txn{tx: tx, s: s}
		if errs[i] = r.fn(t); errs[i] != nil {
			tx.ExecContext(ctx, "ROLLBACK TO w")
		} else {
			hooks[i] = t.stored
		}
		tx.ExecContext(ctx, "RELEASE w")
	}
	if err := tx.Commit(); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	// Callbacks run here, on the committer, so they see writes in the
	// order they were stored.
	for i := range batch {
		if errs[i] == nil {
			for _, fn := range hooks[i] {
				fn()
			}
		}
	}
	s.prepPending(ctx)
	for i, r := range batch {
		r.done <- errs[i]
	}
}

// txNow runs fn in its own transaction, on the caller's goroutine.
func (s *SQLite) txNow(ctx context.Context, fn func(*txn) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	t := &txn{tx: tx, s: s}
	err = fn(t)
	if err != nil {
		tx.Rollback()
	} else if err = tx.Commit(); err == nil {
		for _, fn := range t.stored {
			fn()
		}
	}
	s.prepPending(ctx)
	return err
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
