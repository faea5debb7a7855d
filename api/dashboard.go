package api

import (
	"bytes"
	_ "embed"
	"html/template"
	"net/http"
)

//go:embed assets/dashboard.html
var dashboardHTML []byte

//go:embed assets/login.html
var loginHTML string

var loginTemplate = template.Must(template.New("login").Parse(loginHTML))

// loginCSP allows the sign-in page nothing but its inline style and a
// form that submits to this origin.
const loginCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// dashboard serves the operator's page; it reads the API with the cookie
// that auth set and refreshes itself every few seconds.
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(dashboardHTML)
}

// loginView is what the sign-in page says above its form: an Error (a
// wrong token) or a Note (a session that ended).
type loginView struct {
	Error, Note string
}

// loginReason says why a browser without a valid session sees the
// sign-in page: nothing for a first visit, a note for a session that
// ended, an error for a wrong bearer header.
func loginReason(r *http.Request) loginView {
	switch {
	case r.Header.Get("Authorization") != "":
		return loginView{Error: "The Authorization header does not hold the admin token."}
	case len(r.CookiesNamed(cookieName)) > 0:
		return loginView{Note: "Your dashboard session has ended (it expired, or the gateway restarted). Sign in again."}
	}
	return loginView{}
}

// loginPage answers 401 with the sign-in page: a form that sends the
// token to /dashboard?token=, which starts a session (login). Like every
// refusal it is answered without reading a request body.
func (s *Server) loginPage(w http.ResponseWriter, v loginView) {
	var buf bytes.Buffer
	if err := loginTemplate.Execute(&buf, v); err != nil {
		s.internal(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", loginCSP)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("WWW-Authenticate", `Bearer realm="switchboard"`)
	h.Set("Connection", "close")
	w.WriteHeader(http.StatusUnauthorized)
	w.Write(buf.Bytes())
	endRead(w)
}
