package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/platforms/web"
)

// apiGet fetches an admin endpoint with token (empty: none) and decodes
// the JSON body.
func apiGet(t *testing.T, m *Main, path, token string) (int, map[string]any) {
	t.Helper()
	return apiGetAt(t, m.Addr(), path, token)
}

// apiGetAt is apiGet for a gateway listening on addr (another process).
func apiGetAt(t *testing.T, addr, path, token string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func items(body map[string]any) []map[string]any {
	var out []map[string]any
	for _, it := range body["items"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

func TestAdminAPIRequiresToken(t *testing.T) {
	m := startMain(t, configDir(t))
	for _, path := range []string{"/api/v1/bots", "/api/v1/users", "/api/v1/sessions", "/api/v1/sessions/x/messages", "/dashboard"} {
		for _, token := range []string{"", "wrong"} {
			status, body := apiGet(t, m, path, token)
			if status != http.StatusUnauthorized {
				t.Errorf("%s with token %q: %d, want 401", path, token, status)
			}
			if e, _ := body["error"].(map[string]any); e["code"] != "unauthorized" {
				t.Errorf("%s: error body %v", path, body)
			}
		}
	}
	status, body := apiGet(t, m, "/api/v1/bots", m.AdminToken)
	if status != 200 || len(items(body)) != 2 || items(body)[0]["id"] != "mattyatlas" {
		t.Fatalf("bots = %d %v", status, body)
	}
	_, body = apiGet(t, m, "/api/v1/users", m.AdminToken)
	if u := items(body); len(u) != 1 || u[0]["id"] != "user-bryan" || len(u[0]["identities"].([]any)) != 2 {
		t.Errorf("users = %v", body)
	}
	if status, _ := apiGet(t, m, "/api/v1/sessions/nope/messages", m.AdminToken); status != 404 {
		t.Errorf("unknown session: %d, want 404", status)
	}
	if status, _ := apiGet(t, m, "/api/v1/sessions/x/messages?limit=zero", m.AdminToken); status != 400 {
		t.Errorf("bad limit: %d, want 400", status)
	}
}

func TestAdminTokenFromEnvironment(t *testing.T) {
	t.Setenv("SWITCHBOARD_ADMIN_TOKEN", "from-env")
	m := startMain(t, configDir(t))
	if status, _ := apiGet(t, m, "/api/v1/bots", "from-env"); status != 200 {
		t.Errorf("bots with the env token: %d", status)
	}
}

func TestGeneratedAdminTokenPrintedOnce(t *testing.T) {
	var out strings.Builder
	m := &Main{ConfigDir: configDir(t), Listen: "127.0.0.1:0", Logger: testLogger(t), Stdout: &out}
	t.Setenv("SWITCHBOARD_ADMIN_TOKEN", "")
	if err := m.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if n := strings.Count(out.String(), m.AdminToken); n != 1 || !strings.Contains(out.String(), "/dashboard?token=") {
		t.Errorf("stdout = %q; want the dashboard URL with the token once", out.String())
	}
}

func TestSessionsAreIsolatedPerUser(t *testing.T) {
	t.Setenv("SB_TEST_WEB_SECRET", "k")
	m := startMain(t, configDir(t))
	bryan := dial(t, m.Addr(), url.Values{"user": {"bryan"}, "sig": {web.Sign([]byte("k"), "bryan")}})
	anon := dial(t, m.Addr(), nil)
	for i, c := range []*client{bryan, anon} {
		c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": fmt.Sprint("secret of client ", i), "client_id": "1"})
		c.expect("ack")
		c.expect("message")
	}
	anonID := anon.hello["platform_id"].(string)

	for _, q := range []string{"user-bryan", "web-bryan"} {
		_, body := apiGet(t, m, "/api/v1/sessions?user="+q+"&bot=mattyatlas", m.AdminToken)
		list := items(body)
		if len(list) != 1 || list[0]["user"] != "user-bryan" || list[0]["scope"] != "user" {
			t.Fatalf("sessions for %s = %v", q, list)
		}
		_, body = apiGet(t, m, "/api/v1/sessions/"+list[0]["id"].(string)+"/messages", m.AdminToken)
		msgs := items(body)
		if len(msgs) != 2 || msgs[0]["text"] != "secret of client 0" {
			t.Fatalf("bryan's messages = %v", msgs)
		}
		for _, msg := range msgs {
			if strings.Contains(msg["text"].(string), "client 1") {
				t.Errorf("bryan's session leaks the other user's message: %v", msg)
			}
			for _, k := range []string{"id", "chat", "platform", "from", "text", "time"} {
				if _, ok := msg[k]; !ok {
					t.Errorf("message lacks %q: %v", k, msg)
				}
			}
		}
	}
	_, body := apiGet(t, m, "/api/v1/sessions?user="+anonID, m.AdminToken)
	if list := items(body); len(list) != 1 || list[0]["user"] != anonID {
		t.Errorf("sessions for the anonymous user = %v", list)
	}
	_, body = apiGet(t, m, "/api/v1/sessions?user=user-nobody", m.AdminToken)
	if list := items(body); len(list) != 0 {
		t.Errorf("sessions for an unknown user = %v", list)
	}
	_, body = apiGet(t, m, "/api/v1/sessions", m.AdminToken)
	if list := items(body); len(list) != 2 {
		t.Errorf("all sessions = %v", list)
	}
}

func TestDashboardTokenBecomesCookie(t *testing.T) {
	m := startMain(t, configDir(t))
	jar := &cookieJar{}
	c := &http.Client{Jar: jar}
	resp, err := c.Get("http://" + m.Addr() + "/dashboard?token=" + m.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.RawQuery != "" {
		t.Fatalf("dashboard: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	resp, err = c.Get("http://" + m.Addr() + "/api/v1/bots")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("API with the dashboard cookie: %d", resp.StatusCode)
	}
}

// cookieJar is a minimal single-host jar.
type cookieJar struct{ cookies []*http.Cookie }

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) { j.cookies = append(j.cookies, cs...) }
func (j *cookieJar) Cookies(*url.URL) []*http.Cookie          { return j.cookies }

func TestMetrics(t *testing.T) {
	m := startMain(t, configDir(t))
	// scrape polls /metrics until it contains every one of until.
	scrape := func(until ...string) string {
		t.Helper()
		var body string
		for range 100 {
			resp, err := http.Get("http://" + m.Addr() + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if !slices.ContainsFunc(until, func(w string) bool { return !strings.Contains(body, w) }) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		return body
	}
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "hello", "client_id": "1"})
	c.expect("ack")
	c.expect("message")
	// The delivery is counted just after the frame is handed over, and
	// the worker leaves the queue just after the reply is handed over.
	scrape(`switchboard_events_out_total{platform="web"} 1`, "switchboard_session_queue_depth 0")
	c.send(map[string]any{"type": "send", "bot": "mattyatlas", "text": "again", "client_id": "2"})
	c.expect("ack")
	c.expect("message")
	body := scrape(`switchboard_events_out_total{platform="web"} 2`, "switchboard_session_queue_depth 0")
	for _, want := range []string{
		`switchboard_events_in_total{platform="web"} 2`,
		`switchboard_events_out_total{platform="web"} 2`,
		`switchboard_brain_seconds_count{bot="mattyatlas",kind="script"} 2`,
		"switchboard_session_queue_depth 0",
		"# TYPE switchboard_delegations_total counter",
		"# TYPE switchboard_outbox_retries_total counter",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}
