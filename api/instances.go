package api

import (
	"context"
	"net/http"

	"github.com/switchboard-chat/switchboard/gateway"
)

// Instances lists the live gateway processes sharing the database (SPEC
// §11): on SQLite, this one.
type Instances interface {
	Instances(ctx context.Context) ([]gateway.Instance, error)
}

// instanceJSON is an instance as GET /api/v1/instances shows it.
type instanceJSON struct {
	ID          string         `json:"id"`
	Address     string         `json:"address"`
	StartedAt   string         `json:"started_at"`
	HeartbeatAt string         `json:"heartbeat_at"`
	Leads       []gateway.Lead `json:"leads"`
}

// instances lists the live instances and the bots each leads.
func (s *Server) instances(w http.ResponseWriter, r *http.Request) {
	items := []instanceJSON{}
	if s.Instances != nil {
		list, err := s.Instances.Instances(r.Context())
		if err != nil {
			s.internal(w, err)
			return
		}
		for _, in := range list {
			leads := in.Leads
			if leads == nil {
				leads = []gateway.Lead{}
			}
			items = append(items, instanceJSON{ID: in.ID, Address: in.Address, StartedAt: rfc3339(in.StartedAt),
				HeartbeatAt: rfc3339(in.HeartbeatAt), Leads: leads})
		}
	}
	writeList(w, items)
}
