package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/store/sqlite"
	"github.com/switchboard-chat/switchboard/world/insights"
)

// The insights endpoints: a list by person and bot, a DELETE that needs
// the bearer token but no body or Content-Type, 501 from a server that
// keeps none.
func TestInsightsEndpoints(t *testing.T) {
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	pool := insights.New(store, insights.Options{})
	gw := gateway.New(gateway.Options{Store: store, Sessions: store, Outbox: store, Logger: slog.New(slog.DiscardHandler), Insights: pool})
	in, err := pool.Remember(context.Background(), insights.Note{User: "user-ann", Bot: "matty", Kind: insights.Diary, Text: "Ann hums", Confidence: 0.75})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Config: gw, Insights: gw, Token: testToken, Logger: slog.New(slog.DiscardHandler)}
	h := s.Handler()
	do := func(method, path, contentType, body string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		if body == "" {
			r = httptest.NewRequest(method, path, nil)
		}
		r.Header.Set("Authorization", "Bearer "+testToken)
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := do("GET", "/api/v1/insights?user=user-ann&bot=matty", "", "")
	if want := `{"items":[{"id":1,"user":"user-ann","bot":"matty","kind":"diary","text":"Ann hums","confidence":0.75,"created_at":"` + rfc3339(in.CreatedAt) + `"}]}`; w.Code != 200 || strings.TrimSpace(w.Body.String()) != want {
		t.Errorf("list = %d %s\nwant %s", w.Code, w.Body, want)
	}
	if w := do("DELETE", "/api/v1/insights/1", "text/plain", "x"); w.Code != http.StatusUnsupportedMediaType {
		t.Errorf("a DELETE with a body that is not JSON = %d", w.Code)
	}
	if w := do("DELETE", "/api/v1/insights/1", "", ""); w.Code != http.StatusNoContent || w.Body.Len() != 0 {
		t.Errorf("DELETE = %d %q", w.Code, w.Body)
	}
	if w := do("DELETE", "/api/v1/insights/1", "", ""); w.Code != http.StatusNotFound || errorCode(t, w) != "not_found" {
		t.Errorf("DELETE again = %d %s", w.Code, w.Body)
	}
	if w := do("GET", "/api/v1/insights", "", ""); w.Code != 200 || strings.TrimSpace(w.Body.String()) != `{"items":[]}` {
		t.Errorf("list after the delete = %d %s", w.Code, w.Body)
	}
	s.Insights = nil
	h = s.Handler()
	for _, m := range []string{"GET", "DELETE"} {
		path := "/api/v1/insights"
		if m == "DELETE" {
			path += "/1"
		}
		if w := do(m, path, "", ""); w.Code != http.StatusNotImplemented {
			t.Errorf("%s without insights = %d", m, w.Code)
		}
	}
}
