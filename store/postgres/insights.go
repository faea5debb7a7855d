package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/world/insights"
)

// Insights (migration 0006): the rows, with their text as a tsvector of
// the english configuration, searched with a tsquery of the message's
// words and ranked by ts_rank.

var _ insights.Store = (*Store)(nil)

// insightColumns is the select list scanInsight reads.
const insightColumns = `id, user_id, bot, kind, text, confidence, created_at`

func scanInsight(row pgx.Row) (insights.Insight, error) {
	var in insights.Insight
	var created int64
	err := row.Scan(&in.ID, &in.User, &in.Bot, &in.Kind, &in.Text, &in.Confidence, &created)
	in.CreatedAt = fromMicros(created)
	return in, err
}

// AddInsight implements insights.Store.
func (s *Store) AddInsight(ctx context.Context, in insights.Insight) (insights.Insight, error) {
	at := micros(in.CreatedAt)
	err := s.write(ctx, func(tx *txn) error {
		return tx.scanOne(`INSERT INTO insights (user_id, bot, kind, text, confidence, created_at)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, text`,
			[]any{in.User, in.Bot, in.Kind, in.Text, in.Confidence, at}, &in.ID, &in.Text)
	})
	if err != nil {
		return insights.Insight{}, fmt.Errorf("store: add insight: %w", err)
	}
	in.CreatedAt = fromMicros(at)
	return in, nil
}

// Insights implements insights.Store.
func (s *Store) Insights(ctx context.Context, q insights.Query) ([]insights.Insight, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(q.Users) > 0 {
		where = append(where, "user_id = ANY("+arg(q.Users)+")")
	}
	if q.Bot != "" {
		where = append(where, "bot = "+arg(q.Bot))
	}
	query := `SELECT ` + insightColumns + ` FROM insights`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY id DESC LIMIT ` + arg(max(q.Limit, 1))
	out, err := s.readInsights(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: insights: %w", err)
	}
	slices.Reverse(out) // oldest first
	return out, nil
}

// SearchInsights implements insights.Store: any of the words, read by
// the english configuration as the texts were, ranked by ts_rank.
func (s *Store) SearchInsights(ctx context.Context, q insights.Search) ([]insights.Insight, error) {
	query := tsQuery(q.Words)
	if query == "" {
		return nil, nil
	}
	out, err := s.readInsights(ctx, `SELECT `+insightColumns+`
		FROM insights, to_tsquery('english', $1) AS q
		WHERE user_id = $2 AND bot <> $3 AND confidence >= $4 AND search @@ q
		ORDER BY ts_rank(search, q) DESC, id DESC LIMIT $5`,
		query, q.User, q.Viewer, q.MinConfidence, max(q.Limit, 1))
	if err != nil {
		return nil, fmt.Errorf("store: search insights: %w", err)
	}
	return out, nil
}

// tsQuery is the tsquery text of any of the words, each a quoted lexeme
// (so no word is read as an operator), or "" when no word is left. Only
// words as insights.Words makes them are used: letters and digits, no
// quote or backslash to escape.
func tsQuery(words []string) string {
	var terms []string
	for _, w := range words {
		if insights.IsWord(w) {
			terms = append(terms, "'"+w+"'")
		}
	}
	return strings.Join(terms, " | ")
}

// DeleteInsight implements insights.Store.
func (s *Store) DeleteInsight(ctx context.Context, id int64) error {
	err := s.write(ctx, func(tx *txn) error {
		n, err := tx.exec(`DELETE FROM insights WHERE id = $1`, id)
		if err == nil && n == 0 {
			err = insights.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete insight %d: %w", id, err)
	}
	return nil
}

// readInsights runs a query of insights on the pool.
func (s *Store) readInsights(ctx context.Context, query string, args ...any) ([]insights.Insight, error) {
	var out []insights.Insight
	err := s.pooled(ctx).each(query, args, func(rows pgx.Rows) error {
		in, err := scanInsight(rows)
		out = append(out, in)
		return err
	})
	return out, err
}
