package api

import (
	"context"
	"net/http"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

// Conversations lists a person's conversations on a platform, for GET
// /api/v1/conversations (the terminal's `conv list`).
type Conversations interface {
	// Conversations returns p's rooms and private chats on platform,
	// newest message first.
	Conversations(ctx context.Context, platform string, p gateway.Person) ([]gateway.Conversation, error)
}

// conversationJSON is one item of GET /api/v1/conversations.
type conversationJSON struct {
	ID       string   `json:"id"`
	Platform string   `json:"platform"`
	Kind     string   `json:"kind"`
	Bots     []string `json:"bots"`
	Open     bool     `json:"open"`
	// LastMessageAt is RFC 3339, or null for a conversation without
	// messages.
	LastMessageAt *string `json:"last_message_at"`
}

// conversations serves GET /api/v1/conversations?user=&platform=: user
// is a master or platform ID, both are required.
func (s *Server) conversations(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	user, platform := q.Get("user"), q.Get("platform")
	if user == "" || platform == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "user and platform are required")
		return
	}
	if s.Conversations == nil {
		writeError(w, http.StatusNotImplemented, "not_implemented", "this gateway cannot list conversations")
		return
	}
	u, _ := s.Config.Directory().User(user)
	list, err := s.Conversations.Conversations(r.Context(), platform, gateway.Person{ID: u.ID, Identities: u.Identities})
	if err != nil {
		s.internal(w, err)
		return
	}
	items := make([]conversationJSON, 0, len(list))
	for _, c := range list {
		item := conversationJSON{ID: c.ID, Platform: c.Platform, Kind: "private", Bots: c.Bots, Open: c.Open}
		if c.Group {
			item.Kind = "group"
		}
		if item.Bots == nil {
			item.Bots = []string{}
		}
		if !c.LastMessageAt.IsZero() {
			t := c.LastMessageAt.UTC().Format(time.RFC3339)
			item.LastMessageAt = &t
		}
		items = append(items, item)
	}
	writeList(w, items)
}
