package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/switchboard-chat/switchboard/world/insights"
)

// Insights (migration 0018): the rows, and their FTS5 index, written
// with them (a trigger deletes an insight's index row with it).

var _ insights.Store = (*Store)(nil)

// insightColumns is the select list scanInsight reads, of insights i.
const insightColumns = `i.id, i.user_id, i.bot, i.kind, i.text, i.confidence, i.created_at`

func scanInsight(row scanner) (insights.Insight, error) {
	var in insights.Insight
	var created int64
	err := row.Scan(&in.ID, &in.User, &in.Bot, &in.Kind, &in.Text, &in.Confidence, &created)
	in.CreatedAt = fromMicros(created)
	return in, err
}

// AddInsight implements insights.Store.
func (s *Store) AddInsight(ctx context.Context, in insights.Insight) (insights.Insight, error) {
	in.CreatedAt = fromMicros(micros(in.CreatedAt))
	err := s.write(ctx, func(tx *txn) error {
		var err error
		in.ID, err = tx.insert(`INSERT INTO insights (user_id, bot, kind, text, confidence, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			in.User, in.Bot, in.Kind, in.Text, in.Confidence, micros(in.CreatedAt))
		if err != nil {
			return err
		}
		_, err = tx.exec(insertIndexed, in.ID, insights.Indexed(in.Text), personToken(in.User))
		return err
	})
	if err != nil {
		return insights.Insight{}, fmt.Errorf("store: add insight: %w", err)
	}
	return in, nil
}

// Insights implements insights.Store.
func (s *Store) Insights(ctx context.Context, q insights.Query) ([]insights.Insight, error) {
	var where []string
	var args []any
	if len(q.Users) > 0 {
		where = append(where, "i.user_id IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(q.Users)), ", ")+")")
		for _, u := range q.Users {
			args = append(args, u)
		}
	}
	if q.Bot != "" {
		where, args = append(where, "i.bot = ?"), append(args, q.Bot)
	}
	query := `SELECT ` + insightColumns + ` FROM insights i`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY i.id DESC LIMIT ?`
	args = append(args, max(q.Limit, 1))
	out, err := s.readInsights(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: insights: %w", err)
	}
	// Newest first from the query; oldest first to the caller.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// SearchInsights implements insights.Store with FTS5: the person's token
// and any of the words, ranked by bm25 on the words alone (the person's
// column weighs nothing). The user_id test keeps the answer exact
// whatever the token matches.
func (s *Store) SearchInsights(ctx context.Context, q insights.Search) ([]insights.Insight, error) {
	match := matchQuery(q.User, q.Words)
	if match == "" {
		return nil, nil
	}
	out, err := s.readInsights(ctx, `SELECT `+insightColumns+`
		FROM insights_fts JOIN insights i ON i.id = insights_fts.rowid
		WHERE insights_fts MATCH ? AND i.user_id = ? AND i.bot <> ? AND i.confidence >= ?
		ORDER BY bm25(insights_fts, 1.0, 0.0), i.id DESC LIMIT ?`,
		match, q.User, q.Viewer, q.MinConfidence, max(q.Limit, 1))
	if err != nil {
		return nil, fmt.Errorf("store: search insights: %w", err)
	}
	return out, nil
}

// matchQuery is the FTS5 query of a search: the person's token and any
// of the words, each a quoted string (so no word is read as an operator),
// or "" when no word is left. Only words as insights.Words makes them
// are used.
func matchQuery(user string, words []string) string {
	var terms []string
	for _, w := range words {
		if insights.IsWord(w) {
			terms = append(terms, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
		}
	}
	if len(terms) == 0 {
		return ""
	}
	return `person : "` + personToken(user) + `" AND words : (` + strings.Join(terms, " OR ") + `)`
}

// personToken is a person's token in the index: their ID in hex digits,
// one token whatever it holds, after a letter and before a digit, which
// keep the stemmer off it (its rules remove endings of letters).
func personToken(user string) string { return "p" + hex.EncodeToString([]byte(user)) + "0" }

// insertIndexed adds an insight's row to the index: its ID, its text
// without stop words (insights.Indexed), its person's token.
const insertIndexed = `INSERT INTO insights_fts (rowid, words, person) VALUES (?, ?, ?)`

// Execer runs statements in a transaction: a *sql.Tx.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// RebuildInsightIndex makes the full-text index of the insights again
// from their rows, in tx: what a copy into a SQLite database (store/
// dbcopy) does once it has written them, since the index is the
// store's to write.
func RebuildInsightIndex(ctx context.Context, tx Execer) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM insights_fts`); err != nil {
		return fmt.Errorf("rebuild the insights' index: %w", err)
	}
	// A batch at a time: the rows are read before they are indexed, on
	// the transaction's one connection.
	const batch = 500
	type row struct {
		id         int64
		user, text string
	}
	var last int64
	for {
		rows, err := tx.QueryContext(ctx, `SELECT id, user_id, text FROM insights WHERE id > ? ORDER BY id LIMIT ?`, last, batch)
		if err != nil {
			return fmt.Errorf("rebuild the insights' index: %w", err)
		}
		var got []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.user, &r.text); err != nil {
				rows.Close()
				return fmt.Errorf("rebuild the insights' index: %w", err)
			}
			got = append(got, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("rebuild the insights' index: %w", err)
		}
		for _, r := range got {
			if _, err := tx.ExecContext(ctx, insertIndexed, r.id, insights.Indexed(r.text), personToken(r.user)); err != nil {
				return fmt.Errorf("rebuild the insights' index: insight %d: %w", r.id, err)
			}
			last = r.id
		}
		if len(got) < batch {
			return nil
		}
	}
}

// DeleteInsight implements insights.Store.
func (s *Store) DeleteInsight(ctx context.Context, id int64) error {
	err := s.write(ctx, func(tx *txn) error {
		res, err := tx.exec(`DELETE FROM insights WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmp.Or(err, insights.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: delete insight %d: %w", id, err)
	}
	return nil
}

// readInsights runs a query of insights on a reader.
func (s *Store) readInsights(ctx context.Context, query string, args ...any) ([]insights.Insight, error) {
	var out []insights.Insight
	err := s.read(ctx, func(tx *txn) error {
		rows, err := tx.query(query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			in, err := scanInsight(rows)
			if err != nil {
				return err
			}
			out = append(out, in)
		}
		return rows.Err()
	})
	return out, err
}
