package openai

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A server whose API is under /v1, given a base_url without it, answers
// 404: the error names the URL called, so the operator sees the missing
// /v1, and holds no secret.
func TestErrorNamesURL(t *testing.T) {
	var gotPath, gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotQuery = r.URL.Path, r.URL.RawQuery
		http.NotFound(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	tests := []struct {
		name, baseURL string
		wantURL       string // as the error names it
		wantPath      string // as the server saw it
		wantQuery     string
	}{
		{"no version", srv.URL, srv.URL + "/chat/completions", "/chat/completions", ""},
		{"trailing slash", srv.URL + "/", srv.URL + "/chat/completions", "/chat/completions", ""},
		{"user info stripped", "http://bob:hunter2@" + host + "/api", srv.URL + "/api/chat/completions", "/api/chat/completions", ""},
		// A query stays a query (Azure's api-version), and is not shown:
		// some services take a key there.
		{"query kept, not shown", srv.URL + "/v2?key=sk-in-query", srv.URL + "/v2/chat/completions", "/v2/chat/completions", "key=sk-in-query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(Config{BaseURL: tt.baseURL, Model: "m", APIKey: "sk-secret-key",
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			_, err = b.Reply(context.Background(), turn("hi"))
			want := "openai: POST " + tt.wantURL + ": server answered 404 Not Found"
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("err = %v, want it to start %q", err, want)
			}
			for _, secret := range []string{"sk-secret-key", "hunter2", "bob", "sk-in-query"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("err %q shows %q", err, secret)
				}
			}
			var se *StatusError
			if !errors.As(err, &se) || se.URL != tt.wantURL || se.Code != 404 {
				t.Errorf("StatusError = %+v", se)
			}
			if gotPath != tt.wantPath || gotQuery != tt.wantQuery {
				t.Errorf("server saw %s?%s, want %s?%s", gotPath, gotQuery, tt.wantPath, tt.wantQuery)
			}
		})
	}
}

// A server that is not there: the connection error names the URL too,
// without the user info net/http would show.
func TestConnectionErrorNamesURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	b, err := New(Config{BaseURL: "http://bob:hunter2@" + addr + "/v1", Model: "m", Timeout: 5 * time.Second,
		Retry: Retry{Max: -1}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Reply(context.Background(), turn("hi"))
	want := "POST http://" + addr + "/v1/chat/completions: "
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "bob") {
		t.Errorf("err = %v, want one naming %q without user info", err, want)
	}
}
