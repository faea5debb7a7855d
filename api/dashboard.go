package api

import (
	_ "embed"
	"net/http"
)

//go:embed assets/dashboard.html
var dashboardHTML []byte

// dashboard serves the operator's page; it reads the API with the cookie
// that auth set and refreshes itself every few seconds.
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(dashboardHTML)
}
