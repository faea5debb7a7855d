package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/platforms/web"
)

// checklist is the Markdown Matty's checklist rule makes: a little of
// everything the widget renders, and raw HTML that must stay text.
const checklist = `# Launch checklist

Owner: **Matty Atlas**, due _Friday_.

- [x] Write the plan
- [ ] Run the tests (` + "`make test`" + `)
- [ ] Ask Priest to review

> Raw HTML stays text: <img src=x onerror="window.pwned=1">

See [the docs](https://example.com/docs).
`

// artifactRule makes Matty answer "checklist" with three files: the
// checklist (Markdown), its owners (JSON) and a plan drawing (SVG).
var artifactRule = `        - match: '(?i)checklist'
          reply: 'Here is the launch checklist, {{.User.Name}}.'
          artifacts:
            - name: launch-checklist.md
              media_type: text/markdown
              content: |
` + indent(checklist, "                ") + `            - name: owners.json
              media_type: application/json
              content: '{"plan":"Matty Atlas","build":"Finn Shipley","review":["Priest",null],"done":false,"tasks":3}'
            - name: plan.svg
              media_type: image/svg+xml
              content: '<svg xmlns="http://www.w3.org/2000/svg" width="240" height="120" viewBox="0 0 240 120"><rect width="240" height="120" rx="12" fill="#eef2ff"/><circle cx="60" cy="60" r="32" fill="#6366f1"/><rect x="110" y="36" width="100" height="14" rx="7" fill="#a5b4fc"/><rect x="110" y="64" width="70" height="14" rx="7" fill="#c7d2fe"/><script>window.pwned=1</script></svg>'
`

// artifactConfigDir is configDir with Matty's checklist rule.
func artifactConfigDir(t *testing.T) string {
	t.Helper()
	const hello = "          reply: 'Hi {{.User.Name}}, {{.Bot.Name}} here.'\n"
	if !strings.Contains(testBots, hello) {
		t.Fatal("testBots has no hello rule to follow")
	}
	return writeConfigDir(t, strings.Replace(testBots, hello, hello+artifactRule, 1))
}

// fetch GETs path on addr with q and an optional admin token.
func fetch(t *testing.T, addr, path string, q url.Values, adminToken string) (*http.Response, string) {
	t.Helper()
	u := url.URL{Scheme: "http", Host: addr, Path: path, RawQuery: q.Encode()}
	req, err := http.NewRequest("GET", u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if adminToken != "" {
		req.Header.Set("Authorization", "Bearer "+adminToken)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(body)
}

// askChecklist sends "checklist" to Matty in the client's private chat
// (or into room when set) and returns the reply's artifacts by name.
func askChecklist(t *testing.T, c *client, room string) map[string]map[string]any {
	t.Helper()
	f := map[string]any{"type": "send", "bot": "mattyatlas", "text": "the checklist, please", "client_id": "cl"}
	if room != "" {
		f = map[string]any{"type": "send", "chat": room, "text": "@matty the checklist, please", "client_id": "cl"}
	}
	c.send(f)
	c.expect("ack")
	var reply map[string]any
	for reply == nil {
		m := c.expect("message")
		if from := m["from"].(map[string]any); from["kind"] == "bot" {
			reply = m
		}
	}
	if !strings.HasPrefix(reply["text"].(string), "Here is the launch checklist") {
		t.Fatalf("reply = %v", reply)
	}
	return artifactsByName(t, reply)
}

// artifactsByName indexes a message frame's artifacts by name.
func artifactsByName(t *testing.T, m map[string]any) map[string]map[string]any {
	t.Helper()
	list, _ := m["artifacts"].([]any)
	out := map[string]map[string]any{}
	for _, a := range list {
		a := a.(map[string]any)
		if len(a) != 4 || a["id"] == "" || a["media_type"] == "" || a["size"] == nil {
			t.Errorf("artifact %v: want exactly id, name, media_type, size", a)
		}
		out[a["name"].(string)] = a
	}
	if len(out) != 3 {
		t.Fatalf("message %v shows %d artifacts, want 3", m["text"], len(out))
	}
	return out
}

// TestArtifactDownloads: a script rule's artifacts reach the message
// frame and the history; the person who asked reads them from
// /artifacts/{id} with the /ws credentials, the admin from the API;
// another visitor, a missing artifact and a wrong credential learn
// nothing; in a room, the members read them and others do not.
func TestArtifactDownloads(t *testing.T) {
	t.Setenv("SB_TEST_WEB_SECRET", "k")
	m := startMain(t, artifactConfigDir(t))
	ann := dial(t, m.Addr(), nil)
	annQ := url.Values{"token": {ann.hello["token"].(string)}}
	arts := askChecklist(t, ann, "")
	md := arts["launch-checklist.md"]
	if md["media_type"] != "text/markdown" || md["size"] != float64(len(checklist)) {
		t.Errorf("checklist artifact = %v, want %d bytes of text/markdown", md, len(checklist))
	}
	mdPath := "/artifacts/" + md["id"].(string)

	res, body := fetch(t, m.Addr(), mdPath, annQ, "")
	if res.StatusCode != 200 || body != checklist {
		t.Fatalf("owner's GET = %d %q", res.StatusCode, body)
	}
	for k, want := range map[string]string{
		"Content-Type":            "text/markdown; charset=utf-8",
		"Content-Disposition":     "inline; filename=launch-checklist.md",
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox",
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	// An SVG may hold script: it is saved, never shown as a page.
	res, body = fetch(t, m.Addr(), "/artifacts/"+arts["plan.svg"]["id"].(string), annQ, "")
	if res.StatusCode != 200 || !strings.HasPrefix(body, "<svg") || res.Header.Get("Content-Type") != "image/svg+xml" ||
		res.Header.Get("Content-Disposition") != "attachment; filename=plan.svg" {
		t.Errorf("svg = %d %v", res.StatusCode, res.Header)
	}

	// Nobody else: another visitor gets what a missing artifact gets.
	bob := dial(t, m.Addr(), nil)
	bobQ := url.Values{"token": {bob.hello["token"].(string)}}
	res, refused := fetch(t, m.Addr(), mdPath, bobQ, "")
	missingRes, missing := fetch(t, m.Addr(), "/artifacts/art-00000000-0000-0000-0000-000000000000", annQ, "")
	if res.StatusCode != 404 || missingRes.StatusCode != 404 || refused != missing ||
		res.Header.Get("Content-Type") != missingRes.Header.Get("Content-Type") {
		t.Errorf("another visitor: %d %q; a missing artifact: %d %q; want the same 404", res.StatusCode, refused, missingRes.StatusCode, missing)
	}
	for name, q := range map[string]url.Values{
		"no credentials": nil,
		"an empty token": {"token": {""}},
		"a bad token":    {"token": {"web-anon-x.forged"}},
		"a bad sig":      {"user": {"bryan"}, "sig": {strings.Repeat("0", 64)}},
		"half signed":    {"user": {"bryan"}},
	} {
		if res, body := fetch(t, m.Addr(), mdPath, q, ""); res.StatusCode != 401 || strings.Contains(body, "Launch") {
			t.Errorf("%s: %d %q, want 401", name, res.StatusCode, body)
		}
	}

	// A signed-in person reads theirs with user+sig.
	bryanQ := url.Values{"user": {"bryan"}, "sig": {web.Sign([]byte("k"), "bryan")}}
	bryan := dial(t, m.Addr(), bryanQ)
	bryanArts := askChecklist(t, bryan, "")
	if res, body := fetch(t, m.Addr(), "/artifacts/"+bryanArts["owners.json"]["id"].(string), bryanQ, ""); res.StatusCode != 200 ||
		!strings.HasPrefix(body, `{"plan":"Matty Atlas"`) || res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("bryan's JSON = %d %q %v", res.StatusCode, body, res.Header)
	}
	if res, _ := fetch(t, m.Addr(), mdPath, bryanQ, ""); res.StatusCode != 404 {
		t.Errorf("bryan reading ann's: %d, want 404", res.StatusCode)
	}

	// The admin reads any artifact with the bearer token, none without.
	if res, body := fetch(t, m.Addr(), "/api/v1"+mdPath, nil, m.AdminToken); res.StatusCode != 200 || body != checklist {
		t.Errorf("admin GET = %d %q", res.StatusCode, body)
	}
	if res, _ := fetch(t, m.Addr(), "/api/v1"+mdPath, nil, ""); res.StatusCode != 401 {
		t.Errorf("admin GET without a token = %d, want 401", res.StatusCode)
	}
	if res, _ := fetch(t, m.Addr(), "/api/v1/artifacts/art-none", nil, m.AdminToken); res.StatusCode != 404 {
		t.Errorf("admin GET of a missing artifact = %d, want 404", res.StatusCode)
	}

	// History carries them too.
	ann.send(map[string]any{"type": "history", "bot": "mattyatlas"})
	h := ann.expect("history")
	msgs := h["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	if got := artifactsByName(t, last); got["launch-checklist.md"]["id"] != md["id"] {
		t.Errorf("history shows %v", got)
	}
	if _, ok := msgs[0].(map[string]any)["artifacts"]; ok {
		t.Errorf("ann's own message shows artifacts: %v", msgs[0])
	}

	// A closed room: its members read what is shown there.
	ann.send(map[string]any{"type": "join", "chat": "den", "bots": []string{"mattyatlas"}})
	ann.expect("joined")
	roomMD := "/artifacts/" + askChecklist(t, ann, "den")["launch-checklist.md"]["id"].(string)
	if res, _ := fetch(t, m.Addr(), roomMD, annQ, ""); res.StatusCode != 200 {
		t.Errorf("room member: %d", res.StatusCode)
	}
	if res, _ := fetch(t, m.Addr(), roomMD, bobQ, ""); res.StatusCode != 404 {
		t.Errorf("not a member: %d, want 404", res.StatusCode)
	}
	ann.send(map[string]any{"type": "invite", "chat": "den", "user": bob.hello["platform_id"]})
	ann.expect("invited")
	if res, body := fetch(t, m.Addr(), roomMD, bobQ, ""); res.StatusCode != 200 || body != checklist {
		t.Errorf("invited member: %d %q", res.StatusCode, body)
	}
	if res, _ := fetch(t, m.Addr(), mdPath, bobQ, ""); res.StatusCode != 404 {
		t.Errorf("a room member reading ann's private one: %d, want 404", res.StatusCode)
	}
}
