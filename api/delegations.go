package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
)

// Delegations starts and reads hand-offs.
type Delegations interface {
	Delegate(ctx context.Context, r gateway.DelegateRequest) (delegation.Record, error)
	Delegation(ctx context.Context, id string) (delegation.Record, error)
	Delegations(ctx context.Context, user, status string) ([]delegation.Record, error)
}

// delegationJSON is SPEC §8's delegation shape.
type delegationJSON struct {
	ID       string  `json:"id"`
	Kind     string  `json:"kind"`
	FromBot  string  `json:"from_bot"`
	ToBot    string  `json:"to_bot"`
	User     string  `json:"user"`
	Task     string  `json:"task"`
	Depth    int     `json:"depth"`
	ParentID *string `json:"parent_id"`
	Status   string  `json:"status"`
	// Progress is a running delegation's newest report, null for none.
	Progress  *delegation.Progress `json:"progress"`
	CreatedAt string               `json:"created_at"`
	UpdatedAt string               `json:"updated_at"`
	Result    string               `json:"result"`
	Error     string               `json:"error"`
	Inputs    []string             `json:"inputs"`
	Artifacts []artifactJSON       `json:"artifacts"`
	// Space is the space the work is done in (SPEC §10.7), where its
	// step of the artifact chain is; "" for records older than spaces.
	Space string `json:"space"`
	// EndedAt is when the status became final, null until then.
	EndedAt *string `json:"ended_at"`
}

type artifactJSON struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	MediaType    string `json:"media_type"`
	Size         int64  `json:"size"`
	SHA256       string `json:"sha256"`
	Producer     string `json:"producer"`
	DelegationID string `json:"delegation_id"`
}

func delegationOf(d delegation.Record) delegationJSON {
	out := delegationJSON{
		ID: d.ID, Kind: d.Kind, FromBot: d.From, ToBot: d.To, User: d.UserID, Task: d.Task, Depth: d.Depth,
		Status: d.Status, Progress: d.Progress,
		CreatedAt: rfc3339(d.CreatedAt), UpdatedAt: rfc3339(d.UpdatedAt), Result: d.Result, Error: d.Error,
		Inputs: nonNil(d.Inputs), Artifacts: []artifactJSON{}, Space: d.Space,
	}
	if !d.EndedAt.IsZero() {
		ended := rfc3339(d.EndedAt)
		out.EndedAt = &ended
	}
	if d.ParentID != "" {
		out.ParentID = &d.ParentID
	}
	for _, a := range d.Artifacts {
		out.Artifacts = append(out.Artifacts, artifactJSON{
			ID: a.ID, Name: a.Name, MediaType: a.MediaType, Size: a.Size, SHA256: a.SHA256,
			Producer: a.Producer, DelegationID: a.DelegationID,
		})
	}
	return out
}

// delegateBody is POST /api/v1/delegations.
type delegateBody struct {
	FromBot         string                `json:"from_bot"`
	ToBot           string                `json:"to_bot"`
	User            string                `json:"user"`
	Task            string                `json:"task"`
	Inputs          []string              `json:"inputs"`
	ExpectedOutputs []delegation.Expected `json:"expected_outputs"`
}

func (s *Server) postDelegation(w http.ResponseWriter, r *http.Request) {
	var body delegateBody
	if !decodeBody(w, r, &body) {
		return
	}
	for k, v := range map[string]string{"from_bot": body.FromBot, "to_bot": body.ToBot, "user": body.User, "task": body.Task} {
		if v == "" {
			writeError(w, http.StatusBadRequest, "bad_request", "missing field "+k)
			return
		}
	}
	d, err := s.Delegations.Delegate(r.Context(), gateway.DelegateRequest{
		From: body.FromBot, To: body.ToBot, User: body.User, Task: body.Task,
		Inputs: body.Inputs, Expected: body.ExpectedOutputs,
	})
	var refusal *delegation.Refusal
	switch {
	case err == nil:
		writeJSON(w, http.StatusAccepted, map[string]string{"id": d.ID, "status": d.Status})
	case errors.As(err, &refusal):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
			"id": d.ID, "status": d.Status,
			"error": map[string]string{"code": refusal.Code, "message": refusal.Reason},
		})
	case errors.Is(err, gateway.ErrUnknownBot):
		writeError(w, http.StatusBadRequest, "unknown_bot", err.Error())
	case errors.Is(err, gateway.ErrBadRequest):
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
	case errors.Is(err, gateway.ErrStopped):
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the gateway is shutting down")
	default:
		s.internal(w, err)
	}
}

func (s *Server) listDelegations(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	status := q.Get("status")
	switch status {
	case "", delegation.StatusQueued, delegation.StatusRunning, delegation.StatusDone, delegation.StatusFailed, delegation.StatusRefused:
	default:
		writeError(w, http.StatusBadRequest, "bad_request", "status must be queued, running, done, failed or refused")
		return
	}
	list, err := s.Delegations.Delegations(r.Context(), q.Get("user"), status)
	if err != nil {
		s.internal(w, err)
		return
	}
	items := make([]delegationJSON, 0, len(list))
	for _, d := range list {
		items = append(items, delegationOf(d))
	}
	writeList(w, items)
}

func (s *Server) getDelegation(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	d, err := s.Delegations.Delegation(r.Context(), id)
	if errors.Is(err, delegation.ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", "no delegation "+strconv.Quote(id))
		return
	}
	if err != nil {
		s.internal(w, err)
		return
	}
	writeJSON(w, http.StatusOK, delegationOf(d))
}

// decodeBody reads r's body (bounded by auth) as one JSON object into v,
// refusing unknown fields, and answers 413 or 400 when it cannot.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// One value only: anything after it is a malformed body.
		if _, terr := dec.Token(); terr != io.EOF {
			err = terr
			if err == nil {
				err = errors.New("data after the JSON object")
			}
		}
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", tooLargeMessage)
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "bad_request", "the body is empty: a JSON object is required")
	default:
		writeError(w, http.StatusBadRequest, "bad_request", "malformed JSON body: "+err.Error())
	}
	return false
}
