package api

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLoginPage: a browser without a session gets the sign-in page, with
// what went wrong when something did; the API keeps its JSON errors.
func TestLoginPage(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		cred    int
		auth    string
		want    []string // in the page
		notWant []string
	}{
		{name: "first visit", path: "/dashboard", want: []string{`<form id="login" method="get" action="/dashboard">`, `name="token"`, `type="password"`}, notWant: []string{"login-error", "login-note"}},
		{name: "wrong token", path: "/dashboard?token=nope", want: []string{`id="login-error"`, "That is not the admin token"}},
		{name: "empty token", path: "/dashboard?token=", want: []string{`id="login-error"`}},
		{name: "token with markup", path: "/dashboard?token=%3Cscript%3E", want: []string{`id="login-error"`}, notWant: []string{"<script>"}},
		{name: "expired session", path: "/dashboard", cred: oldCookie, want: []string{`id="login-note"`, "session has ended"}},
		{name: "unknown session", path: "/dashboard", cred: badCookie, want: []string{`id="login-note"`}},
		{name: "wrong bearer header", path: "/dashboard", auth: "Bearer nope", want: []string{`id="login-error"`, "Authorization header"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			req := httptest.NewRequest("GET", tt.path, nil)
			switch tt.cred {
			case badCookie:
				req.AddCookie(&http.Cookie{Name: cookieName, Value: base64.RawURLEncoding.EncodeToString(make([]byte, 32))})
			case oldCookie:
				c := f.login(t)
				f.clock.advance(sessionTTL)
				req.AddCookie(c)
			}
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			w := httptest.NewRecorder()
			f.h.ServeHTTP(w, req)
			body := w.Body.String()
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", w.Code)
			}
			if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			for h, v := range map[string]string{"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "Content-Security-Policy": loginCSP} {
				if got := w.Header().Get(h); got != v {
					t.Errorf("%s = %q, want %q", h, got, v)
				}
			}
			for _, s := range tt.want {
				if !strings.Contains(body, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			for _, s := range tt.notWant {
				if strings.Contains(body, s) {
					t.Errorf("page has %q", s)
				}
			}
			if strings.Contains(body, testToken) || len(w.Result().Cookies()) != 0 {
				t.Error("the sign-in page leaks the token or sets a cookie")
			}
		})
	}

	// The API answers JSON whatever the Accept header asks for.
	f := newFixture(t)
	req := httptest.NewRequest("GET", "/api/v1/bots", nil)
	req.Header.Set("Accept", "text/html")
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	if w.Code != 401 || errorCode(t, w) != "unauthorized" {
		t.Errorf("API without credentials: %d %s", w.Code, w.Body)
	}
}
