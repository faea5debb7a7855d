package api

import (
	"context"
	"net/http"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/world/chains"
)

// Chains reports the bot-to-bot chains of group chats (SPEC §10.6).
type Chains interface {
	// Chains lists the chats' chains, most recently active first.
	Chains(ctx context.Context, limit int) ([]gateway.ChainInfo, error)
	// Crossbot returns the chain settings in force.
	Crossbot() chains.Settings
}

// chainJSON is a chat's chain as GET /api/v1/chains shows it.
type chainJSON struct {
	Platform string `json:"platform"`
	Chat     string `json:"chat"`
	ChatName string `json:"chat_name,omitempty"`
	// Chain numbers the chat's chains; this is the latest.
	Chain int64 `json:"chain"`
	// Status is active, closed (it reached max_chain) or ended (a
	// person spoke after it).
	Status   string `json:"status"`
	Steps    int    `json:"steps"`
	MaxChain int    `json:"max_chain"`
	// StartedAt is when the chain started; LastStepAt when its latest
	// step was queued.
	StartedAt  string `json:"started_at,omitempty"`
	LastStepAt string `json:"last_step_at,omitempty"`
	// CooldownUntil is when a new chain may start in the chat, while
	// that is still to come; left out otherwise.
	CooldownUntil string `json:"cooldown_until,omitempty"`
	UpdatedAt     string `json:"updated_at"`
}

// chains lists the chats' chains, newest first: ?limit= (default 50, at
// most 500).
func (s *Server) chains(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r, 50, 500)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	items := []chainJSON{}
	if s.Chains != nil {
		list, err := s.Chains.Chains(r.Context(), limit)
		if err != nil {
			s.internal(w, err)
			return
		}
		settings := s.Chains.Crossbot()
		now := s.clock()
		for _, c := range list {
			items = append(items, chainOf(c, settings, now))
		}
	}
	writeList(w, items)
}

// chainOf is c as the API shows it, under settings at now.
func chainOf(c gateway.ChainInfo, settings chains.Settings, now time.Time) chainJSON {
	out := chainJSON{
		Platform: c.Platform, Chat: c.Chat, ChatName: c.ChatName, Chain: c.Chain, Status: c.Status,
		Steps: c.Steps, MaxChain: settings.MaxChain, UpdatedAt: rfc3339(c.UpdatedAt),
	}
	if !c.StartedAt.IsZero() {
		out.StartedAt = rfc3339(c.StartedAt)
	}
	if !c.LastAt.IsZero() && c.Steps > 0 {
		out.LastStepAt = rfc3339(c.LastAt)
		if until := c.LastAt.Add(settings.Cooldown); until.After(now) {
			out.CooldownUntil = rfc3339(until)
		}
	}
	return out
}
