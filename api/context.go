package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/world/shared"
)

// Context reads the shared context of spaces (SPEC §10.7).
type Context interface {
	// SpaceContext reads a space's events, entities, facts and artifact
	// chain, at most limit of each (0: the default); a space that is
	// not one wraps gateway.ErrBadRequest.
	SpaceContext(ctx context.Context, space string, limit int) (shared.Context, error)
}

// getContext is GET /api/v1/context?space=&limit=: the space's shared
// context as {events, entities, facts, chain}, each list oldest first,
// at most limit of each (default 50, at most 500) and every fact
// whatever its confidence.
func (s *Server) getContext(w http.ResponseWriter, r *http.Request) {
	if s.Context == nil {
		writeError(w, http.StatusNotImplemented, "not_implemented", "this gateway keeps no shared context")
		return
	}
	space := r.URL.Query().Get("space")
	if space == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "space is required (user:<id> or chat:<platform>:<id>)")
		return
	}
	limit, err := limitParam(r, gateway.DefaultContextView, gateway.MaxContextView)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	c, err := s.Context.SpaceContext(r.Context(), space, limit)
	if errors.Is(err, gateway.ErrBadRequest) {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	if err != nil {
		s.internal(w, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}
