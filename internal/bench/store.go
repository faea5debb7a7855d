package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3" // the bare baseline's driver

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/store"
)

// storeUsers is how many anonymous visitors the append benchmark cycles
// through: each has a private chat and a session with the bot, as on a
// busy widget.
const storeUsers = 200

// storeWorkers is the concurrency of the second append figure.
const storeWorkers = 64

// appendRate measures the gateway's store: AppendInbound of web messages
// as the pipeline writes them (the message, its dedupe key, participants,
// the session upsert, the session link and one queued turn, in one
// transaction) for d, from workers goroutines at once (the web adapter
// calls it from every connection's reader). It returns appends per second
// and how many there were.
func appendRate(ctx context.Context, dir string, d time.Duration, workers int) (float64, int, error) {
	s, err := store.Open(ctx, filepath.Join(dir, fmt.Sprintf("append-%d.db", workers)))
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	const bot = "mattyatlas"
	var next atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for time.Since(start) < d && firstErr.Load() == nil {
				n := int(next.Add(1) - 1)
				pid := "web-anon-bench" + strconv.Itoa(n%storeUsers)
				ev := gateway.Event{
					Platform:  gateway.PlatformWeb,
					Bot:       bot,
					ChatID:    gateway.PrivateChatID(pid, bot),
					ChatType:  gateway.ChatPrivate,
					MessageID: strconv.Itoa(n),
					Sender:    gateway.Sender{PlatformID: pid, Name: "Guest"},
					Text:      messageText(n),
					Time:      time.Now(),
				}
				in := gateway.Inbound{
					Event: ev, UserID: pid, UserName: "Guest",
					Turns: []gateway.TurnRequest{{
						Session: gateway.SessionKey{Bot: bot, Scope: gateway.ScopeUser, ScopeID: pid},
						Text:    ev.Text,
					}},
				}
				if _, err := s.AppendInbound(ctx, in); err != nil {
					err = fmt.Errorf("append %d: %w", n, err)
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if p := firstErr.Load(); p != nil {
		return 0, 0, *p
	}
	// next counts started appends; every started one finished.
	n := int(next.Load())
	return float64(n) / elapsed.Seconds(), n, nil
}

// bareInsertRate is the store's floor: go-sqlite3 with the store's
// durability settings (WAL, synchronous=NORMAL, busy timeout, immediate
// transactions, one connection) inserting one row per transaction into a
// plain table, with a prepared statement, for d.
func bareInsertRate(ctx context.Context, dir string, d time.Duration) (float64, int, error) {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "5000")
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "bare.db")+"?"+q.Encode())
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE messages (id INTEGER PRIMARY KEY,
		chat TEXT NOT NULL, sender TEXT NOT NULL, text TEXT NOT NULL, created_at INTEGER NOT NULL)`); err != nil {
		return 0, 0, err
	}
	stmt, err := db.PrepareContext(ctx, `INSERT INTO messages (chat, sender, text, created_at) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return 0, 0, err
	}
	defer stmt.Close()
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		pid := "web-anon-bench" + strconv.Itoa(n%storeUsers)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return 0, n, err
		}
		if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, pid+":mattyatlas", pid, messageText(n), time.Now().UnixMicro()); err != nil {
			tx.Rollback()
			return 0, n, err
		}
		if err := tx.Commit(); err != nil {
			return 0, n, err
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds(), n, nil
}
