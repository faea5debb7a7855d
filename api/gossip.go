package api

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/switchboard-chat/switchboard/world/gossip"
)

// Gossip reads gossip events (SPEC §10.5).
type Gossip interface {
	// GossipEvents lists the newest limit events about user (a master
	// or platform ID; "" for everyone) of status ("" for any), newest
	// first.
	GossipEvents(ctx context.Context, user, status string, limit int) ([]gossip.Event, error)
}

// gossipJSON is a gossip event as the API shows it: recipients are the
// bots it was delivered to, pending those still due (queued events).
type gossipJSON struct {
	ID         int64    `json:"id"`
	User       string   `json:"user"`
	SourceBot  string   `json:"source_bot"`
	Topic      string   `json:"topic"`
	Summary    string   `json:"summary"`
	Depth      int      `json:"depth"`
	Status     string   `json:"status"`
	Reason     string   `json:"reason"`
	Recipients []string `json:"recipients"`
	Pending    []string `json:"pending"`
	CreatedAt  string   `json:"created_at"`
	UpdatedAt  string   `json:"updated_at"`
}

func gossipOf(e gossip.Event) gossipJSON {
	return gossipJSON{ID: e.ID, User: e.User, SourceBot: e.SourceBot, Topic: e.Topic, Summary: e.Summary, Depth: e.Depth,
		Status: e.Status, Reason: e.Reason, Recipients: nonNil(e.Recipients), Pending: nonNil(e.Pending),
		CreatedAt: rfc3339(e.CreatedAt), UpdatedAt: rfc3339(e.UpdatedAt)}
}

// listGossip is GET /api/v1/gossip?user=&status=&limit=: the newest
// events (default 50, at most 500), newest first, each with its status
// and the reason.
func (s *Server) listGossip(w http.ResponseWriter, r *http.Request) {
	if s.Gossip == nil {
		writeError(w, http.StatusNotImplemented, "not_implemented", "this gateway has no gossip")
		return
	}
	q := r.URL.Query()
	status := q.Get("status")
	if status != "" && !slices.Contains(gossip.Statuses, status) {
		writeError(w, http.StatusBadRequest, "bad_request", "status must be "+strings.Join(gossip.Statuses, ", ")+" or left out")
		return
	}
	limit, err := limitParam(r, 50, 500)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	list, err := s.Gossip.GossipEvents(r.Context(), q.Get("user"), status, limit)
	if err != nil {
		s.internal(w, err)
		return
	}
	items := make([]gossipJSON, 0, len(list))
	for _, e := range list {
		items = append(items, gossipOf(e))
	}
	writeList(w, items)
}
