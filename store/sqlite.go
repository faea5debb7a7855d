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
	w *sql.DB
	r *sql.DB
}

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
	return s, nil
}

// Close closes both connection pools.
func (s *SQLite) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
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
		err = s.tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", i+1))
			return err
		})
		if err != nil {
			return fmt.Errorf("store: migration %s: %w", names[i], err)
		}
	}
	return nil
}

// tx runs fn in a write transaction.
func (s *SQLite) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Secret implements gateway.Store.
func (s *SQLite) Secret(ctx context.Context, name string, n int) ([]byte, error) {
	var v []byte
	err := s.tx(ctx, func(tx *sql.Tx) error {
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
