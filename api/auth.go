package api

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The dashboard signs in once with ?token= and then holds a cookie with
// a random session ID, never the token itself (SPEC §12).
const (
	// cookieName keeps the name of the cookie that used to hold the raw
	// token, so signing in again overwrites such a cookie in a browser.
	cookieName = "switchboard_admin"
	// sessionTTL is how long a dashboard session lasts from sign-in; the
	// cookie carries the same Max-Age.
	sessionTTL = 12 * time.Hour
	// maxSessions bounds the live dashboard sessions; signing in beyond
	// it ends the session closest to expiry.
	maxSessions = 100
)

// maxBody bounds a request body (SPEC §12: 413 beyond).
const maxBody = 1 << 20

// SetSecureCookies sets whether the dashboard cookie is marked Secure on
// plain-HTTP requests too (gateway.web.secure_cookies, for a gateway
// behind a TLS proxy). Over TLS it always is. Safe to call at any time.
func (s *Server) SetSecureCookies(on bool) { s.secure.Store(on) }

// auth admits a request only with the admin token, before anything reads
// its body:
//   - GET and HEAD take the bearer header or a live dashboard session
//     cookie; GET /dashboard?token=… starts such a session (login).
//   - Every other method changes something and takes only the bearer
//     header (a cookie alone could be a cross-site or same-site forgery),
//     with Content-Type: application/json and a body of at most 1 MiB
//     (a change without a body, a DELETE, needs no Content-Type).
//
// A refused request is answered without reading its body, on a connection
// that is then closed (refuse).
func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		safe := r.Method == http.MethodGet || r.Method == http.MethodHead
		if safe && r.URL.Path == "/dashboard" && r.URL.Query().Has("token") {
			s.login(w, r)
			return
		}
		if msg := s.authenticate(r, safe); msg != "" {
			if safe && r.URL.Path == "/dashboard" {
				// A person in a browser: the sign-in form, not JSON.
				s.loginPage(w, loginReason(r))
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
			refuse(w, http.StatusUnauthorized, "unauthorized", msg)
			return
		}
		if !safe {
			// A change without a body (a DELETE) has no media type to
			// check.
			bodiless := r.ContentLength == 0 && len(r.TransferEncoding) == 0
			if !bodiless && !isJSON(r.Header.Get("Content-Type")) {
				refuse(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "a change needs Content-Type: application/json")
				return
			}
			if r.ContentLength > maxBody {
				refuse(w, http.StatusRequestEntityTooLarge, "too_large", tooLargeMessage)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}
		next.ServeHTTP(w, r)
	})
}

const tooLargeMessage = "the body is over 1 MiB"

// authenticate returns "" for a request that may proceed, else why not.
// A request with an Authorization header is judged by it alone.
func (s *Server) authenticate(r *http.Request, safe bool) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if s.validToken(bearerToken(h)) {
			return ""
		}
		return "bad admin token: send Authorization: Bearer <SWITCHBOARD_ADMIN_TOKEN>"
	}
	cookies := r.CookiesNamed(cookieName)
	if len(cookies) == 0 {
		return "admin token required: Authorization: Bearer <SWITCHBOARD_ADMIN_TOKEN>"
	}
	for _, c := range cookies {
		if s.dash.valid(c.Value, s.clock()) {
			if safe {
				return ""
			}
			return "a change needs Authorization: Bearer <SWITCHBOARD_ADMIN_TOKEN>; the dashboard cookie only reads"
		}
	}
	return "the dashboard session expired or is unknown: open /dashboard?token=<admin token> again"
}

// login checks ?token=, starts a dashboard session, sets its cookie and
// redirects to the clean URL, so the token leaves the address bar and
// history.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !s.validToken(r.URL.Query().Get("token")) {
		s.loginPage(w, loginView{Error: "That is not the admin token. Check it and try again."})
		return
	}
	id, err := s.dash.start(s.clock())
	if err != nil {
		s.internal(w, err)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: id, Path: "/", MaxAge: int(sessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || s.secure.Load(),
	})
	if s.Logger != nil {
		s.Logger.Info("dashboard session started", "remote", r.RemoteAddr)
	}
	// The token was in this request's URL: keep it out of the Referer of
	// whatever the next page loads.
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, "/dashboard", http.StatusSeeOther)
}

// validToken compares SHA-256 digests in constant time, so neither the
// token's content nor its length shows in the timing.
func (s *Server) validToken(got string) bool {
	if s.Token == "" || got == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(s.Token)), sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// bearerToken is the credentials of an Authorization header whose
// scheme is Bearer in any case (RFC 9110 §11.1), or "".
func bearerToken(h string) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// isJSON reports whether a Content-Type is application/json (any case,
// with or without parameters such as charset).
func isJSON(ct string) bool {
	t, _, err := mime.ParseMediaType(ct)
	return err == nil && t == "application/json"
}

// refuse answers an error without reading the request's body and closes
// the connection after the answer. Left open, the server would read up to
// 256 KiB of the unread body, before answering and again when closing it,
// so that the connection could carry another request; a body trickled a
// byte at a time would hold it for as long as the client likes.
func refuse(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Connection", "close")
	writeError(w, status, code, msg)
	endRead(w)
}

// endRead makes reading the rest of a refused request's body fail at
// once; the answer is already written. A ResponseWriter without
// deadlines (a test recorder) has no connection to hold.
func endRead(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

func (s *Server) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// dashboardSessions are the live dashboard sessions, kept in memory by
// the SHA-256 digest of their random IDs (so a map lookup's timing says
// nothing about a live ID) with their expiry. A restart ends them all.
type dashboardSessions struct {
	mu   sync.Mutex
	live map[[sha256.Size]byte]time.Time
}

// start makes a session with a 256-bit random ID and returns the ID.
func (d *dashboardSessions) start(now time.Time) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	id := base64.RawURLEncoding.EncodeToString(b[:])
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.live == nil {
		d.live = make(map[[sha256.Size]byte]time.Time)
	}
	for k, exp := range d.live {
		if !now.Before(exp) {
			delete(d.live, k)
		}
	}
	if len(d.live) >= maxSessions {
		var oldest [sha256.Size]byte
		first := true
		for k, exp := range d.live {
			if first || exp.Before(d.live[oldest]) {
				oldest, first = k, false
			}
		}
		delete(d.live, oldest)
	}
	d.live[sha256.Sum256([]byte(id))] = now.Add(sessionTTL)
	return id, nil
}

// valid reports whether id is a live session, forgetting it if expired.
func (d *dashboardSessions) valid(id string, now time.Time) bool {
	if id == "" {
		return false
	}
	key := sha256.Sum256([]byte(id))
	d.mu.Lock()
	defer d.mu.Unlock()
	exp, ok := d.live[key]
	if ok && !now.Before(exp) {
		delete(d.live, key)
		return false
	}
	return ok
}
