package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/world/chains"
)

// fakeChains is two chats' chains under a 6 h cooldown.
type fakeChains struct{ limit int }

func (f *fakeChains) Chains(_ context.Context, limit int) ([]gateway.ChainInfo, error) {
	f.limit = limit
	at := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	return []gateway.ChainInfo{
		{State: chains.State{Platform: "web", Chat: "lobby", Chain: 2, Status: chains.Closed, Steps: 3,
			StartedAt: at, LastAt: at.Add(time.Minute), UpdatedAt: at.Add(2 * time.Minute)}, ChatName: "lobby"},
		{State: chains.State{Platform: "telegram", Chat: "-100", Chain: 1, Status: chains.Ended, Steps: 1,
			StartedAt: at.Add(-24 * time.Hour), LastAt: at.Add(-24 * time.Hour), UpdatedAt: at.Add(-23 * time.Hour)}, ChatName: "Team"},
	}, nil
}

func (f *fakeChains) Crossbot() chains.Settings {
	return chains.Settings{Enabled: true, MaxChain: 3, Cooldown: 6 * time.Hour}
}

func TestChainsList(t *testing.T) {
	f := newFixture(t)
	fc := &fakeChains{}
	get := func(path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, req)
		return w
	}
	// Without a source, an empty list.
	if w := get("/api/v1/chains"); w.Code != http.StatusOK || w.Body.String() != "{\"items\":[]}\n" {
		t.Errorf("no chains: %d %s", w.Code, w.Body)
	}
	f.s.Chains = fc
	w := get("/api/v1/chains?limit=20")
	var body struct{ Items []map[string]any }
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &body) != nil || len(body.Items) != 2 || fc.limit != 20 {
		t.Fatalf("chains: %d %s (limit %d)", w.Code, w.Body, fc.limit)
	}
	lobby, team := body.Items[0], body.Items[1]
	want := map[string]any{"platform": "web", "chat": "lobby", "chat_name": "lobby", "chain": 2.0, "status": "closed",
		"steps": 3.0, "max_chain": 3.0, "started_at": "2026-01-02T03:00:00Z", "last_step_at": "2026-01-02T03:01:00Z",
		"cooldown_until": "2026-01-02T09:01:00Z", "updated_at": "2026-01-02T03:02:00Z"}
	for k, v := range want {
		if lobby[k] != v {
			t.Errorf("lobby %s = %v, want %v", k, lobby[k], v)
		}
	}
	if _, cooling := team["cooldown_until"]; cooling || team["status"] != "ended" || team["chat_name"] != "Team" {
		t.Errorf("a chain whose cooldown passed = %v", team)
	}
	if w := get("/api/v1/chains?limit=0"); w.Code != http.StatusBadRequest || errorCode(t, w) != "bad_request" {
		t.Errorf("limit=0: %d %s", w.Code, w.Body)
	}
}
