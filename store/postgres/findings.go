package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard-chat/switchboard/world/findings"
)

// The findings board (migration 0003): findings and stages by space.
// With several gateways on one database, a finding's stage is read under
// a share lock of the stage's row, which a release's update waits for:
// a finding is either posted before the release (and released by it) or
// after (and visible at once), never hidden in a stage that has ended.

var _ findings.Store = (*Store)(nil)

// findingColumns is the select list scanFinding reads.
const findingColumns = `id, space, bot, text, severity, stage, visible, created_at`

func scanFinding(row pgx.Row) (findings.Finding, error) {
	var f findings.Finding
	var created int64
	err := row.Scan(&f.ID, &f.Space, &f.Bot, &f.Text, &f.Severity, &f.Stage, &f.Visible, &created)
	f.CreatedAt = fromMicros(created)
	return f, err
}

// stageColumns is the select list scanStage reads.
const stageColumns = `id, space, name, isolated, started_at, ended_at`

// stageRow receives a row of stageColumns.
type stageRow struct {
	s       findings.Stage
	started int64
	ended   *int64
}

func (r *stageRow) dest() []any {
	return []any{&r.s.ID, &r.s.Space, &r.s.Name, &r.s.Isolated, &r.started, &r.ended}
}

func (r *stageRow) stage() findings.Stage {
	s := r.s
	s.StartedAt = fromMicros(r.started)
	if r.ended != nil {
		s.EndedAt = fromMicros(*r.ended)
	}
	return s
}

// stage reads one stage; no row is pgx.ErrNoRows.
func (t *txn) stage(query string, args ...any) (findings.Stage, error) {
	var r stageRow
	err := t.scanOne(query, args, r.dest()...)
	return r.stage(), err
}

// AddFinding implements findings.Store.
func (s *Store) AddFinding(ctx context.Context, f findings.Finding) (findings.Finding, error) {
	at := micros(f.CreatedAt)
	err := s.write(ctx, func(tx *txn) error {
		st, running, err := tx.runningStage(f.Space, "FOR SHARE")
		if err != nil {
			return err
		}
		f.Stage, f.Visible = "", true
		if running {
			f.Stage, f.Visible = st.Name, !st.Isolated
		}
		return tx.scanOne(`INSERT INTO findings (space, bot, text, severity, stage, visible, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, text`,
			[]any{f.Space, f.Bot, f.Text, f.Severity, f.Stage, f.Visible, at}, &f.ID, &f.Text)
	})
	if err != nil {
		return findings.Finding{}, fmt.Errorf("store: add finding: %w", err)
	}
	f.CreatedAt = fromMicros(at)
	return f, nil
}

// Findings implements findings.Store.
func (s *Store) Findings(ctx context.Context, q findings.Query) ([]findings.Finding, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.Space != "" {
		where = append(where, "space = "+arg(q.Space))
	}
	if q.Bot != "" {
		where = append(where, "bot = "+arg(q.Bot))
	}
	switch {
	case q.Viewer != "":
		where = append(where, "(visible OR bot = "+arg(q.Viewer)+")")
	case !q.Hidden:
		where = append(where, "visible")
	}
	query := `SELECT ` + findingColumns + ` FROM findings`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY id DESC LIMIT ` + arg(max(q.Limit, 1))
	var out []findings.Finding
	err := s.pooled(ctx).each(query, args, func(rows pgx.Rows) error {
		f, err := scanFinding(rows)
		out = append(out, f)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: findings: %w", err)
	}
	slices.Reverse(out) // oldest first
	return out, nil
}

// Finding implements findings.Store.
func (s *Store) Finding(ctx context.Context, id int64) (findings.Finding, error) {
	var f findings.Finding
	var created int64
	err := s.pooled(ctx).scanOne(`SELECT `+findingColumns+` FROM findings WHERE id = $1`, []any{id},
		&f.ID, &f.Space, &f.Bot, &f.Text, &f.Severity, &f.Stage, &f.Visible, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return findings.Finding{}, fmt.Errorf("store: finding %d: %w", id, findings.ErrNotFound)
	}
	if err != nil {
		return findings.Finding{}, fmt.Errorf("store: finding %d: %w", id, err)
	}
	f.CreatedAt = fromMicros(created)
	return f, nil
}

// RunningStage implements findings.Store.
func (s *Store) RunningStage(ctx context.Context, space string) (findings.Stage, bool, error) {
	st, ok, err := s.pooled(ctx).runningStage(space, "")
	if err != nil {
		return findings.Stage{}, false, fmt.Errorf("store: running stage: %w", err)
	}
	return st, ok, nil
}

// RunningStages implements findings.Store.
func (s *Store) RunningStages(ctx context.Context) ([]findings.Stage, error) {
	var out []findings.Stage
	err := s.pooled(ctx).each(`SELECT `+stageColumns+` FROM stages WHERE ended_at IS NULL ORDER BY id DESC`, nil,
		func(rows pgx.Rows) error {
			var r stageRow
			err := rows.Scan(r.dest()...)
			out = append(out, r.stage())
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("store: running stages: %w", err)
	}
	return out, nil
}

// StartStage implements findings.Store. Two starts racing in one space,
// or one command carried out by two gateways, collide on a unique index;
// the loser runs again and finds what the winner did.
func (s *Store) StartStage(ctx context.Context, start findings.StageStart) (findings.Change, error) {
	var c findings.Change
	err := s.write(ctx, func(tx *txn) error {
		c = findings.Change{}
		if start.Key != "" {
			st, err := tx.stage(`SELECT `+stageColumns+` FROM stages WHERE start_key = $1`, start.Key)
			switch {
			case err == nil:
				c.Started, c.Repeat = &st, true
				return nil
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			}
		}
		at := micros(start.At)
		if err := tx.endStage(&c, start.Space, start.Key, at); err != nil {
			return err
		}
		var id int64
		err := tx.scanOne(`INSERT INTO stages (space, name, isolated, started_at, start_key) VALUES ($1, $2, $3, $4, $5) RETURNING id, name`,
			[]any{start.Space, start.Name, start.Isolated, at, start.Key}, &id, &start.Name)
		if err != nil {
			return raced(err)
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
			st, err := tx.stage(`SELECT `+stageColumns+` FROM stages WHERE end_key = $1`, key)
			switch {
			case err == nil:
				c.Ended, c.Repeat = &st, true
				return nil
			case !errors.Is(err, pgx.ErrNoRows):
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
	st, running, err := t.runningStage(space, "FOR UPDATE")
	if err != nil || !running {
		return err
	}
	if _, err := t.exec(`UPDATE stages SET ended_at = $1, end_key = $2 WHERE id = $3`, at, key, st.ID); err != nil {
		return raced(err)
	}
	st.EndedAt = fromMicros(at)
	c.Ended = &st
	err = t.each(`UPDATE findings SET visible = TRUE WHERE space = $1 AND NOT visible RETURNING `+findingColumns,
		[]any{space}, func(rows pgx.Rows) error {
			f, err := scanFinding(rows)
			c.Released = append(c.Released, f)
			return err
		})
	slices.SortFunc(c.Released, func(a, b findings.Finding) int { return int(a.ID - b.ID) })
	return err
}

// runningStage reads space's running stage, locked as lock says ("" for
// no lock).
func (t *txn) runningStage(space, lock string) (findings.Stage, bool, error) {
	st, err := t.stage(`SELECT `+stageColumns+` FROM stages WHERE space = $1 AND ended_at IS NULL `+lock, space)
	if errors.Is(err, pgx.ErrNoRows) {
		return findings.Stage{}, false, nil
	}
	return st, err == nil, err
}

// raced turns a unique violation, a race lost to another writer of the
// same stages, into errRetry: the next run sees what the winner did.
func raced(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation
		return errRetry
	}
	return err
}
