package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/platforms/web"
)

// insightsBots are script bots that remember what they are told to and
// answer with the insights of other bots they find; helpdesk is a public
// bot that tries both.
var insightsBots = insightsConfig(scriptRemembers)

// scriptRemembers is the brain of insightsBots: "remember KIND
// CONFIDENCE: TEXT" stores an insight, anything else is answered with
// the insights the turn found.
const scriptRemembers = `    brain:
      kind: script
      rules:
        - match: '(?i)^remember (\w+) ([-0-9.a-z]+): (.*)'
          reply: 'Noted.'
          actions:
            - remember: {kind: '{{index .Match 1}}', confidence: '{{index .Match 2}}', text: '{{index .Match 3}}'}
      default: '{{.Bot.Name}} knows: {{range .Insights}}[{{.Bot}} {{.Kind}} {{.Confidence}}] {{.Text}}; {{else}}nothing{{end}}'
`

// insightsConfig is bots.yaml with Elena's brain given, Marcus's and
// Helpdesk's scriptRemembers.
func insightsConfig(elena string) string {
	return `
gateway:
  listen: 127.0.0.1:0
  database: test.db
  crossbot: {enabled: false}   # the room's bots answer people, not each other
  web:
    secret_env: SB_TEST_WEB_SECRET
    max_messages_per_second_per_person: 0
    max_messages_per_second_per_ip: 0
shared:
  insights: {limit: 2}
bots:
  - id: elena
    name: Elena
` + elena + `    platforms: {web: {}}
  - id: marcus
    name: Marcus
` + scriptRemembers + `    platforms: {web: {}}
  - id: helpdesk
    name: Helpdesk
    public: true
` + scriptRemembers + `    platforms: {web: {}}
`
}

// insightsUsers: Bryan shares with the bots; Olga does not; Ivan is
// invisible.
const insightsUsers = `
users:
  - id: user-bryan
    name: Bryan
    identities: [web-bryan]
  - id: user-olga
    name: Olga
    identities: [web-olga]
    privacy: {share_with_other_bots: false}
  - id: user-ivan
    name: Ivan
    identities: [web-ivan]
    privacy: {invisible: true}
`

// startInsights starts a gateway on insightsBots and insightsUsers
// (with bots in place of insightsBots when given).
func startInsights(t *testing.T, bots string) (*Main, string) {
	t.Helper()
	t.Setenv("SB_TEST_WEB_SECRET", "k")
	if bots == "" {
		bots = insightsBots
	}
	dir := writeConfigDir(t, bots)
	writeInPlace(t, filepath.Join(dir, "users.yaml"), insightsUsers)
	return startMain(t, dir), dir
}

// signedIn dials the widget as the signed web user id (web-<id>).
func signedIn(t *testing.T, m *Main, id string) *client {
	t.Helper()
	return dial(t, m.Addr(), url.Values{"user": {id}, "sig": {web.Sign([]byte("k"), id)}})
}

// ask sends text to bot and returns its reply.
func (c *client) ask(bot, text string) string {
	c.t.Helper()
	return c.say(map[string]any{"bot": bot}, text, bot)
}

// A bot remembers (a script rule's remember action); another bot's turn
// for the same person finds it when the message relates to it, with the
// writer's name, never for an unrelated message, never the writer's own,
// never for another person; the confidence threshold and the limit hold;
// people who keep out of the shared world get none shared, though what
// bots notice about them is stored; public bots take no part.
func TestInsightsAcrossBots(t *testing.T) {
	m, _ := startInsights(t, "")
	bryan, stranger := signedIn(t, m, "bryan"), dial(t, m.Addr(), nil)
	for _, note := range []string{
		"remember epiphany 0.85: Bryan is excited about his new job at the tech company",
		"remember observation 0.5: Bryan might quit his job",
		"remember diary 0.7: Bryan's job starts on Monday",
		"remember dream 0.9: Bryan flies over a tech company",
	} {
		if got := bryan.ask("elena", note); got != "Noted." {
			t.Fatalf("elena answered %q to %q", got, note)
		}
	}
	for _, tc := range []struct {
		name string
		c    *client
		bot  string
		text string
		want string
	}{
		// Three of Elena's insights at or above 0.7 share words with the
		// message; the limit (2) keeps the two most relevant, shown
		// oldest first.
		{"another bot, a related message", bryan, "marcus", "How is the new job at the tech company?",
			"Marcus knows: [Elena epiphany 0.85] Bryan is excited about his new job at the tech company; [Elena dream 0.9] Bryan flies over a tech company;"},
		{"at the threshold, not below it", bryan, "marcus", "When do you start the job?",
			"Marcus knows: [Elena epiphany 0.85] Bryan is excited about his new job at the tech company; [Elena diary 0.7] Bryan's job starts on Monday;"},
		{"an unrelated message", bryan, "marcus", "What is the weather like?", "Marcus knows: nothing"},
		{"stop words only", bryan, "marcus", "Is it the one you were on about?", "Marcus knows: nothing"},
		{"never the writer's own", bryan, "elena", "How is the new job at the tech company?", "Elena knows: nothing"},
		{"never another person's", stranger, "marcus", "How is the new job at the tech company?", "Marcus knows: nothing"},
		{"public bots take no part", bryan, "helpdesk", "How is the new job at the tech company?", "Helpdesk knows: nothing"},
	} {
		if got := tc.c.ask(tc.bot, tc.text); got != tc.want {
			t.Errorf("%s: %s answered %q\nwant %q", tc.name, tc.bot, got, tc.want)
		}
	}

	// In a room, a bot's turn for Bryan finds what it finds in private:
	// insights are about the person, wherever they speak.
	bryan.send(map[string]any{"type": "join", "chat": "lounge", "bots": []string{"elena", "marcus"}})
	bryan.expect("joined")
	if got := bryan.say(map[string]any{"chat": "lounge"}, "@marcus Monday is the big day", "marcus"); got != "Marcus knows: [Elena diary 0.7] Bryan's job starts on Monday;" {
		t.Errorf("marcus in a room answered %q", got)
	}

	// Marcus's insight reaches Elena, whose own it never is.
	if got := bryan.ask("marcus", "remember observation 1: Bryan drinks his coffee black"); got != "Noted." {
		t.Fatalf("marcus answered %q", got)
	}
	if got := bryan.ask("elena", "coffee?"); got != "Elena knows: [Marcus observation 1] Bryan drinks his coffee black;" {
		t.Errorf("elena answered %q", got)
	}

	// Olga does not share with other bots, Ivan is invisible: what bots
	// notice about them is stored, and found by no other bot.
	for _, who := range []string{"olga", "ivan"} {
		c := signedIn(t, m, who)
		if got := c.ask("elena", "remember epiphany 0.95: "+who+" plays chess every night"); got != "Noted." {
			t.Fatalf("elena answered %s %q", who, got)
		}
		if got := c.ask("marcus", "chess tonight?"); got != "Marcus knows: nothing" {
			t.Errorf("marcus found something about %s: %q", who, got)
		}
		_, body := apiGet(t, m, "/api/v1/insights?user=web-"+who, m.AdminToken)
		if got := itemTexts(body); !slices.Equal(got, []string{who + " plays chess every night"}) {
			t.Errorf("insights about %s = %q; want it stored", who, got)
		}
	}

	// A public bot's remember is refused: nothing of Helpdesk's is kept.
	if got := bryan.ask("helpdesk", "remember epiphany 0.9: Bryan asked the helpdesk"); got != "Noted." {
		t.Errorf("helpdesk answered %q", got)
	}
	if _, body := apiGet(t, m, "/api/v1/insights?bot=helpdesk", m.AdminToken); len(items(body)) != 0 {
		t.Errorf("a public bot's insight was stored: %v", body)
	}
	// Refused arguments store nothing (the reply is sent whatever the
	// rule's actions do; the refusal is logged with its reason).
	for _, note := range []string{"remember epiphany 1.5: too sure", "remember hunch 0.9: no such kind", "remember epiphany x: not a number"} {
		if got := bryan.ask("elena", note); got != "Noted." {
			t.Errorf("elena answered %q to %q", got, note)
		}
	}
	if _, body := apiGet(t, m, "/api/v1/insights?user=user-bryan&bot=elena", m.AdminToken); len(items(body)) != 4 {
		t.Errorf("Elena's insights about Bryan = %q; want the 4 good ones", itemTexts(body))
	}
}

// shared.insights takes effect live: a lower threshold and a higher
// limit find more, enabled: false finds none.
func TestInsightsSettingsLive(t *testing.T) {
	m, dir := startInsights(t, "")
	bryan := signedIn(t, m, "bryan")
	for _, note := range []string{"remember epiphany 0.9: Bryan loves jazz, any jazz", "remember observation 0.4: Bryan may play jazz piano",
		"remember diary 0.8: Bryan went to a jazz club"} {
		bryan.ask("elena", note)
	}
	settle := func(settings, want string) {
		t.Helper()
		writeInPlace(t, filepath.Join(dir, "bots.yaml"), onTestStore(t, strings.Replace(insightsBots, "  insights: {limit: 2}\n", settings, 1)))
		deadline := time.Now().Add(3 * time.Second)
		for {
			got := bryan.ask("marcus", "any jazz tonight?")
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("with %q marcus still answers %q, want %q", settings, got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	settle("  insights: {limit: 3, confidence_threshold: 0.3}\n",
		"Marcus knows: [Elena epiphany 0.9] Bryan loves jazz, any jazz; [Elena observation 0.4] Bryan may play jazz piano; [Elena diary 0.8] Bryan went to a jazz club;")
	// The most relevant: "jazz" twice.
	settle("  insights: {limit: 1}\n", "Marcus knows: [Elena epiphany 0.9] Bryan loves jazz, any jazz;")
	settle("  insights: {enabled: false}\n", "Marcus knows: nothing")
}

// GET /api/v1/insights lists insights by person (a master or a platform
// ID) and by bot, oldest first; DELETE /api/v1/insights/{id} forgets
// one, which no turn finds again. Changes need the bearer token; a
// DELETE needs no body and no Content-Type.
func TestInsightsAPI(t *testing.T) {
	m, _ := startInsights(t, "")
	bryan, stranger := signedIn(t, m, "bryan"), dial(t, m.Addr(), nil)
	bryan.ask("elena", "remember epiphany 0.85: Bryan is excited about his new job")
	bryan.ask("marcus", "remember dream 0.9: Bryan dreams of a new job by the sea")
	stranger.ask("elena", "remember observation 0.8: the visitor asks about jobs")
	anon := stranger.hello["platform_id"].(string)

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"user=user-bryan", []string{"Bryan is excited about his new job", "Bryan dreams of a new job by the sea"}},
		{"user=web-bryan", []string{"Bryan is excited about his new job", "Bryan dreams of a new job by the sea"}},
		{"user=web-bryan&bot=marcus", []string{"Bryan dreams of a new job by the sea"}},
		{"user=" + anon, []string{"the visitor asks about jobs"}},
		{"bot=elena", []string{"Bryan is excited about his new job", "the visitor asks about jobs"}},
		{"limit=1", []string{"the visitor asks about jobs"}},
		{"", []string{"Bryan is excited about his new job", "Bryan dreams of a new job by the sea", "the visitor asks about jobs"}},
		{"user=user-nobody", nil},
	} {
		status, body := apiGet(t, m, "/api/v1/insights?"+tc.query, m.AdminToken)
		if got := itemTexts(body); status != http.StatusOK || !slices.Equal(got, tc.want) {
			t.Errorf("insights?%s = %d %q, want %q", tc.query, status, got, tc.want)
		}
	}
	_, body := apiGet(t, m, "/api/v1/insights?user=user-bryan&bot=elena", m.AdminToken)
	list := items(body)
	if len(list) != 1 {
		t.Fatalf("elena's insights about bryan = %v", body)
	}
	in := list[0]
	if in["user"] != "user-bryan" || in["bot"] != "elena" || in["kind"] != "epiphany" || in["confidence"] != 0.85 {
		t.Errorf("insight = %v", in)
	}
	if at, err := time.Parse(time.RFC3339, fmt.Sprint(in["created_at"])); err != nil || time.Since(at) > time.Minute {
		t.Errorf("created_at = %v (%v)", in["created_at"], err)
	}
	if got := bryan.ask("marcus", "the new job"); !strings.Contains(got, "Bryan is excited about his new job") {
		t.Fatalf("before the delete marcus answered %q", got)
	}

	id := fmt.Sprint(in["id"])
	// The dashboard's cookie reads but never deletes.
	jar := &cookieJar{}
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get("http://" + m.Addr() + "/dashboard?token=" + url.QueryEscape(m.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, tc := range []struct {
		name, auth, contentType, path string
		client                        *http.Client
		status                        int
		code                          string
	}{
		{"without the token", "", "", "/api/v1/insights/" + id, http.DefaultClient, http.StatusUnauthorized, "unauthorized"},
		{"with the dashboard cookie alone", "", "", "/api/v1/insights/" + id, browser, http.StatusUnauthorized, "unauthorized"},
		{"a bad ID", "Bearer " + m.AdminToken, "", "/api/v1/insights/abc", http.DefaultClient, http.StatusBadRequest, "bad_request"},
		{"a zero ID", "Bearer " + m.AdminToken, "", "/api/v1/insights/0", http.DefaultClient, http.StatusBadRequest, "bad_request"},
		{"an unknown ID", "Bearer " + m.AdminToken, "", "/api/v1/insights/99999", http.DefaultClient, http.StatusNotFound, "not_found"},
		{"with the token, no Content-Type", "Bearer " + m.AdminToken, "", "/api/v1/insights/" + id, http.DefaultClient, http.StatusNoContent, ""},
		{"again", "Bearer " + m.AdminToken, "application/json", "/api/v1/insights/" + id, http.DefaultClient, http.StatusNotFound, "not_found"},
	} {
		status, code := apiDelete(t, tc.client, "http://"+m.Addr()+tc.path, tc.auth, tc.contentType)
		if status != tc.status || code != tc.code {
			t.Errorf("DELETE %s: %d %q, want %d %q", tc.name, status, code, tc.status, tc.code)
		}
	}
	if _, body := apiGet(t, m, "/api/v1/insights?user=user-bryan", m.AdminToken); !slices.Equal(itemTexts(body), []string{"Bryan dreams of a new job by the sea"}) {
		t.Errorf("after the delete: %q", itemTexts(body))
	}
	if got := bryan.ask("marcus", "the new job"); got != "Marcus knows: nothing" {
		t.Errorf("after the delete marcus answered %q", got)
	}
	if got := bryan.ask("elena", "the new job"); got != "Elena knows: [Marcus dream 0.9] Bryan dreams of a new job by the sea;" {
		t.Errorf("elena answered %q", got)
	}
	for _, path := range []string{"/api/v1/insights?limit=0", "/api/v1/insights?limit=x"} {
		if status, _ := apiGet(t, m, path, m.AdminToken); status != http.StatusBadRequest {
			t.Errorf("%s = %d, want 400", path, status)
		}
	}
	if status, _ := apiGet(t, m, "/api/v1/insights", ""); status != http.StatusUnauthorized {
		t.Errorf("insights without the token = %d", status)
	}
}

// apiDelete sends DELETE to u with auth (an Authorization header, or
// none) and returns the status and the error code of the answer.
func apiDelete(t *testing.T, c *http.Client, u, auth, contentType string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, u, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct{ Code string }
	}
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &body)
	if resp.StatusCode == http.StatusNoContent && len(b) > 0 {
		t.Errorf("204 with a body: %s", b)
	}
	return resp.StatusCode, body.Error.Code
}

// rememberModel is an OpenAI-compatible server for Elena: asked to
// remember, it first calls remember with a confidence over 1, then,
// given the error, again with a good one; otherwise it answers. It
// records every request.
type rememberModel struct {
	mu       sync.Mutex
	requests []map[string]any
}

func (f *rememberModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	msgs := req["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	call := func(id, args string) map[string]any {
		return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": id, "type": "function", "function": map[string]any{"name": "remember", "arguments": args}}}}
	}
	msg := map[string]any{"role": "assistant", "content": "Elena here."}
	switch {
	case last["role"] == "user" && strings.HasPrefix(fmt.Sprint(last["content"]), "I got the job"):
		msg = call("r1", `{"kind": "epiphany", "text": "Bryan got the job he wanted", "confidence": 1.5}`)
	case last["role"] == "tool" && last["tool_call_id"] == "r1":
		msg = call("r2", `{"kind": "epiphany", "text": "Bryan got the job he wanted", "confidence": 0.9}`)
	case last["role"] == "tool":
		msg = map[string]any{"role": "assistant", "content": "Congratulations!"}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}}})
}

// A model brain remembers through the remember tool: a confidence
// outside 0–1 is refused with the reason, which goes back to the model,
// and its corrected call is stored; a script bot finds the insight; the
// model's own later turn has the [INSIGHTS FROM OTHER CHARACTERS] block
// with a script bot's insight, and never its own.
func TestModelRemembers(t *testing.T) {
	model := &rememberModel{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	bots := insightsConfig(fmt.Sprintf(`    brain:
      kind: openai
      base_url: %s/v1
      model: test-model
`, srv.URL))
	m, _ := startInsights(t, bots)
	bryan := signedIn(t, m, "bryan")
	if got := bryan.ask("elena", "I got the job!"); got != "Congratulations!" {
		t.Fatalf("elena answered %q", got)
	}
	model.mu.Lock()
	reqs := slices.Clone(model.requests)
	model.mu.Unlock()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	var tools []string
	for _, tl := range reqs[0]["tools"].([]any) {
		tools = append(tools, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	if !slices.Contains(tools, "remember") {
		t.Errorf("tools = %v; want remember among them", tools)
	}
	if r := toolResults(reqs[1])["r1"]; r != "Error: remember: confidence: must be a number from 0 to 1" {
		t.Errorf("the refused call's result = %q", r)
	}
	if r := toolResults(reqs[2])["r2"]; !strings.HasPrefix(r, "Remembered insight") {
		t.Errorf("the good call's result = %q", r)
	}
	if got := bryan.ask("marcus", "how is the job?"); got != "Marcus knows: [Elena epiphany 0.9] Bryan got the job he wanted;" {
		t.Errorf("marcus answered %q", got)
	}

	bryan.ask("marcus", "remember observation 0.8: Bryan celebrates with pizza")
	bryan.ask("elena", "pizza tonight to celebrate the job?")
	model.mu.Lock()
	system := model.requests[len(model.requests)-1]["messages"].([]any)[0].(map[string]any)["content"].(string)
	model.mu.Unlock()
	want := "[INSIGHTS FROM OTHER CHARACTERS]\n- Marcus noticed: Bryan celebrates with pizza"
	if !strings.Contains(system, want) || strings.Count(system, "noticed:") != 1 {
		t.Errorf("elena's prompt lacks %q, or has more (her own insight):\n%s", want, system)
	}
}

// The example team: Matty remembers what a person is working on, and
// Finn knows it when they talk to him about it.
func TestExampleInsights(t *testing.T) {
	m := startMain(t, exampleDir(t))
	c := dial(t, m.Addr(), nil)
	if got := c.ask("mattyatlas", "I'm building a login page for the shop."); !strings.Contains(got, "I'll remember that you're working on a login page for the shop") {
		t.Fatalf("matty answered %q", got)
	}
	got := c.ask("finnshipley", "How is the login page coming along?")
	if !strings.Contains(got, "Matty Atlas noticed: ") || !strings.Contains(got, " is working on a login page for the shop.") {
		t.Errorf("finn answered %q", got)
	}
	if got := c.ask("finnshipley", "Any plans for the weekend?"); strings.Contains(got, "noticed") {
		t.Errorf("finn mentioned an insight for an unrelated message: %q", got)
	}
}
