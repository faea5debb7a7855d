package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestBrowserArtifacts: the files of a script rule's reply appear under
// it as attachments — the Markdown rendered with its HTML left as text,
// the JSON pretty-printed, the SVG previewed without running its script
// — and the download link saves the right bytes under the file's name;
// the link is the asker's alone: another visitor's request gets 404.
func TestBrowserArtifacts(t *testing.T) {
	m := startMain(t, artifactConfigDir(t))
	ctx := browser(t)
	shots := os.Getenv("SWITCHBOARD_ARTIFACT_SCREENSHOTS") // a directory to keep screenshots in

	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+m.Addr()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`button.bot[data-bot="mattyatlas"]`)),
		chromedp.Click(chromedp.CSS(`button.bot[data-bot="mattyatlas"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#composer`)),
		chromedp.SendKeys(chromedp.CSS(`#composer`), "Can I have the launch checklist?"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.CSS(`#messages .msg-bot .att-md h1`)),
		chromedp.WaitVisible(chromedp.CSS(`#messages .msg-bot .att-json .j-key`)),
	)
	if err != nil {
		t.Fatalf("asking for the checklist: %v", err)
	}
	names, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#messages .msg-bot .att .att-name")].map((n) => n.textContent)`))
	if err != nil || strings.Join(names, ",") != "launch-checklist.md,owners.json,plan.svg" {
		t.Fatalf("attachments = %q, %v", names, err)
	}
	meta, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.att[data-artifact-id] .att-meta`)))
	if err != nil || meta != "Markdown · 245 B" {
		t.Errorf("checklist's line = %q, %v", meta, err)
	}

	// What the previews show, and that nothing a bot wrote ran.
	var page struct {
		Heading, Quote, JSON string
		Tasks, Done, Imgs    int
		Pwned                bool
		SVGWidth             int
	}
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector(".att-image img").complete`))
	if err == nil {
		page, err = chromedp.Run(ctx, chromedp.Evaluate[struct {
			Heading, Quote, JSON string
			Tasks, Done, Imgs    int
			Pwned                bool
			SVGWidth             int
		}](`(() => {
			const md = document.querySelector(".att-md");
			return {
				heading: md.querySelector("h1").textContent,
				quote: md.querySelector("blockquote").textContent,
				json: document.querySelector(".att-json").textContent,
				tasks: md.querySelectorAll("li.md-task").length,
				done: md.querySelectorAll(".md-check.done").length,
				imgs: md.querySelectorAll("img, script").length,
				pwned: window.pwned !== undefined,
				svgWidth: document.querySelector(".att-image img").naturalWidth,
			};
		})()`))
	}
	if err != nil {
		t.Fatalf("reading the previews: %v", err)
	}
	if page.Heading != "Launch checklist" || page.Tasks != 3 || page.Done != 1 {
		t.Errorf("markdown: heading %q, %d tasks, %d done", page.Heading, page.Tasks, page.Done)
	}
	if page.Imgs != 0 || !strings.Contains(page.Quote, `<img src=x onerror="window.pwned=1">`) || page.Pwned {
		t.Errorf("raw HTML in the markdown: %d elements made, quote %q, script ran %v", page.Imgs, page.Quote, page.Pwned)
	}
	if !strings.Contains(page.JSON, "{\n  \"plan\": \"Matty Atlas\",\n  \"build\": \"Finn Shipley\",\n  \"review\": [\n    \"Priest\",\n    null\n  ]") {
		t.Errorf("json preview = %q", page.JSON)
	}
	if page.SVGWidth != 240 {
		t.Errorf("svg preview width = %d, want 240", page.SVGWidth)
	}

	// The renderer makes elements only of Markdown, never of HTML, and
	// links only to the web and mail.
	for in, want := range map[string]string{
		`<script>window.pwned=1</script>`:            `<p class="md-p">&lt;script&gt;window.pwned=1&lt;/script&gt;</p>`,
		`[click](javascript:window.pwned=1)`:         `<p class="md-p">[click](javascript:window.pwned=1)</p>`,
		`[docs](https://example.com/a?b=1)`:          `<p class="md-p"><a class="md-link" href="https://example.com/a?b=1" target="_blank" rel="noopener noreferrer nofollow">docs</a></p>`,
		`![x](https://example.com/x.png)`:            `<p class="md-p">!<a class="md-link" href="https://example.com/x.png" target="_blank" rel="noopener noreferrer nofollow">x</a></p>`,
		"**bold _em_** and `<i>code</i>`":            `<p class="md-p"><strong>bold <em>em</em></strong> and <code class="md-inline-code">&lt;i&gt;code&lt;/i&gt;</code></p>`,
		"| a | b |\n|---|--:|\n| <b>1</b> | 2 |":     `<div class="md-table-wrap"><table class="md-table"><thead><tr><th>a</th><th style="text-align: right;">b</th></tr></thead><tbody><tr><td>&lt;b&gt;1&lt;/b&gt;</td><td style="text-align: right;">2</td></tr></tbody></table></div>`,
		"```html\n<img src=x onerror=alert(1)>\n```": `<pre class="md-code"><code>&lt;img src=x onerror=alert(1)&gt;</code></pre>`,
	} {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.SwitchboardAttachments.markdown(`+jsString(in)+`).innerHTML`))
		if err != nil || got != want {
			t.Errorf("markdown %q:\n got %s, %v\nwant %s", in, got, err, want)
		}
	}

	// Random Markdown-and-HTML soup never makes an element or attribute
	// outside the renderer's own, nor a link off the web and mail.
	violation, err := chromedp.Run(ctx, chromedp.Evaluate[string](rendererFuzz))
	if err != nil || violation != "" {
		t.Errorf("renderer: %s, %v", violation, err)
	}

	// The image opens larger; Escape closes the viewer, not the chat.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`.att-image`)),
		chromedp.WaitVisible(chromedp.CSS(`.att-viewer img`)),
	)
	if err != nil {
		t.Fatalf("image viewer: %v", err)
	}
	if shots != "" {
		fullScreenshot(t, ctx, filepath.Join(shots, "viewer.png"))
	}
	err = chromedp.Do(ctx,
		chromedp.KeyEvent("\x1b"),
		chromedp.WaitNotPresent(chromedp.CSS(`.att-viewer`)),
		chromedp.WaitVisible(chromedp.CSS(`#composer`)),
	)
	if err != nil {
		t.Fatalf("closing the viewer: %v", err)
	}

	// The link's bytes, fetched as the page would.
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".att-download").href`))
	if err != nil || !strings.Contains(href, "/artifacts/art-") || !strings.Contains(href, "token=") {
		t.Fatalf("download link = %q, %v", href, err)
	}
	ints, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`fetch(document.querySelector(".att-download").href)
		.then((r) => r.arrayBuffer()).then((b) => Array.from(new Uint8Array(b)))`, chromedp.EvalAwaitPromise))
	got := make([]byte, len(ints))
	for i, b := range ints {
		got[i] = byte(b)
	}
	if err != nil || string(got) != checklist {
		t.Errorf("fetched bytes = %q, %v; want the checklist", got, err)
	}

	// A click saves the file, under its name, with the same bytes.
	dir := t.TempDir()
	begin := chromedp.Events(ctx, cdpbrowser.DownloadWillBegin)
	progress := chromedp.Events(ctx, cdpbrowser.DownloadProgress)
	err = chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
				Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: new(true),
			})
			return err
		}),
		chromedp.Click(chromedp.CSS(`.att-download`)),
	)
	if err != nil {
		t.Fatalf("clicking the download link: %v", err)
	}
	for ev, err := range begin {
		if err != nil || ev.SuggestedFilename != "launch-checklist.md" {
			t.Errorf("download named %q, %v", ev.SuggestedFilename, err)
		}
		break
	}
	for ev, err := range progress {
		if err != nil {
			t.Fatal(err)
		}
		if ev.State == cdpbrowser.DownloadProgressStateCanceled {
			t.Fatal("download canceled")
		}
		if ev.State != cdpbrowser.DownloadProgressStateCompleted {
			continue
		}
		if saved, err := os.ReadFile(filepath.Join(dir, ev.GUID)); err != nil || string(saved) != checklist {
			t.Errorf("saved file = %q, %v", saved, err)
		}
		break
	}

	// Another visitor, with their own valid token, gets 404.
	bob := dial(t, m.Addr(), nil)
	u, err := url.Parse(href)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("token", bob.hello["token"].(string))
	u.RawQuery = q.Encode()
	res, err := http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("another visitor's request = %d, want 404", res.StatusCode)
	}

	// After a reload the attachments come back from history.
	err = chromedp.Do(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`button.bot[data-bot="mattyatlas"]`)),
		chromedp.Click(chromedp.CSS(`button.bot[data-bot="mattyatlas"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#messages .msg-bot .att-md h1`)),
	)
	if err != nil {
		t.Fatalf("attachments after a reload: %v", err)
	}

	if shots != "" {
		fullScreenshot(t, ctx, filepath.Join(shots, "desktop.png"))
		err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](
			`[...document.querySelectorAll("#messages .msg-bot")].pop().scrollIntoView({block: "start"})`))
		if err != nil {
			t.Fatal(err)
		}
		fullScreenshot(t, ctx, filepath.Join(shots, "desktop-top.png"))
		err = chromedp.Do(ctx,
			chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
			chromedp.Sleep(300*time.Millisecond),
			chromedp.Evaluate[chromedp.Void](`document.querySelector("#messages").scrollTop = 1e6`),
		)
		if err != nil {
			t.Fatal(err)
		}
		fullScreenshot(t, ctx, filepath.Join(shots, "mobile.png"))
		err = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
			return err
		}))
		if err != nil {
			t.Fatal(err)
		}
		fullScreenshot(t, ctx, filepath.Join(shots, "mobile-dark.png"))
	}
}

// fullScreenshot saves the whole page as a PNG at path.
func fullScreenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// rendererFuzz renders 3,000 random inputs built of Markdown and HTML
// pieces with the page's Markdown and JSON renderers and returns the
// first element, attribute or link they should never make ("" when
// none), with the input that made it.
const rendererFuzz = `(() => {
	const pieces = ["<", ">", "script", "img", " src=x", " onerror=", "\"", "'", "[", "]", "(", ")", "javascript:", "http://a.b/",
		"mailto:x@y", "data:text/html,", "*", "**", "_", "__", "~~", "` + "`" + `", "` + "```" + `", "#", "> ", "- ", "1. ", "[ ] ", "[x] ",
		"|", "---", "\n", "\n\n", " ", "a", "é", "<b>", "</b>", "&amp;", "{", "}", ":", ",", "\\", "!", "<svg onload=x>"];
	const tags = new Set(["DIV", "P", "BR", "H1", "H2", "H3", "H4", "H5", "H6", "HR", "UL", "OL", "LI", "SPAN", "BLOCKQUOTE",
		"PRE", "CODE", "STRONG", "EM", "DEL", "A", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD"]);
	const attrs = new Set(["class", "href", "target", "rel", "style", "start", "role", "aria-label"]);
	let seed = 1;
	const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
	const S = window.SwitchboardAttachments;
	for (let i = 0; i < 3000; i++) {
		let input = "";
		for (let j = rand(40); j >= 0; j--) input += pieces[rand(pieces.length)];
		for (const root of [S.markdown(input), S.json(input)]) {
			for (const e of root.querySelectorAll("*")) {
				if (!tags.has(e.tagName)) return "element " + e.tagName + " from " + JSON.stringify(input);
				for (const a of e.attributes) {
					if (!attrs.has(a.name)) return "attribute " + a.name + " from " + JSON.stringify(input);
				}
				if (e.tagName === "A" && !/^(https?|mailto):/.test(e.getAttribute("href"))) return "link " + e.getAttribute("href") + " from " + JSON.stringify(input);
				if (e.hasAttribute("style") && !/^text-align: (left|right|center);$/.test(e.getAttribute("style"))) return "style " + e.getAttribute("style");
			}
		}
	}
	return "";
})()`
