package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/switchboard-chat/switchboard/world/insights"
)

// Insights lists and forgets what bots noticed about people (SPEC
// §10.4).
type Insights interface {
	// ListInsights lists insights as q selects them, oldest first.
	ListInsights(ctx context.Context, q insights.Query) ([]insights.Insight, error)
	// ForgetInsight deletes one (insights.ErrNotFound: no such insight).
	ForgetInsight(ctx context.Context, id int64) error
}

// insightJSON is an insight as the API shows it: bot is the writing
// bot's ID, user the person's master ID (or platform ID, for a person
// users.yaml does not list).
type insightJSON struct {
	ID         int64   `json:"id"`
	User       string  `json:"user"`
	Bot        string  `json:"bot"`
	Kind       string  `json:"kind"`
	Text       string  `json:"text"`
	Confidence float64 `json:"confidence"`
	CreatedAt  string  `json:"created_at"`
}

func insightOf(in insights.Insight) insightJSON {
	return insightJSON{ID: in.ID, User: in.User, Bot: in.Bot, Kind: in.Kind, Text: in.Text, Confidence: in.Confidence,
		CreatedAt: rfc3339(in.CreatedAt)}
}

// insightsReady answers 501 when the server keeps no insights.
func (s *Server) insightsReady(w http.ResponseWriter) bool {
	if s.Insights == nil {
		writeError(w, http.StatusNotImplemented, "not_implemented", "this gateway keeps no insights")
		return false
	}
	return true
}

// listInsights is GET /api/v1/insights?user=&bot=&limit=: the newest
// insights (limit, default 100, at most 1000), oldest first. user= takes
// a master or a platform ID and keeps the insights about that person
// under any of their IDs; bot= keeps one bot's.
func (s *Server) listInsights(w http.ResponseWriter, r *http.Request) {
	if !s.insightsReady(w) {
		return
	}
	limit, err := limitParam(r, 100, 1000)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	q := insights.Query{Bot: r.URL.Query().Get("bot"), Limit: limit}
	if user := r.URL.Query().Get("user"); user != "" {
		u, _ := s.Config.Directory().User(user)
		q.Users = u.IDs()
	}
	list, err := s.Insights.ListInsights(r.Context(), q)
	if err != nil {
		s.internal(w, err)
		return
	}
	items := make([]insightJSON, 0, len(list))
	for _, in := range list {
		items = append(items, insightOf(in))
	}
	writeList(w, items)
}

// forgetInsight is DELETE /api/v1/insights/{id}: 204 once it is
// forgotten, 404 for an ID no insight has.
func (s *Server) forgetInsight(w http.ResponseWriter, r *http.Request) {
	if !s.insightsReady(w) {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		writeError(w, http.StatusBadRequest, "bad_request", "an insight's ID is a positive whole number")
		return
	}
	err = s.Insights.ForgetInsight(r.Context(), id)
	switch {
	case errors.Is(err, insights.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "no insight "+strconv.FormatInt(id, 10))
	case err != nil:
		s.internal(w, err)
	default:
		if s.Logger != nil {
			s.Logger.Info("insight forgotten", "insight", id)
		}
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
	}
}
