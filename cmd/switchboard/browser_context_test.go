package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// heldBots: Lead hands a survey to Researcher, a model whose server
// (heldModel) reports progress and then waits for the test, so that the
// page can be looked at while the hand-off runs.
const heldBots = `
gateway:
  listen: 127.0.0.1:0
  database: test.db
  web:
    max_messages_per_second_per_person: 0
    max_messages_per_second_per_ip: 0
bots:
  - id: lead
    name: Lead
    brain:
      kind: script
      rules:
        - match: '^survey (\S+)'
          reply: 'Researcher will survey {{index .Match 1}}.'
          actions: [{delegate: {bot: researcher, task: 'Survey {{index .Match 1}}'}}]
      default: '?'
    platforms: {web: {}}
    delegation: {allow: [researcher]}
  - id: researcher
    name: Researcher
    brain:
      kind: openai
      base_url: MODEL_URL
      model: test
    platforms: {web: {}}
`

// heldModel is a chat completions server for one delegated turn: the
// first request reports step 1 of 3, the second (after the test's first
// release) step 2, the third (after the second) answers. Each release
// is a receive from next.
type heldModel struct {
	next chan struct{}
	once sync.Once
}

// release lets the held request go on.
func (m *heldModel) release(t *testing.T) {
	t.Helper()
	select {
	case m.next <- struct{}{}:
	case <-time.After(20 * time.Second):
		t.Fatal("the model was never asked")
	}
}

func (m *heldModel) stop() { m.once.Do(func() { close(m.next) }) }

func (m *heldModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct{ Role string } `json:"messages"`
	}
	json.Unmarshal(body, &req)
	results := 0
	for _, msg := range req.Messages {
		if msg.Role == "tool" {
			results++
		}
	}
	if results > 0 {
		select {
		case <-m.next:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	switch results {
	case 0:
		fmt.Fprint(w, progressCall("Surveying CompetitorX", 1))
	case 1:
		fmt.Fprint(w, progressCall("Writing competitors.json", 2))
	default:
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"CompetitorX surveyed."},"finish_reason":"stop"}]}`)
	}
}

// progressCall is a response that calls progress for step of 3.
func progressCall(text string, step int) string {
	args, _ := json.Marshal(map[string]any{"text": text, "step": step, "total": 3})
	call, _ := json.Marshal(map[string]any{"id": fmt.Sprint("p", step), "type": "function",
		"function": map[string]string{"name": "progress", "arguments": string(args)}})
	return `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` + string(call) + `]},"finish_reason":"tool_calls"}]}`
}

// makeRoom creates a room from the page's New room dialog, with every
// bot in it.
func makeRoom(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Click(chromedp.CSS(`#new-room`)),
		chromedp.WaitVisible(chromedp.CSS(`#room-name`)),
		chromedp.SendKeys(chromedp.CSS(`#room-name`), name),
		chromedp.Click(chromedp.CSS(`#room-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`button.room[data-chat="`+name+`"]`)),
	)
}

// A running hand-off shows its progress under its message and in the
// delegations panel, updated as it reports; once done, "done" replaces
// it. The dashboard's hand-off tree shows it too.
func TestBrowserHandoffProgress(t *testing.T) {
	model := &heldModel{next: make(chan struct{})}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	t.Cleanup(model.stop)
	m := startMain(t, writeConfigDir(t, strings.Replace(heldBots, "MODEL_URL", srv.URL+"/v1", 1)))
	ctx := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="open"]`)),
		makeRoom("survey"),
		say("@lead survey CompetitorX"),
	)
	if err != nil {
		t.Fatalf("the hand-off in the page: %v", err)
	}
	// Lead's delegate action made the hand-off: no message of it yet, it
	// is the room's, with its progress as its status.
	waitJS(t, ctx, "the progress of the hand-off", `document.querySelector("#delegations .deleg-progress")`)
	waitTexts(t, ctx, `#delegations .delegation`, "Lead → Researcher: Survey CompetitorX · Step 1/3: Surveying CompetitorX")

	model.release(t)
	waitTexts(t, ctx, `#delegations .deleg-status`, "Step 2/3: Writing competitors.json")
	screenshot(t, ctx, "handoff-progress")

	// The operator sees it in the dashboard's tree, in another tab.
	dash, cancel := chromedp.NewContext(ctx)
	defer cancel()
	signIn(t, dash, m)
	waitJS(t, dash, "the progress in the tree", `(() => { const p = document.querySelector("#delegations li.dlg[data-status=running] .dlg-progress"); return p && p.textContent === "Step 2/3: Writing competitors.json"; })()`)

	// Done replaces it, under Researcher's answer too.
	model.release(t)
	waitTexts(t, ctx, `#deleg-done .deleg-status`, "done")
	waitTexts(t, ctx, `#messages .deleg-tag`, "Lead → Researcher · done")
	if n := len(texts(t, ctx, `#delegations .delegation`)); n != 0 {
		t.Errorf("%d hand-offs still active", n)
	}
	waitJS(t, dash, "the tree once done", `document.querySelector("#delegations li.dlg[data-status=done]") && !document.querySelector("#delegations .dlg-progress")`)
}

// openRoom opens a room from the sidebar.
func openRoom(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Click(chromedp.CSS(`button.room[data-chat="` + name + `"]`))
}

// The worked example in a room of the page: as each hand-off ends, the
// room's context panel shows the chain's new step with its files, and
// the entity, events and fact the bots recorded; each file opens with
// the page's credentials.
func TestBrowserContextPanel(t *testing.T) {
	m := startMain(t, exampleDir(t))
	ctx := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="open"]`)),
		makeRoom("launch"),
		chromedp.WaitVisible(chromedp.CSS(`#context-panel .ctx-intro`)),
		say("@matty compare our API with CompetitorX"),
	)
	if err != nil {
		t.Fatalf("the worked example in the page: %v", err)
	}
	waitJS(t, ctx, "the chain's third step", `document.querySelector("#context-panel .ctx-step[data-step='3']")`)
	panel := `#context-panel `
	waitTexts(t, ctx, panel+`.ctx-producer`, "Researcher|Coder|Auditor")
	waitTexts(t, ctx, panel+`.ctx-step-num`, "1|2|3")
	waitTexts(t, ctx, panel+`.ctx-file-name`, "competitors.json|api-comparison.json|validation.json")
	waitTexts(t, ctx, panel+`.ctx-from`, "from competitors.json|from competitors.json, api-comparison.json")
	waitTexts(t, ctx, panel+`.ctx-entity-name`, "CompetitorX")
	waitTexts(t, ctx, panel+`.ctx-attr dt`, "api|pricing")
	waitTexts(t, ctx, panel+`.ctx-attr dd`, "REST|$99/month")
	waitTexts(t, ctx, panel+`.ctx-fact-line`, "CompetitorX pricing_valid true")
	waitTexts(t, ctx, panel+`.ctx-fact-meta .ctx-conf`, "0.95")
	waitTexts(t, ctx, panel+`.ctx-fact-meta .ctx-who`, "Auditor")
	waitTexts(t, ctx, panel+`.ctx-event .ctx-text`, "Researcher surveyed CompetitorX|Coder compared our API with CompetitorX|Auditor validated the comparison")
	waitTexts(t, ctx, panel+`.ctx-event .ctx-who`, "Researcher|Coder|Auditor")
	if n := len(texts(t, ctx, panel+`.ctx-step[data-step="1"] .ctx-from`)); n != 0 {
		t.Errorf("the first step, handed nothing, lists inputs")
	}

	// Each file shows its size and hash as the API has them, and opens
	// with the page's own credentials.
	_, body := apiGet(t, m, "/api/v1/context?space=chat:web:launch", m.AdminToken)
	for i, st := range body["chain"].([]any) {
		out := st.(map[string]any)["outputs"].([]any)[0].(map[string]any)
		sel := fmt.Sprintf(`%s.ctx-step[data-step="%d"] .ctx-file`, panel, i+1)
		sum := out["sha256"].(string)
		if got := text(t, ctx, sel+" .ctx-hash"); got != sum[:8] {
			t.Errorf("step %d's hash shows %q, want %q", i+1, got, sum[:8])
		}
		if got := attr(t, ctx, sel+" .ctx-hash", "title"); got != "sha256:"+sum {
			t.Errorf("step %d's hash title %q", i+1, got)
		}
		if got := text(t, ctx, sel+" .ctx-file-meta"); !strings.HasPrefix(got, fmt.Sprintf("%v B · ", out["size"])) {
			t.Errorf("step %d's file meta %q, size %v", i+1, got, out["size"])
		}
		href := attr(t, ctx, sel+" a.ctx-file-name", "href")
		res, err := http.Get("http://" + m.Addr() + href)
		if err != nil {
			t.Fatal(err)
		}
		content, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || int64(len(content)) != int64(out["size"].(float64)) {
			t.Errorf("%s answered %d: %s", href, res.StatusCode, content)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Sleep(1600*time.Millisecond)); err != nil { // the new step's highlight fades
		t.Fatal(err)
	}
	contextShots(t, ctx, "context-panel", "")
}

// A room's context is asked for when the room opens and pushed while it
// is open; another room's panel is its own; closing the panel is
// remembered across a reload.
func TestBrowserContextPanelLive(t *testing.T) {
	m := startMain(t, exampleDir(t))
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "join", "chat": "launch", "open": true, "bots": []string{"mattyatlas", "researcher", "coder", "auditor"}})
	c.await("joined")
	c.send(map[string]any{"type": "send", "chat": "launch", "text": "@matty compare our API with CompetitorX", "client_id": "go"})
	for done := 0; done < 3; {
		if f := c.await("delegation"); f["status"] == "done" {
			done++
		}
	}
	ctx := browser(t)
	panel := `#context-panel `
	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="open"]`)),
		makeRoom("quiet"),
		chromedp.WaitVisible(chromedp.CSS(panel+`.ctx-section[data-section="chain"] .ctx-empty`)),
		makeRoom("launch"), // joins the open room by its name
	)
	if err != nil {
		t.Fatalf("joining the room: %v", err)
	}
	waitTexts(t, ctx, panel+`.ctx-producer`, "Researcher|Coder|Auditor")
	err = chromedp.Do(ctx,
		openRoom("quiet"),
		chromedp.WaitVisible(chromedp.CSS(panel+`.ctx-intro`)),
	)
	if err != nil {
		t.Fatalf("the other room: %v", err)
	}
	if n := len(texts(t, ctx, panel+`.ctx-step`)); n != 0 {
		t.Errorf("the quiet room's panel shows %d steps", n)
	}

	// Said by someone else while the page has the room open: Researcher
	// surveys another competitor, a new entity and event, pushed. (Its
	// hand-off to Coder is refused: the pair's cooldown.)
	if err := chromedp.Do(ctx, openRoom("launch")); err != nil {
		t.Fatal(err)
	}
	waitTexts(t, ctx, panel+`.ctx-producer`, "Researcher|Coder|Auditor")
	c.send(map[string]any{"type": "send", "chat": "launch", "text": "@researcher research CompetitorY: pricing and API", "client_id": "y"})
	waitTexts(t, ctx, panel+`.ctx-entity-name`, "CompetitorX|CompetitorY")
	waitTexts(t, ctx, panel+`.ctx-event .ctx-text`, "Researcher surveyed CompetitorX|Coder compared our API with CompetitorX|"+
		"Auditor validated the comparison|Researcher surveyed CompetitorY")
	waitTexts(t, ctx, panel+`.ctx-producer`, "Researcher|Coder|Auditor")

	// Closed, the panel stays closed after a reload; opened, it shows
	// the context as asked for again.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#context-close`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#context-panel`)),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="open"]`)),
		openRoom("launch"),
		chromedp.WaitVisible(chromedp.CSS(`#context-toggle[aria-pressed="false"]`)),
	)
	if err != nil {
		t.Fatalf("after a reload: %v", err)
	}
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#context-panel").hidden`)); err != nil || !hidden {
		t.Errorf("the panel closed before the reload shows after it (%v)", err)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#context-toggle`)),
		chromedp.WaitVisible(chromedp.CSS(panel+`.ctx-entity-name`)),
	)
	if err != nil {
		t.Fatalf("opening the panel: %v", err)
	}
	waitTexts(t, ctx, panel+`.ctx-entity-name`, "CompetitorX|CompetitorY")
}

// The dashboard's Artifact chain card draws the worked example's chain:
// three producers, three files, an edge from each input to its producer
// and from each producer to its output; each file opens from the API.
func TestBrowserDashboardChain(t *testing.T) {
	m := startMain(t, exampleDir(t))
	c := dial(t, m.Addr(), nil)
	c.send(map[string]any{"type": "join", "chat": "launch", "bots": []string{"mattyatlas", "researcher", "coder", "auditor"}})
	c.await("joined")
	c.send(map[string]any{"type": "send", "chat": "launch", "text": "@matty compare our API with CompetitorX", "client_id": "go"})
	for done := 0; done < 3; {
		if f := c.await("delegation"); f["status"] == "done" {
			done++
		}
	}
	ctx := browser(t)
	signIn(t, ctx, m)
	waitJS(t, ctx, "the chain's graph", `document.querySelectorAll("#chain-graph .node-producer").length === 3`)
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#chain-space").value`)); got != "chat:web:launch" {
		t.Errorf("the space picked is %q", got)
	}
	got := func(sel string) []string { return texts(t, ctx, sel) }
	if p := got("#chain-graph .node-producer .node-name"); strings.Join(p, "|") != "Researcher|Coder|Auditor" {
		t.Errorf("producers = %q", p)
	}
	if a := got("#chain-graph .node-artifact .node-name"); strings.Join(a, "|") != "competitors.json|api-comparison.json|validation.json" {
		t.Errorf("artifacts = %q", a)
	}
	edges := strings.Join(got(`#chain-graph .edge title`), "|")
	want := "competitors.json → Coder|competitors.json → Auditor|api-comparison.json → Auditor|" +
		"Researcher → competitors.json|Coder → api-comparison.json|Auditor → validation.json"
	for _, e := range strings.Split(want, "|") {
		if !strings.Contains("|"+edges+"|", "|"+e+"|") {
			t.Errorf("no edge %q in %q", e, edges)
		}
	}
	if n := len(strings.Split(edges, "|")); n != 6 {
		t.Errorf("%d edges: %q", n, edges)
	}
	_, body := apiGet(t, m, "/api/v1/context?space=chat:web:launch", m.AdminToken)
	first := body["chain"].([]any)[0].(map[string]any)["outputs"].([]any)[0].(map[string]any)
	if href := attr(t, ctx, "#chain-graph .node-artifact a", "href"); href != "/api/v1/artifacts/"+first["id"].(string) {
		t.Errorf("the first file links to %q", href)
	}
	if s := text(t, ctx, "#chain-facts"); !strings.Contains(s, "CompetitorX") || !strings.Contains(s, "pricing_valid") || !strings.Contains(s, "0.95") {
		t.Errorf("facts = %q", s)
	}
	if s := text(t, ctx, "#chain-entities"); !strings.Contains(s, "$99/month") {
		t.Errorf("entities = %q", s)
	}
	if s := text(t, ctx, "#chain-events"); !strings.Contains(s, "Auditor validated the comparison") {
		t.Errorf("events = %q", s)
	}
	contextShots(t, ctx, "dashboard-chain", "#chain-card")
}

// contextShots keeps PNGs of the page light and dark, at 1280×800 and
// 390×844, when SWITCHBOARD_SCREENSHOT_DIR names a directory. On the
// phone a room's context panel is a drawer: it is opened for the
// picture.
func contextShots(t *testing.T, ctx context.Context, name, scrollTo string) {
	t.Helper()
	dir := os.Getenv("SWITCHBOARD_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	scheme := func(s string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: s}}})
			return err
		})
	}
	for _, s := range []string{"light", "dark"} {
		for _, size := range []struct {
			suffix string
			w, h   int64
		}{{"", 1280, 800}, {"-390", 390, 844}} {
			steps := []chromedp.Action[chromedp.Void]{scheme(s), chromedp.EmulateViewport(size.w, size.h), chromedp.Sleep(300 * time.Millisecond)}
			if scrollTo != "" {
				// Below the sticky header.
				steps = append(steps, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.querySelector(`+jsString(scrollTo)+`).getBoundingClientRect().top + scrollY - 70)`))
			}
			if size.w < 1100 {
				steps = append(steps, chromedp.Evaluate[chromedp.Void](`(() => { const b = document.querySelector("#context-toggle"); if (b && !b.hidden && b.getAttribute("aria-pressed") !== "true") b.click(); })()`),
					chromedp.Sleep(300*time.Millisecond))
			}
			if err := chromedp.Do(ctx, steps...); err != nil {
				t.Fatalf("screenshot %s: %v", name, err)
			}
			png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatalf("screenshot %s: %v", name, err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+size.suffix+"-"+s+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := chromedp.Do(ctx, scheme("light"), chromedp.EmulateViewport(1280, 800), chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
}
