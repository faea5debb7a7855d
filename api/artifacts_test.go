package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/store/sqlite"
)

// storeArtifacts stores a reply of matty's to ann with arts, in a new
// SQLite store, and returns an admin server reading it and the session.
func storeArtifacts(t *testing.T, arts ...chat.Artifact) (*Server, string) {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	key := sessions.Key{Bot: "matty", Scope: sessions.ScopeUser, ScopeID: "web-ann"}
	in := chat.Message{Platform: "web", ChatID: "web-ann:matty", ChatType: chat.Private, PlatformMsgID: "1",
		Kind: chat.KindChat, From: chat.Party{Kind: chat.Human, ID: "web-ann"}, UserID: "web-ann", Bot: "matty",
		Text: "make it", Time: time.Now()}
	res, err := store.AppendInbound(ctx, gateway.Inbound{Message: in, Turns: []sessions.Request{{Session: key, Text: in.Text}}})
	if err != nil {
		t.Fatal(err)
	}
	out := in
	out.PlatformMsgID, out.From, out.Text = "", chat.Party{Kind: chat.Bot, ID: "matty"}, "made"
	if _, err := store.CompleteTurn(ctx, sessions.Outcome{Turn: res.Turns[0], Artifacts: arts,
		Posts: []sessions.Post{{Session: res.Turns[0].SessionID, Message: out}}}); err != nil {
		t.Fatal(err)
	}
	return &Server{Sessions: store, Artifacts: store, Token: testToken, Logger: slog.New(slog.DiscardHandler)}, res.Turns[0].SessionID
}

// TestArtifactEndpoint: the admin reads an artifact's bytes with its
// media type, by bearer or dashboard session; anything a browser could
// run is saved, never shown; nobody else reads it.
func TestArtifactEndpoint(t *testing.T) {
	page := []byte("<script>alert(document.cookie)</script>")
	s, _ := storeArtifacts(t,
		chat.Artifact{ID: "art-md", Name: "checklist.md", MediaType: "text/markdown", Size: 8, SHA256: "aa", Producer: "matty", Content: []byte("# To do\n")},
		chat.Artifact{ID: "art-html", Name: "page.html", MediaType: "text/html", Size: int64(len(page)), SHA256: "bb", Producer: "matty", Content: page},
	)
	h := s.Handler()
	f := &fixture{s: s, h: h}
	login := f.login(t)

	tests := []struct {
		name, path        string
		cred              int
		status            int
		body, ctype, disp string
	}{
		{"markdown by bearer", "/api/v1/artifacts/art-md", bearer, 200, "# To do\n", "text/markdown; charset=utf-8", "inline; filename=checklist.md"},
		{"markdown by dashboard session", "/api/v1/artifacts/art-md", cookie, 200, "# To do\n", "text/markdown; charset=utf-8", "inline; filename=checklist.md"},
		{"html is saved", "/api/v1/artifacts/art-html", bearer, 200, string(page), "text/html; charset=utf-8", "attachment; filename=page.html"},
		{"without a token", "/api/v1/artifacts/art-md", noCred, 401, "", "application/json", ""},
		{"unknown", "/api/v1/artifacts/art-none", bearer, 404, "", "application/json", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tc.path, nil)
			switch tc.cred {
			case bearer:
				r.Header.Set("Authorization", "Bearer "+testToken)
			case cookie:
				r.AddCookie(login)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status || w.Header().Get("Content-Type") != tc.ctype {
				t.Fatalf("%d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
			}
			if tc.status != http.StatusOK {
				if code := errorCode(t, w); code == "" {
					t.Errorf("no JSON error: %s", w.Body)
				}
				return
			}
			if w.Body.String() != tc.body || w.Header().Get("Content-Disposition") != tc.disp ||
				w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("Content-Security-Policy") == "" {
				t.Errorf("body %q, headers %v", w.Body, w.Header())
			}
		})
	}
}

// TestMessagesListArtifacts: a session's messages name the artifacts
// they show.
func TestMessagesListArtifacts(t *testing.T) {
	s, session := storeArtifacts(t, chat.Artifact{ID: "art-1", Name: "a.json", MediaType: "application/json", Size: 2,
		SHA256: "cc", Producer: "matty", Content: []byte("{}")})
	r := httptest.NewRequest("GET", "/api/v1/sessions/"+session+"/messages", nil)
	r.Header.Set("Authorization", "Bearer "+testToken)
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	var body struct {
		Items []struct {
			Text      string
			Artifacts []artifactJSON
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || len(body.Items) != 2 {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	want := artifactJSON{ID: "art-1", Name: "a.json", MediaType: "application/json", Size: 2, SHA256: "cc", Producer: "matty"}
	if len(body.Items[0].Artifacts) != 0 || len(body.Items[1].Artifacts) != 1 || body.Items[1].Artifacts[0] != want {
		t.Errorf("messages = %+v", body.Items)
	}
	if strings.Count(w.Body.String(), `"artifacts"`) != 1 {
		t.Errorf("a message without artifacts lists them: %s", w.Body)
	}
}
