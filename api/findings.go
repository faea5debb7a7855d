package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/world"
	"github.com/switchboard-chat/switchboard/world/findings"
)

// Findings reads and writes the findings board and runs stages (SPEC
// §10.2, §10.7).
type Findings interface {
	// ListFindings lists findings as q selects them.
	ListFindings(ctx context.Context, q findings.Query) ([]findings.Finding, error)
	// PostFinding posts a finding as a configured, non-public bot.
	PostFinding(ctx context.Context, p findings.Post) (findings.Finding, error)
	// StartStage starts a stage in a space, ending the running one.
	StartStage(ctx context.Context, space, name string, isolated bool) (findings.Change, error)
	// ReleaseStage ends a space's stage (findings.ErrNoStage: none).
	ReleaseStage(ctx context.Context, space string) (findings.Change, error)
	// Stages lists the running stages.
	Stages(ctx context.Context) ([]findings.Stage, error)
}

// findingJSON is a finding as the API shows it.
type findingJSON struct {
	ID        int64  `json:"id"`
	Space     string `json:"space"`
	Bot       string `json:"bot"`
	Text      string `json:"text"`
	Severity  string `json:"severity"`
	Stage     string `json:"stage"`
	Visible   bool   `json:"visible"`
	CreatedAt string `json:"created_at"`
}

func findingOf(f findings.Finding) findingJSON {
	return findingJSON{ID: f.ID, Space: f.Space, Bot: f.Bot, Text: f.Text, Severity: f.Severity, Stage: f.Stage,
		Visible: f.Visible, CreatedAt: rfc3339(f.CreatedAt)}
}

func findingsOf(fs []findings.Finding) []findingJSON {
	out := make([]findingJSON, 0, len(fs))
	for _, f := range fs {
		out = append(out, findingOf(f))
	}
	return out
}

// stageJSON is a stage as the API shows it; ended_at is null while it
// runs.
type stageJSON struct {
	ID        int64   `json:"id"`
	Space     string  `json:"space"`
	Name      string  `json:"name"`
	Isolated  bool    `json:"isolated"`
	StartedAt string  `json:"started_at"`
	EndedAt   *string `json:"ended_at"`
}

func stageOf(s *findings.Stage) *stageJSON {
	if s == nil {
		return nil
	}
	out := &stageJSON{ID: s.ID, Space: s.Space, Name: s.Name, Isolated: s.Isolated, StartedAt: rfc3339(s.StartedAt)}
	if !s.EndedAt.IsZero() {
		at := rfc3339(s.EndedAt)
		out.EndedAt = &at
	}
	return out
}

// changeJSON is what a stage request did.
type changeJSON struct {
	Started  *stageJSON    `json:"started"`
	Ended    *stageJSON    `json:"ended"`
	Released []findingJSON `json:"released"`
}

// findingsReady answers 501 when the server has no board.
func (s *Server) findingsReady(w http.ResponseWriter) bool {
	if s.Findings == nil {
		writeError(w, http.StatusNotImplemented, "not_implemented", "this gateway has no findings board")
		return false
	}
	return true
}

// listFindings is GET /api/v1/findings?space=&bot=&viewer=&limit=: the
// newest findings, oldest first. With viewer=BOT, what BOT may see;
// without, hidden findings too, with visible false.
func (s *Server) listFindings(w http.ResponseWriter, r *http.Request) {
	if !s.findingsReady(w) {
		return
	}
	q := r.URL.Query()
	limit, err := limitParam(r, 50, 500)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	fq := findings.Query{Space: q.Get("space"), Bot: q.Get("bot"), Viewer: q.Get("viewer"), Hidden: true, Limit: limit}
	if fq.Space != "" {
		sp, err := world.Parse(fq.Space)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", "space: "+err.Error())
			return
		}
		fq.Space = sp.String()
	}
	list, err := s.Findings.ListFindings(r.Context(), fq)
	if err != nil {
		s.findingsError(w, err)
		return
	}
	writeList(w, findingsOf(list))
}

// postFindingBody is POST /api/v1/findings.
type postFindingBody struct {
	Space    string `json:"space"`
	Bot      string `json:"bot"`
	Text     string `json:"text"`
	Severity string `json:"severity"`
}

// postFinding posts a finding as a bot: 201 with the finding.
func (s *Server) postFinding(w http.ResponseWriter, r *http.Request) {
	if !s.findingsReady(w) {
		return
	}
	var body postFindingBody
	if !decodeBody(w, r, &body) {
		return
	}
	for _, f := range [][2]string{{"space", body.Space}, {"bot", body.Bot}, {"text", body.Text}} {
		if strings.TrimSpace(f[1]) == "" {
			writeError(w, http.StatusBadRequest, "bad_request", "missing field "+f[0])
			return
		}
	}
	f, err := s.Findings.PostFinding(r.Context(), findings.Post{Space: body.Space, Bot: body.Bot, Text: body.Text, Severity: body.Severity})
	if err != nil {
		s.findingsError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, findingOf(f))
}

// stageBody is POST /api/v1/stages and /api/v1/stages/release.
type stageBody struct {
	Space    string `json:"space"`
	Name     string `json:"name"`
	Isolated bool   `json:"isolated"`
}

// startStage starts a stage: 201 with what changed (the stage ended, and
// the findings it released).
func (s *Server) startStage(w http.ResponseWriter, r *http.Request) {
	if !s.findingsReady(w) {
		return
	}
	var body stageBody
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Space == "" || body.Name == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "space and name are required")
		return
	}
	c, err := s.Findings.StartStage(r.Context(), body.Space, body.Name, body.Isolated)
	if err != nil {
		s.findingsError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, changeJSON{Started: stageOf(c.Started), Ended: stageOf(c.Ended), Released: findingsOf(c.Released)})
}

// releaseBody is POST /api/v1/stages/release.
type releaseBody struct {
	Space string `json:"space"`
}

// releaseStage ends a space's stage: 200 with the stage and the findings
// it released, 404 when none runs.
func (s *Server) releaseStage(w http.ResponseWriter, r *http.Request) {
	if !s.findingsReady(w) {
		return
	}
	var body releaseBody
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Space == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "missing field space")
		return
	}
	c, err := s.Findings.ReleaseStage(r.Context(), body.Space)
	if err != nil {
		s.findingsError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, changeJSON{Ended: stageOf(c.Ended), Released: findingsOf(c.Released)})
}

// listStages is GET /api/v1/stages: the running stages, newest first.
func (s *Server) listStages(w http.ResponseWriter, r *http.Request) {
	if !s.findingsReady(w) {
		return
	}
	list, err := s.Findings.Stages(r.Context())
	if err != nil {
		s.internal(w, err)
		return
	}
	items := make([]*stageJSON, 0, len(list))
	for i := range list {
		items = append(items, stageOf(&list[i]))
	}
	writeList(w, items)
}

// findingsError answers a board's refusal.
func (s *Server) findingsError(w http.ResponseWriter, err error) {
	var invalid *world.InvalidError
	switch {
	case errors.As(err, &invalid):
		writeError(w, http.StatusBadRequest, "bad_request", invalid.Error())
	case errors.Is(err, findings.ErrNoStage):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, gateway.ErrUnknownBot):
		writeError(w, http.StatusBadRequest, "unknown_bot", err.Error())
	case errors.Is(err, gateway.ErrPublicBot):
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
	default:
		s.internal(w, err)
	}
}
