package web

import (
	"errors"
	"net/http"

	"github.com/switchboard-chat/switchboard/download"
	"github.com/switchboard-chat/switchboard/gateway"
)

// serveArtifact answers GET /artifacts/{id} (SPEC §8): the content of an
// artifact shown in one of the caller's chats, for the page's previews
// and download links. The caller proves who they are as on /ws, with
// token or user+sig in the query (a link cannot carry a header); with
// neither, or with a bad one, the answer is 401. The artifact is served
// only to a person who may read it (gateway.Host.Artifact); to anyone
// else it is a 404 exactly like one that does not exist, so a guessed ID
// tells nothing. Package download makes the answer safe to open on the
// page's own origin.
func (a *Adapter) serveArtifact(w http.ResponseWriter, r *http.Request) {
	ref := a.host.Load()
	if ref == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "web platform not running")
		return
	}
	q := r.URL.Query()
	// Unlike /ws, no credentials make no new visitor here.
	if q.Get("token") == "" && q.Get("user") == "" && q.Get("sig") == "" {
		writeError(w, http.StatusUnauthorized, "unauthorized", "an artifact needs the chat's credentials: token, or user and sig")
		return
	}
	v, err := identify(q, a.settings.Load().Secret, a.tokenKey)
	if err != nil {
		// Debug: a page with a stale token asks once per attachment.
		a.log.Debug("artifact refused", "reason", err.Error())
		writeError(w, http.StatusUnauthorized, "unauthorized", err.Error())
		return
	}
	art, err := ref.Host.Artifact(r.Context(), r.PathValue("id"), v.platformID)
	switch {
	case errors.Is(err, gateway.ErrUnknownArtifact):
		writeError(w, http.StatusNotFound, "not_found", "no such artifact")
		return
	case err != nil:
		a.log.Error("artifact", "err", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the gateway cannot read artifacts right now; try again")
		return
	}
	download.Serve(w, r, art)
}
