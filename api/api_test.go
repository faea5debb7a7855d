package api

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains/script"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/store/sqlite"
)

const testToken = "test-admin-token-0123456789"

// fixture is an api.Server over a started gateway on a real SQLite store,
// with two script bots that may hand work to each other.
type fixture struct {
	s     *Server
	h     http.Handler
	calls *countingDelegations
	clock *fakeClock
}

// countingDelegations passes everything to the gateway, counting the
// hand-offs that reach it.
type countingDelegations struct {
	*gateway.Gateway
	n atomic.Int32
}

func (c *countingDelegations) Delegate(ctx context.Context, r gateway.DelegateRequest) (delegation.Record, error) {
	c.n.Add(1)
	return c.Gateway.Delegate(ctx, r)
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	gw := gateway.New(gateway.Options{Store: store, Sessions: store, Outbox: store, Logger: log})
	brain, err := script.New(script.Config{Default: "done"})
	if err != nil {
		t.Fatal(err)
	}
	gw.SetRoster(gateway.NewRoster([]*gateway.Bot{
		{ID: "mattyatlas", Name: "Matty Atlas", Brain: brain, BrainKind: "script", Timeout: time.Minute, Allow: []string{"*"}, SessionScope: "user"},
		{ID: "finnshipley", Name: "Finn Shipley", Brain: brain, BrainKind: "script", Timeout: time.Minute, Allow: []string{"*"}, SessionScope: "user"},
	}))
	if err := gw.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		gw.Drain(ctx)
		gw.Flush(ctx)
		store.Close()
	})
	f := &fixture{calls: &countingDelegations{Gateway: gw}, clock: &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	f.s = &Server{Config: gw, Sessions: store, Delegations: f.calls, Artifacts: store, Token: testToken, Logger: log, now: f.clock.Now}
	f.h = f.s.Handler()
	return f
}

// login signs in at /dashboard?token= and returns the session cookie.
func (f *fixture) login(t *testing.T) *http.Cookie {
	t.Helper()
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, httptest.NewRequest("GET", "/dashboard?token="+testToken, nil))
	if w.Code != http.StatusSeeOther {
		t.Fatalf("login: %d %s", w.Code, w.Body)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == cookieName {
			return c
		}
	}
	t.Fatal("login set no cookie")
	return nil
}

// errorCode is the code of a JSON error body, or "" for another body.
func errorCode(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var body struct {
		Error struct{ Code, Message string }
	}
	if json.Unmarshal(w.Body.Bytes(), &body) != nil {
		return ""
	}
	if body.Error.Message == "" && body.Error.Code != "" {
		t.Errorf("error %q without a message", body.Error.Code)
	}
	return body.Error.Code
}

const goodBody = `{"from_bot":"mattyatlas","to_bot":"finnshipley","user":"web-ann","task":"write it"}`

// credentials a request in the table carries.
const (
	noCred      = iota
	bearer      // Authorization: Bearer <token>
	cookie      // the dashboard session cookie
	tokenCookie // the raw admin token as the cookie's value
	badCookie   // a session ID that was never issued
	oldCookie   // a session past its expiry
)

func TestAuthRules(t *testing.T) {
	long := `{"from_bot":"mattyatlas","to_bot":"finnshipley","user":"web-ann","task":"` + strings.Repeat("x", maxBody) + `"}`
	tests := []struct {
		name        string
		method      string
		path        string
		cred        int
		auth        string // an Authorization header that replaces cred's
		contentType string
		body        string
		chunked     bool // send the body without a Content-Length
		status      int
		code        string
		delegated   bool // the request reached the gateway's Delegate
	}{
		// Reads: the header or the cookie session.
		{name: "get without credentials", method: "GET", path: "/api/v1/bots", status: 401, code: "unauthorized"},
		{name: "get with bearer", method: "GET", path: "/api/v1/bots", cred: bearer, status: 200},
		{name: "get with cookie session", method: "GET", path: "/api/v1/bots", cred: cookie, status: 200},
		{name: "head with cookie session", method: "HEAD", path: "/api/v1/bots", cred: cookie, status: 200},
		{name: "dashboard with cookie session", method: "GET", path: "/dashboard", cred: cookie, status: 200},
		{name: "dashboard without credentials", method: "GET", path: "/dashboard", status: 401, code: "unauthorized"},
		{name: "cookie holding the token is refused", method: "GET", path: "/api/v1/bots", cred: tokenCookie, status: 401, code: "unauthorized"},
		{name: "unknown session", method: "GET", path: "/api/v1/bots", cred: badCookie, status: 401, code: "unauthorized"},
		{name: "expired session", method: "GET", path: "/api/v1/bots", cred: oldCookie, status: 401, code: "unauthorized"},
		{name: "bad header beside a good cookie", method: "GET", path: "/api/v1/bots", cred: cookie, auth: "Bearer nope", status: 401, code: "unauthorized"},
		// The Bearer scheme in any case; the token exactly.
		{name: "scheme lower case", method: "GET", path: "/api/v1/bots", auth: "bearer " + testToken, status: 200},
		{name: "scheme upper case", method: "GET", path: "/api/v1/bots", auth: "BEARER " + testToken, status: 200},
		{name: "scheme mixed case, extra spaces", method: "GET", path: "/api/v1/bots", auth: "  bEaReR   " + testToken + " ", status: 200},
		{name: "other scheme", method: "GET", path: "/api/v1/bots", auth: "Basic " + testToken, status: 401, code: "unauthorized"},
		{name: "scheme without token", method: "GET", path: "/api/v1/bots", auth: "Bearer", status: 401, code: "unauthorized"},
		{name: "token alone", method: "GET", path: "/api/v1/bots", auth: testToken, status: 401, code: "unauthorized"},
		{name: "token one byte short", method: "GET", path: "/api/v1/bots", auth: "Bearer " + testToken[:len(testToken)-1], status: 401, code: "unauthorized"},
		{name: "token one byte long", method: "GET", path: "/api/v1/bots", auth: "Bearer " + testToken + "x", status: 401, code: "unauthorized"},
		{name: "token of another length", method: "GET", path: "/api/v1/bots", auth: "Bearer x", status: 401, code: "unauthorized"},
		{name: "token in another case", method: "GET", path: "/api/v1/bots", auth: "Bearer " + strings.ToUpper(testToken), status: 401, code: "unauthorized"},
		{name: "token as a query on the API", method: "GET", path: "/api/v1/bots?token=" + testToken, status: 401, code: "unauthorized"},

		// Changes: the bearer header only, JSON only, 1 MiB at most.
		{name: "post with bearer", method: "POST", path: "/api/v1/delegations", cred: bearer, contentType: "application/json", body: goodBody, status: 202, delegated: true},
		{name: "post with charset", method: "POST", path: "/api/v1/delegations", cred: bearer, contentType: "Application/JSON; charset=utf-8", body: goodBody, status: 202, delegated: true},
		{name: "post with lower-case scheme", method: "POST", path: "/api/v1/delegations", auth: "bearer " + testToken, contentType: "application/json", body: goodBody, status: 202, delegated: true},
		{name: "post with cookie session alone", method: "POST", path: "/api/v1/delegations", cred: cookie, contentType: "application/json", body: goodBody, status: 401, code: "unauthorized"},
		{name: "post with token cookie", method: "POST", path: "/api/v1/delegations", cred: tokenCookie, contentType: "application/json", body: goodBody, status: 401, code: "unauthorized"},
		{name: "post without credentials", method: "POST", path: "/api/v1/delegations", contentType: "application/json", body: goodBody, status: 401, code: "unauthorized"},
		{name: "delete with cookie session", method: "DELETE", path: "/api/v1/delegations/x", cred: cookie, status: 401, code: "unauthorized"},
		{name: "login is GET only", method: "POST", path: "/dashboard?token=" + testToken, contentType: "application/json", status: 401, code: "unauthorized"},
		{name: "post without content type", method: "POST", path: "/api/v1/delegations", cred: bearer, body: goodBody, status: 415, code: "unsupported_media_type"},
		{name: "post as a form", method: "POST", path: "/api/v1/delegations", cred: bearer, contentType: "application/x-www-form-urlencoded", body: goodBody, status: 415, code: "unsupported_media_type"},
		{name: "post as text", method: "POST", path: "/api/v1/delegations", cred: bearer, contentType: "text/plain", body: goodBody, status: 415, code: "unsupported_media_type"},
		{name: "post with a bad content type", method: "POST", path: "/api/v1/delegations", cred: bearer, contentType: "application/json; =", body: goodBody, status: 415, code: "unsupported_media_type"},
		{name: "body over 1 MiB", method: "POST", path: "/api/v1/delegations", cred: bearer, contentType: "application/json", body: long, status: 413, code: "too_large"},
		{name: "body over 1 MiB, chunked", method: "POST", path: "/api/v1/delegations", cred: bearer, contentType: "application/json", body: long, chunked: true, status: 413, code: "too_large"},
		{name: "body of exactly 1 MiB", method: "POST", path: "/api/v1/delegations", cred: bearer, contentType: "application/json", body: goodBody + strings.Repeat(" ", maxBody-len(goodBody)), status: 202, delegated: true},
		{name: "empty body", method: "POST", path: "/api/v1/delegations", cred: bearer, contentType: "application/json", status: 400, code: "bad_request"},
		{name: "two JSON values", method: "POST", path: "/api/v1/delegations", cred: bearer, contentType: "application/json", body: goodBody + goodBody, status: 400, code: "bad_request"},
		{name: "unknown field", method: "POST", path: "/api/v1/delegations", cred: bearer, contentType: "application/json", body: `{"task":"x","evil":1}`, status: 400, code: "bad_request"},
		{name: "unknown endpoint", method: "POST", path: "/api/v1/nothing", cred: bearer, contentType: "application/json", body: "{}", status: 404, code: "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			if tt.chunked {
				req.ContentLength = -1
			}
			switch tt.cred {
			case bearer:
				req.Header.Set("Authorization", "Bearer "+testToken)
			case cookie:
				req.AddCookie(f.login(t))
			case tokenCookie:
				req.AddCookie(&http.Cookie{Name: cookieName, Value: testToken})
			case badCookie:
				f.login(t)
				req.AddCookie(&http.Cookie{Name: cookieName, Value: base64.RawURLEncoding.EncodeToString(make([]byte, 32))})
			case oldCookie:
				c := f.login(t)
				f.clock.advance(sessionTTL)
				req.AddCookie(c)
			}
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			w := httptest.NewRecorder()
			f.h.ServeHTTP(w, req)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if tt.code != "" {
				if got := errorCode(t, w); got != tt.code {
					t.Errorf("error code %q, want %q: %s", got, tt.code, w.Body)
				}
				if ct := w.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("error Content-Type %q", ct)
				}
			}
			if tt.status == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if got := f.calls.n.Load() > 0; got != tt.delegated {
				t.Errorf("reached Delegate: %v, want %v", got, tt.delegated)
			}
		})
	}
}

func TestLoginSetsSessionCookie(t *testing.T) {
	tests := []struct {
		name      string
		tls       bool
		setting   bool
		secure    bool
		token     string
		status    int
		setCookie bool
	}{
		{name: "plain HTTP", token: testToken, status: 303, setCookie: true},
		{name: "over TLS", tls: true, token: testToken, status: 303, setCookie: true, secure: true},
		{name: "secure_cookies on plain HTTP", setting: true, token: testToken, status: 303, setCookie: true, secure: true},
		{name: "wrong token", token: "nope", status: 401},
		{name: "empty token", token: "", status: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.s.SetSecureCookies(tt.setting)
			req := httptest.NewRequest("GET", "/dashboard?token="+tt.token, nil)
			if tt.tls {
				req.TLS = &tls.ConnectionState{}
			}
			w := httptest.NewRecorder()
			f.h.ServeHTTP(w, req)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d", w.Code, tt.status)
			}
			cookies := w.Result().Cookies()
			if !tt.setCookie {
				if len(cookies) != 0 || f.s.dash.count() != 0 {
					t.Fatalf("refused login set %v (%d sessions)", cookies, f.s.dash.count())
				}
				return
			}
			if loc := w.Header().Get("Location"); loc != "/dashboard" {
				t.Errorf("redirect to %q, want the clean /dashboard", loc)
			}
			if len(cookies) != 1 {
				t.Fatalf("cookies = %v", cookies)
			}
			c := cookies[0]
			raw, err := base64.RawURLEncoding.DecodeString(c.Value)
			switch {
			case c.Name != cookieName:
				t.Errorf("name %q", c.Name)
			case strings.Contains(c.Value, testToken) || c.Value == testToken:
				t.Errorf("the cookie holds the admin token: %q", c.Value)
			case err != nil || len(raw) < 16:
				t.Errorf("session ID %q is not 128+ random bits", c.Value)
			case !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/":
				t.Errorf("cookie attributes: %+v", c)
			case c.MaxAge != int(sessionTTL/time.Second):
				t.Errorf("Max-Age %d", c.MaxAge)
			case c.Secure != tt.secure:
				t.Errorf("Secure = %v, want %v", c.Secure, tt.secure)
			}
			if again := f.login(t); again.Value == c.Value {
				t.Error("two logins got the same session ID")
			}
		})
	}
}

func TestSecureCookieSettingIsLive(t *testing.T) {
	f := newFixture(t)
	for _, on := range []bool{true, false, true} {
		f.s.SetSecureCookies(on)
		if c := f.login(t); c.Secure != on {
			t.Errorf("after SetSecureCookies(%v): Secure = %v", on, c.Secure)
		}
	}
}

func TestDashboardSessionsExpireAndAreBounded(t *testing.T) {
	f := newFixture(t)
	first := f.login(t)
	f.clock.advance(time.Second)
	var last *http.Cookie
	for range maxSessions {
		last = f.login(t)
		f.clock.advance(time.Millisecond)
	}
	if n := f.s.dash.count(); n != maxSessions {
		t.Errorf("%d live sessions, want the bound %d", n, maxSessions)
	}
	read := func(c *http.Cookie) int {
		req := httptest.NewRequest("GET", "/api/v1/bots", nil)
		req.AddCookie(c)
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, req)
		return w.Code
	}
	if got := read(first); got != 401 {
		t.Errorf("the oldest session beyond the bound: %d, want 401", got)
	}
	if got := read(last); got != 200 {
		t.Errorf("the newest session: %d, want 200", got)
	}
	f.clock.advance(sessionTTL - time.Minute)
	if got := read(last); got != 200 {
		t.Errorf("a session before its expiry: %d, want 200", got)
	}
	f.clock.advance(time.Minute)
	if got := read(last); got != 401 {
		t.Errorf("a session at its expiry: %d, want 401", got)
	}
	f.login(t)
	if n := f.s.dash.count(); n != 1 {
		t.Errorf("%d sessions held after every other expired, want 1", n)
	}
}

func TestBadExpectedOutputs(t *testing.T) {
	tests := []struct {
		name     string
		expected string
		want     string // in the message
	}{
		{"parent directory", `[{"name":"../../etc/passwd"}]`, `contains ".."`},
		{"dot dot", `[{"name":".."}]`, `contains ".."`},
		{"nested", `[{"name":"sub/out.json"}]`, `contains "/"`},
		{"absolute", `[{"name":"/tmp/x"}]`, `contains "/"`},
		{"backslash", `[{"name":"a\\b.json"}]`, `contains "\"`},
		{"NUL", `[{"name":"a\u0000.json"}]`, "NUL"},
		{"empty", `[{"name":""}]`, "has no name"},
		{"missing name", `[{"media_type":"text/plain"}]`, "has no name"},
		{"duplicate", `[{"name":"a.md"},{"name":"a.md"}]`, "named twice"},
		{"second entry", `[{"name":"ok.md"},{"name":"x/y.md"}]`, "expected_outputs[1]"},
		{"bad schema", `[{"name":"a.json","schema":{"type":12}}]`, "schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			body := strings.TrimSuffix(goodBody, "}") + `,"expected_outputs":` + tt.expected + "}"
			req := httptest.NewRequest("POST", "/api/v1/delegations", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			f.h.ServeHTTP(w, req)
			if w.Code != 400 || errorCode(t, w) != "bad_request" || !strings.Contains(w.Body.String(), jsonQuoted(tt.want)) {
				t.Fatalf("%d %s, want 400 bad_request naming %q", w.Code, w.Body, tt.want)
			}
			list, err := f.s.Delegations.Delegations(context.Background(), "", "")
			if err != nil || len(list) != 0 {
				t.Errorf("a refused submission was stored: %v %v", list, err)
			}
		})
	}
	// A good name goes through.
	f := newFixture(t)
	body := strings.TrimSuffix(goodBody, "}") + `,"expected_outputs":[{"name":"report.md","media_type":"text/markdown"}]}`
	req := httptest.NewRequest("POST", "/api/v1/delegations", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	if w.Code != 202 {
		t.Errorf("a plain file name: %d %s", w.Code, w.Body)
	}
}

// jsonQuoted is s as it appears inside a JSON string.
func jsonQuoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// untouchable is a request body that fails the test when read.
type untouchable struct{ t *testing.T }

func (u untouchable) Read([]byte) (int, error) {
	u.t.Error("the body of a refused request was read")
	return 0, io.ErrUnexpectedEOF
}

func TestRefusedRequestsLeaveTheBodyUnread(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		path        string
		cred        int
		auth        string
		contentType string
		length      int64
		status      int
	}{
		{"post without credentials", "POST", "/api/v1/delegations", noCred, "", "application/json", 100, 401},
		{"post with a wrong token", "POST", "/api/v1/delegations", noCred, "Bearer wrong", "application/json", 100, 401},
		{"post with the cookie alone", "POST", "/api/v1/delegations", cookie, "", "application/json", 100, 401},
		{"post with an unknown length", "POST", "/api/v1/delegations", noCred, "", "application/json", -1, 401},
		{"get without credentials", "GET", "/api/v1/bots", noCred, "", "", 100, 401},
		{"login with a wrong token", "GET", "/dashboard?token=nope", noCred, "", "", 100, 401},
		{"unknown endpoint without credentials", "PUT", "/api/v1/nothing", noCred, "", "application/json", 100, 401},
		{"wrong content type", "POST", "/api/v1/delegations", bearer, "", "text/plain", 100, 415},
		{"declared length over 1 MiB", "POST", "/api/v1/delegations", bearer, "", "application/json", maxBody + 1, 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			req := httptest.NewRequest(tt.method, tt.path, nil)
			req.Body = io.NopCloser(untouchable{t})
			req.ContentLength = tt.length
			switch tt.cred {
			case bearer:
				req.Header.Set("Authorization", "Bearer "+testToken)
			case cookie:
				req.AddCookie(f.login(t))
			}
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			w := httptest.NewRecorder()
			f.h.ServeHTTP(w, req)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if c := w.Header().Get("Connection"); c != "close" {
				t.Errorf("Connection: %q, want close", c)
			}
		})
	}
}

// A body trickled after the headers must not hold the connection: the
// 401 comes at once and the server closes the connection without waiting
// for the rest. The bound is generous; the server needs about half a
// second (net/http's linger before it closes).
func TestTrickledBodyIsCut(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	for _, req := range []string{
		"POST /api/v1/delegations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
		"POST /api/v1/delegations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n",
		"GET /dashboard?token=wrong HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{",
	} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer to a trickled body: %v", err)
		}
		if resp.StatusCode != 401 || !resp.Close {
			t.Errorf("answer %d, close %v; want 401 and the connection closed", resp.StatusCode, resp.Close)
		}
		io.Copy(io.Discard, resp.Body)
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("after the 401 the connection is still open: %v", err)
		}
	}
}

// count is the number of sessions held, expired or not.
func (d *dashboardSessions) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.live)
}

// FuzzAuthenticate: whatever the Authorization header and cookie, a
// request is admitted only with the exact token under a Bearer scheme,
// or (reads only, without the header) with a live session's ID.
func FuzzAuthenticate(f *testing.F) {
	for _, h := range []string{"", "Bearer " + testToken, "bearer " + testToken, "Basic x", "Bearer", " BEARER \t" + testToken, "Bearer " + testToken + " x"} {
		f.Add(h, "", true)
		f.Add(h, "bogus", false)
		f.Add(h, "live", true)
	}
	f.Fuzz(func(t *testing.T, header, cookie string, safe bool) {
		s := &Server{Token: testToken}
		live, err := s.dash.start(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "/api/v1/bots", nil)
		if header != "" {
			req.Header["Authorization"] = []string{header}
		}
		if cookie == "live" {
			cookie = live
		}
		if cookie != "" {
			req.Header["Cookie"] = []string{cookieName + "=" + cookie}
		}
		if s.authenticate(req, safe) != "" {
			return
		}
		h := req.Header.Get("Authorization")
		scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
		switch {
		case h != "":
			if !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(rest) != testToken {
				t.Fatalf("admitted with Authorization %q", h)
			}
		case !safe || cookie != live:
			t.Fatalf("admitted with cookie %q (safe %v)", cookie, safe)
		}
	})
}
