package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/download"
)

// Artifacts reads stored artifacts.
type Artifacts interface {
	// Artifacts loads artifacts with their content, in the order asked;
	// an unknown ID is an error wrapping delegation.ErrNotFound.
	Artifacts(ctx context.Context, ids []string) ([]chat.Artifact, error)
}

// artifact serves GET /api/v1/artifacts/{id}: the content with its media
// type, safe to open in the dashboard's browser (package download).
func (s *Server) artifact(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	arts, err := s.Artifacts.Artifacts(r.Context(), []string{id})
	if errors.Is(err, delegation.ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", "no artifact "+strconv.Quote(id))
		return
	}
	if err != nil {
		s.internal(w, err)
		return
	}
	download.Serve(w, r, arts[0])
}

// artifactsOf describes artifacts as the API shows them (nil for none).
func artifactsOf(arts []chat.Artifact) []artifactJSON {
	var out []artifactJSON
	for _, a := range arts {
		out = append(out, artifactJSON{
			ID: a.ID, Name: a.Name, MediaType: a.MediaType, Size: a.Size, SHA256: a.SHA256,
			Producer: a.Producer, DelegationID: a.DelegationID,
		})
	}
	return out
}
