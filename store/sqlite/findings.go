package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-chat/switchboard/world/findings"
)

// The findings board (migration 0015): findings and stages by space.

var _ findings.Store = (*Store)(nil)

// findingColumns is the select list scanFinding reads.
const findingColumns = `id, space, bot, text, severity, stage, visible, created_at`

func scanFinding(row scanner) (findings.Finding, error) {
	var f findings.Finding
	var visible int
	var created int64
	err := row.Scan(&f.ID, &f.Space, &f.Bot, &f.Text, &f.Severity, &f.Stage, &visible, &created)
	f.Visible, f.CreatedAt = visible == 1, fromMicros(created)
	return f, err
}

// stageColumns is the select list scanStage reads.
const stageColumns = `id, space, name, isolated, started_at, ended_at`

func scanStage(row scanner) (findings.Stage, error) {
	var s findings.Stage
	var isolated int
	var started int64
	var ended sql.NullInt64
	err := row.Scan(&s.ID, &s.Space, &s.Name, &isolated, &started, &ended)
	s.Isolated, s.StartedAt = isolated == 1, fromMicros(started)
	if ended.Valid {
		s.EndedAt = fromMicros(ended.Int64)
	}
	return s, err
}

// AddFinding implements findings.Store: the running stage is read in the
// write's own transaction, so a release cannot come between.
func (s *Store) AddFinding(ctx context.Context, f findings.Finding) (findings.Finding, error) {
	err := s.write(ctx, func(tx *txn) error {
		st, running, err := tx.runningStage(f.Space)
		if err != nil {
			return err
		}
		f.Stage, f.Visible = "", true
		if running {
			f.Stage, f.Visible = st.Name, !st.Isolated
		}
		f.CreatedAt = fromMicros(micros(f.CreatedAt))
		f.ID, err = tx.insert(`INSERT INTO findings (space, bot, text, severity, stage, visible, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, f.Space, f.Bot, f.Text, f.Severity, f.Stage, boolInt(f.Visible), micros(f.CreatedAt))
		return err
	})
	if err != nil {
		return findings.Finding{}, fmt.Errorf("store: add finding: %w", err)
	}
	return f, nil
}

// Findings implements findings.Store.
func (s *Store) Findings(ctx context.Context, q findings.Query) ([]findings.Finding, error) {
	var where []string
	var args []any
	if q.Space != "" {
		where, args = append(where, "space = ?"), append(args, q.Space)
	}
	if q.Bot != "" {
		where, args = append(where, "bot = ?"), append(args, q.Bot)
	}
	switch {
	case q.Viewer != "":
		where, args = append(where, "(visible = 1 OR bot = ?)"), append(args, q.Viewer)
	case !q.Hidden:
		where = append(where, "visible = 1")
	}
	query := `SELECT ` + findingColumns + ` FROM findings`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY id DESC LIMIT ?`
	args = append(args, max(q.Limit, 1))
	var out []findings.Finding
	err := s.read(ctx, func(tx *txn) error {
		rows, err := tx.query(query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			f, err := scanFinding(rows)
			if err != nil {
				return err
			}
			out = append(out, f)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: findings: %w", err)
	}
	// Newest first from the query; oldest first to the caller.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// Finding implements findings.Store.
func (s *Store) Finding(ctx context.Context, id int64) (findings.Finding, error) {
	var f findings.Finding
	err := s.read(ctx, func(tx *txn) error {
		var err error
		f, err = scanFinding(tx.row(`SELECT `+findingColumns+` FROM findings WHERE id = ?`, id))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return findings.Finding{}, fmt.Errorf("store: finding %d: %w", id, findings.ErrNotFound)
	}
	if err != nil {
		return findings.Finding{}, fmt.Errorf("store: finding %d: %w", id, err)
	}
	return f, nil
}

// RunningStage implements findings.Store.
func (s *Store) RunningStage(ctx context.Context, space string) (findings.Stage, bool, error) {
	var st findings.Stage
	var ok bool
	err := s.read(ctx, func(tx *txn) error {
		var err error
		st, ok, err = tx.runningStage(space)
		return err
	})
	if err != nil {
		return findings.Stage{}, false, fmt.Errorf("store: running stage: %w", err)
	}
	return st, ok, nil
}

// RunningStages implements findings.Store.
func (s *Store) RunningStages(ctx context.Context) ([]findings.Stage, error) {
	var out []findings.Stage
	err := s.read(ctx, func(tx *txn) error {
		rows, err := tx.query(`SELECT ` + stageColumns + ` FROM stages WHERE ended_at IS NULL ORDER BY id DESC`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			st, err := scanStage(rows)
			if err != nil {
				return err
			}
			out = append(out, st)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: running stages: %w", err)
	}
	return out, nil
}

// StartStage implements findings.Store.
func (s *Store) StartStage(ctx context.Context, start findings.StageStart) (findings.Change, error) {
	var c findings.Change
	err := s.write(ctx, func(tx *txn) error {
		c = findings.Change{}
		if start.Key != "" {
			st, err := scanStage(tx.row(`SELECT `+stageColumns+` FROM stages WHERE start_key = ? ORDER BY id LIMIT 1`, start.Key))
			switch {
			case err == nil:
				c.Started, c.Repeat = &st, true
				return nil
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		at := micros(start.At)
		if err := tx.endStage(&c, start.Space, start.Key, at); err != nil {
			return err
		}
		id, err := tx.insert(`INSERT INTO stages (space, name, isolated, started_at, start_key) VALUES (?, ?, ?, ?, ?)`,
			start.Space, start.Name, boolInt(start.Isolated), at, start.Key)
		if err != nil {
			return err
		}
		c.Started = &findings.Stage{ID: id, Space: start.Space, Name: start.Name, Isolated: start.Isolated, StartedAt: fromMicros(at)}
		return nil
	})
	if err != nil {
		return findings.Change{}, fmt.Errorf("store: start stage: %w", err)
	}
	return c, nil
}

// EndStage implements findings.Store.
func (s *Store) EndStage(ctx context.Context, space, key string, at time.Time) (findings.Change, error) {
	var c findings.Change
	err := s.write(ctx, func(tx *txn) error {
		c = findings.Change{}
		if key != "" {
			st, err := scanStage(tx.row(`SELECT `+stageColumns+` FROM stages WHERE end_key = ? ORDER BY id LIMIT 1`, key))
			switch {
			case err == nil:
				c.Ended, c.Repeat = &st, true
				return nil
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		return tx.endStage(&c, space, key, micros(at))
	})
	if err != nil {
		return findings.Change{}, fmt.Errorf("store: end stage: %w", err)
	}
	return c, nil
}

// endStage ends space's running stage, if any, at at, recording key,
// and shows the space's hidden findings, noting both in c.
func (t *txn) endStage(c *findings.Change, space, key string, at int64) error {
	st, running, err := t.runningStage(space)
	if err != nil || !running {
		return err
	}
	if _, err := t.exec(`UPDATE stages SET ended_at = ?, end_key = ? WHERE id = ?`, at, key, st.ID); err != nil {
		return err
	}
	st.EndedAt = fromMicros(at)
	c.Ended = &st
	rows, err := t.query(`SELECT `+findingColumns+` FROM findings WHERE space = ? AND visible = 0 ORDER BY id`, space)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		f, err := scanFinding(rows)
		if err != nil {
			return err
		}
		f.Visible = true
		c.Released = append(c.Released, f)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	_, err = t.exec(`UPDATE findings SET visible = 1 WHERE space = ? AND visible = 0`, space)
	return err
}

// runningStage reads space's running stage.
func (t *txn) runningStage(space string) (findings.Stage, bool, error) {
	st, err := scanStage(t.row(`SELECT `+stageColumns+` FROM stages WHERE space = ? AND ended_at IS NULL`, space))
	if errors.Is(err, sql.ErrNoRows) {
		return findings.Stage{}, false, nil
	}
	return st, err == nil, err
}

// row runs a query for one row; its Scan says sql.ErrNoRows for none.
func (t *txn) row(query string, args ...any) scanner {
	st, err := t.stmt(query)
	if err != nil {
		return failedScan{err}
	}
	return st.QueryRowContext(t.ctx, args...)
}

// failedScan is a row whose query could not be prepared.
type failedScan struct{ err error }

func (f failedScan) Scan(...any) error { return f.err }

// boolInt is SQLite's boolean.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
