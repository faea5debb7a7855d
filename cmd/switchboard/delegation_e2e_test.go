package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/platforms/web"
)

func apiPost(t *testing.T, m *Main, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+m.Addr()+path, bytes.NewBufferString(body))
	req.Header.Set("Authorization", "Bearer "+m.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestHandOffOverTheWidget(t *testing.T) {
	t.Setenv("SB_TEST_WEB_SECRET", "k")
	m := startMain(t, configDir(t))
	c := dial(t, m.Addr(), url.Values{"user": {"bryan"}, "sig": {web.Sign([]byte("k"), "bryan")}})
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "Tell Finn Shipley to build the login page", "client_id": "1"})
	c.expect("ack")

	var statuses []string
	var finn, ack, notice map[string]any
	var id string
	for finn == nil || notice == nil || len(statuses) < 3 {
		f := c.read()
		switch f["type"] {
		case "delegation":
			statuses = append(statuses, f["status"].(string))
			id = f["id"].(string)
			if f["from_bot"] != "mattyatlas" || f["to_bot"] != "finnshipley" || f["task"] != "build the login page" || f["depth"] != 1.0 {
				t.Errorf("delegation frame = %v", f)
			}
		case "message":
			switch {
			case f["bot"] == "finnshipley":
				finn = f
			case ack == nil:
				ack = f
			default:
				notice = f
			}
		}
	}
	if strings.Join(statuses, ",") != "queued,running,done" {
		t.Errorf("statuses = %v", statuses)
	}
	if !strings.HasPrefix(ack["text"].(string), "Handing this to Finn Shipley") || ack["delegation"] == nil {
		t.Errorf("ack = %v", ack)
	}
	if finn["text"] != "Finn built: build the login page" || finn["chat"] != "web-bryan:finnshipley" {
		t.Errorf("Finn's reply = %v", finn)
	}
	if !strings.HasPrefix(notice["text"].(string), "Finn Shipley finished:") || notice["chat"] != "web-bryan:mattyatlas" {
		t.Errorf("notice = %v", notice)
	}

	status, body := apiGet(t, m, "/api/v1/delegations/"+id, m.AdminToken)
	if status != 200 || body["status"] != "done" || body["user"] != "user-bryan" || body["result"] != "Finn built: build the login page" {
		t.Errorf("GET delegation = %d %v", status, body)
	}
	for _, k := range []string{"id", "kind", "from_bot", "to_bot", "user", "task", "depth", "parent_id", "status", "progress", "created_at", "updated_at", "result", "error", "inputs", "artifacts"} {
		if _, ok := body[k]; !ok {
			t.Errorf("delegation lacks %q", k)
		}
	}
	if body["kind"] != "handoff" || body["progress"] != nil {
		t.Errorf("delegation kind %v, progress %v; want handoff and null", body["kind"], body["progress"])
	}

	// A session's messages are every kind: Finn's holds the hand-off's
	// wrapper, Matty's the result's callback; ?kind= keeps one kind.
	kinds := func(bot, query string) string {
		t.Helper()
		_, list := apiGet(t, m, "/api/v1/sessions?user=user-bryan&bot="+bot, m.AdminToken)
		sessions := items(list)
		if len(sessions) != 1 {
			t.Fatalf("bryan's sessions with %s = %v", bot, sessions)
		}
		_, body := apiGet(t, m, "/api/v1/sessions/"+sessions[0]["id"].(string)+"/messages"+query, m.AdminToken)
		var out []string
		for _, msg := range items(body) {
			out = append(out, msg["kind"].(string)+":"+msg["from"].(map[string]any)["kind"].(string))
		}
		return strings.Join(out, ",")
	}
	if got := kinds("finnshipley", ""); got != "wrapper:system,chat:bot" {
		t.Errorf("Finn's session = %s", got)
	}
	if got := kinds("finnshipley", "?kind=chat"); got != "chat:bot" {
		t.Errorf("Finn's chat messages = %s", got)
	}
	if got := kinds("mattyatlas", ""); got != "chat:human,chat:bot,chat:bot,system:system" {
		t.Errorf("Matty's session = %s", got)
	}
	if got := kinds("mattyatlas", "?kind=system"); got != "system:system" {
		t.Errorf("Matty's system messages = %s", got)
	}
	if status, _ := apiGet(t, m, "/api/v1/sessions/x/messages?kind=weird", m.AdminToken); status != 400 {
		t.Errorf("bad kind filter: %d", status)
	}
	_, list := apiGet(t, m, "/api/v1/delegations?user=web-bryan&status=done", m.AdminToken)
	if len(items(list)) != 1 {
		t.Errorf("list = %v", list)
	}
	_, list = apiGet(t, m, "/api/v1/delegations?user=user-someone-else", m.AdminToken)
	if len(items(list)) != 0 {
		t.Errorf("another user's list = %v", list)
	}
}

func TestDelegationsAPI(t *testing.T) {
	m := startMain(t, configDir(t))
	tests := []struct {
		name, body string
		status     int
		code       string
	}{
		{"queued", `{"from_bot":"mattyatlas","to_bot":"finnshipley","user":"user-bryan","task":"write the tests"}`, 202, ""},
		{"not allowed", `{"from_bot":"finnshipley","to_bot":"mattyatlas","user":"user-bryan","task":"plan"}`, 422, "not_allowed"},
		{"unknown bot", `{"from_bot":"mattyatlas","to_bot":"nobody","user":"user-bryan","task":"x"}`, 400, "unknown_bot"},
		{"missing task", `{"from_bot":"mattyatlas","to_bot":"finnshipley","user":"user-bryan"}`, 400, "bad_request"},
		{"unknown field", `{"from_bot":"mattyatlas","to_bot":"finnshipley","user":"u","task":"x","colour":1}`, 400, "bad_request"},
		{"bad schema", `{"from_bot":"mattyatlas","to_bot":"finnshipley","user":"u","task":"x","expected_outputs":[{"name":"a","media_type":"application/json","schema":{"type":7}}]}`, 400, "bad_request"},
		{"malformed", `{`, 400, "bad_request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := apiPost(t, m, "/api/v1/delegations", tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %v", status, tc.status, body)
			}
			if tc.code == "" {
				if body["status"] != "queued" || body["id"] == "" {
					t.Errorf("body = %v", body)
				}
				return
			}
			if e, _ := body["error"].(map[string]any); e["code"] != tc.code {
				t.Errorf("error = %v, want code %s", body, tc.code)
			}
		})
	}
	if status, _ := apiGet(t, m, "/api/v1/delegations/dlg-nope", m.AdminToken); status != 404 {
		t.Errorf("unknown delegation: %d", status)
	}
	if status, _ := apiGet(t, m, "/api/v1/delegations?status=weird", m.AdminToken); status != 400 {
		t.Errorf("bad status filter: %d", status)
	}
}
