// Package api serves Switchboard's admin HTTP API (SPEC §8) under /api/v1
// and the dashboard. Every endpoint needs the admin token: reads take the
// bearer header or the dashboard's session cookie, changes only the
// bearer header (auth.go).
package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/identity"
	"github.com/switchboard-chat/switchboard/sessions"
)

// Config is the live configuration the API reports.
type Config interface {
	Roster() *gateway.Roster
	Directory() *identity.Directory
}

// Sessions reads stored sessions and their messages.
type Sessions interface {
	// ListSessions returns the sessions matching f, most recently
	// updated first.
	ListSessions(ctx context.Context, f sessions.Filter) ([]sessions.Session, error)
	// GetSession returns the session with id, or an error wrapping
	// sessions.ErrNotFound.
	GetSession(ctx context.Context, id string) (sessions.Session, error)
	// SessionMessages returns a session's newest limit messages of kind
	// (every kind when kind is ""), oldest first.
	SessionMessages(ctx context.Context, sessionID, kind string, limit int) ([]chat.Message, error)
}

// Server is the admin API.
type Server struct {
	Config      Config
	Sessions    Sessions
	Delegations Delegations
	Artifacts   Artifacts
	// Conversations lists a person's conversations; nil answers 501.
	Conversations Conversations
	// Platforms reports the bots' platform connections; nil lists none.
	Platforms Platforms
	// Instances lists the gateway processes sharing the database; nil
	// lists none.
	Instances Instances
	// Findings is the findings board; nil answers its endpoints 501.
	Findings Findings
	// Insights are what bots noticed about people; nil answers their
	// endpoints 501.
	Insights Insights
	// Context reads the shared context of spaces; nil answers its
	// endpoint 501.
	Context Context
	// Chains reports the bot-to-bot chains of group chats; nil lists
	// none.
	Chains Chains
	// Gossip reads gossip events; nil answers its endpoint 501.
	Gossip Gossip
	// Metrics is the registry /metrics serves, which GET /api/v1/health
	// summarizes; nil answers that 503.
	Metrics prometheus.Gatherer
	// Token is the admin bearer token; it must not be empty.
	Token  string
	Logger *slog.Logger

	// secure marks the dashboard cookie Secure on plain HTTP too.
	secure atomic.Bool
	// dash holds the dashboard's cookie sessions.
	dash dashboardSessions
	// now is the clock for session expiry and the health summary; nil
	// means time.Now.
	now func() time.Time
	// traffic keeps samples of the message counters for the health
	// summary's rates.
	traffic traffic
}

// Handler returns the API and dashboard routes, all behind the token
// (auth).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/bots", s.bots)
	mux.HandleFunc("GET /api/v1/users", s.users)
	mux.HandleFunc("GET /api/v1/sessions", s.sessions)
	mux.HandleFunc("GET /api/v1/sessions/{id}/messages", s.sessionMessages)
	mux.HandleFunc("GET /api/v1/conversations", s.conversations)
	mux.HandleFunc("POST /api/v1/delegations", s.postDelegation)
	mux.HandleFunc("GET /api/v1/delegations", s.listDelegations)
	mux.HandleFunc("GET /api/v1/delegations/{id}", s.getDelegation)
	mux.HandleFunc("GET /api/v1/artifacts/{id}", s.artifact)
	mux.HandleFunc("GET /api/v1/platforms", s.platforms)
	mux.HandleFunc("GET /api/v1/findings", s.listFindings)
	mux.HandleFunc("POST /api/v1/findings", s.postFinding)
	mux.HandleFunc("GET /api/v1/stages", s.listStages)
	mux.HandleFunc("POST /api/v1/stages", s.startStage)
	mux.HandleFunc("POST /api/v1/stages/release", s.releaseStage)
	mux.HandleFunc("GET /api/v1/insights", s.listInsights)
	mux.HandleFunc("GET /api/v1/context", s.getContext)
	mux.HandleFunc("DELETE /api/v1/insights/{id}", s.forgetInsight)
	mux.HandleFunc("GET /api/v1/gossip", s.listGossip)
	mux.HandleFunc("GET /api/v1/health", s.health)
	mux.HandleFunc("GET /api/v1/instances", s.instances)
	mux.HandleFunc("GET /api/v1/chains", s.chains)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint")
	})
	mux.HandleFunc("GET /dashboard", s.dashboard)
	return s.auth(mux)
}

// botJSON is a bot as the API shows it.
type botJSON struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Aliases      []string `json:"aliases"`
	Public       bool     `json:"public"`
	Brain        string   `json:"brain"`
	Platforms    []string `json:"platforms"`
	SessionScope string   `json:"session_scope"`
}

func (s *Server) bots(w http.ResponseWriter, r *http.Request) {
	items := []botJSON{}
	for _, b := range s.Config.Roster().Bots() {
		items = append(items, botJSON{
			ID: b.ID, Name: b.Name, Aliases: nonNil(b.Aliases), Public: b.Public, Brain: b.BrainKind,
			Platforms: nonNil(b.Platforms), SessionScope: b.SessionScope,
		})
	}
	writeList(w, items)
}

type userJSON struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Identities []string    `json:"identities"`
	Privacy    privacyJSON `json:"privacy"`
}

type privacyJSON struct {
	ShareWithOtherBots bool `json:"share_with_other_bots"`
	Invisible          bool `json:"invisible"`
}

func (s *Server) users(w http.ResponseWriter, r *http.Request) {
	items := []userJSON{}
	for _, u := range s.Config.Directory().Users() {
		items = append(items, userJSON{
			ID: u.ID, Name: u.Name, Identities: nonNil(u.Identities),
			Privacy: privacyJSON{ShareWithOtherBots: u.ShareWithOtherBots, Invisible: u.Invisible},
		})
	}
	writeList(w, items)
}

// sessionJSON is SPEC §8's session shape.
type sessionJSON struct {
	ID        string `json:"id"`
	Bot       string `json:"bot"`
	Scope     string `json:"scope"`
	User      string `json:"user,omitempty"`
	Platform  string `json:"platform,omitempty"`
	Chat      string `json:"chat,omitempty"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func sessionOf(s sessions.Session) sessionJSON {
	out := sessionJSON{
		ID: s.ID, Bot: s.Key.Bot, Scope: s.Key.Scope,
		CreatedAt: rfc3339(s.CreatedAt), UpdatedAt: rfc3339(s.UpdatedAt),
	}
	if s.Key.Scope == sessions.ScopeGroup {
		out.Platform, out.Chat, _ = strings.Cut(s.Key.ScopeID, ":")
	} else {
		out.User = s.Key.ScopeID
	}
	return out
}

// sessions lists sessions. user= takes a master or a platform ID and keeps
// that user's own sessions (group-scoped sessions belong to a group, not
// to one user, and are left out of a user's list).
func (s *Server) sessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := sessions.Filter{Bot: q.Get("bot")}
	if user := q.Get("user"); user != "" {
		u, _ := s.Config.Directory().User(user)
		f.ScopeIDs = u.IDs()
	}
	list, err := s.Sessions.ListSessions(r.Context(), f)
	if err != nil {
		s.internal(w, err)
		return
	}
	items := make([]sessionJSON, 0, len(list))
	for _, sess := range list {
		items = append(items, sessionOf(sess))
	}
	writeList(w, items)
}

// messageJSON is SPEC §8's message shape.
type messageJSON struct {
	ID       int64      `json:"id"`
	Kind     string     `json:"kind"`
	Chat     string     `json:"chat"`
	Platform string     `json:"platform"`
	From     chat.Party `json:"from"`
	Text     string     `json:"text"`
	Time     string     `json:"time"`
	// Failed marks the apology of a turn whose brain failed.
	Failed bool `json:"failed,omitempty"`
	// Artifacts are the files shown with the message (GET
	// /api/v1/artifacts/{id} reads each); left out when none.
	Artifacts []artifactJSON `json:"artifacts,omitempty"`
}

func (s *Server) sessionMessages(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r, 50, 500)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	kind := r.URL.Query().Get("kind")
	switch kind {
	case "", chat.KindChat, chat.KindWrapper, chat.KindSystem:
	default:
		writeError(w, http.StatusBadRequest, "bad_request", "kind must be chat, wrapper or system")
		return
	}
	id := r.PathValue("id")
	if _, err := s.Sessions.GetSession(r.Context(), id); errors.Is(err, sessions.ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", "no session "+strconv.Quote(id))
		return
	} else if err != nil {
		s.internal(w, err)
		return
	}
	msgs, err := s.Sessions.SessionMessages(r.Context(), id, kind, limit)
	if err != nil {
		s.internal(w, err)
		return
	}
	items := make([]messageJSON, 0, len(msgs))
	for _, m := range msgs {
		items = append(items, messageJSON{ID: m.ID, Kind: m.Kind, Chat: m.ChatID, Platform: m.Platform, From: m.From, Text: m.Text, Time: rfc3339(m.Time),
			Failed: m.Failed, Artifacts: artifactsOf(m.Artifacts)})
	}
	writeList(w, items)
}

// limitParam reads ?limit= with a default and a maximum.
func limitParam(r *http.Request, def, max int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, errors.New("limit must be a positive whole number")
	}
	return min(n, max), nil
}

func (s *Server) internal(w http.ResponseWriter, err error) {
	if s.Logger != nil {
		s.Logger.Error("api", "err", err)
	}
	writeError(w, http.StatusInternalServerError, "internal", "internal error")
}

func writeList[T any](w http.ResponseWriter, items []T) {
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
