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
	for _, k := range []string{"id", "from_bot", "to_bot", "user", "task", "depth", "parent_id", "status", "created_at", "updated_at", "result", "error", "inputs", "artifacts"} {
		if _, ok := body[k]; !ok {
			t.Errorf("delegation lacks %q", k)
		}
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
