package download

import (
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/chat"
)

func TestHeaders(t *testing.T) {
	tests := []struct {
		mediaType, name   string
		wantType, wantDis string
	}{
		{"image/png", "chart.png", "image/png", `inline; filename=chart.png`},
		{"image/jpeg", "photo.jpg", "image/jpeg", `inline; filename=photo.jpg`},
		{"text/plain", "notes.txt", "text/plain; charset=utf-8", `inline; filename=notes.txt`},
		{"text/plain; charset=latin1", "old.txt", "text/plain; charset=latin1", `inline; filename=old.txt`},
		{"text/markdown", "checklist.md", "text/markdown; charset=utf-8", `inline; filename=checklist.md`},
		{"application/json", "competitors.json", "application/json", `inline; filename=competitors.json`},
		{"application/ld+json", "card.jsonld", "application/ld+json", `inline; filename=card.jsonld`},
		{"Application/JSON", "upper.json", "application/json", `inline; filename=upper.json`},
		// Anything that could run as a page, or that the browser does
		// not show, is saved.
		{"image/svg+xml", "logo.svg", "image/svg+xml", `attachment; filename=logo.svg`},
		{"text/html", "page.html", "text/html; charset=utf-8", `attachment; filename=page.html`},
		{"application/xhtml+xml", "page.xhtml", "application/xhtml+xml", `attachment; filename=page.xhtml`},
		{"application/javascript", "app.js", "application/javascript", `attachment; filename=app.js`},
		{"application/pdf", "report.pdf", "application/pdf", `attachment; filename=report.pdf`},
		{"application/octet-stream", "blob.bin", "application/octet-stream", `attachment; filename=blob.bin`},
		{"", "nothing", "application/octet-stream", `attachment; filename=nothing`},
		{"not a type", "odd", "application/octet-stream", `attachment; filename=odd`},
		{"text/html\r\nX-Evil: 1", "evil.html", "application/octet-stream", `attachment; filename=evil.html`},
		// Names are quoted or encoded, never break the header.
		{"text/plain", `say "hi".txt`, "text/plain; charset=utf-8", `inline; filename="say \"hi\".txt"`},
		{"text/plain", "café.txt", "text/plain; charset=utf-8", `inline; filename*=utf-8''caf%C3%A9.txt`},
	}
	for _, tc := range tests {
		t.Run(tc.mediaType+" "+tc.name, func(t *testing.T) {
			h := http.Header{}
			setHeaders(h, chat.Artifact{Name: tc.name, MediaType: tc.mediaType, SHA256: strings.Repeat("ab", 32)})
			if got := h.Get("Content-Type"); got != tc.wantType {
				t.Errorf("Content-Type = %q, want %q", got, tc.wantType)
			}
			if got := h.Get("Content-Disposition"); got != tc.wantDis {
				t.Errorf("Content-Disposition = %q, want %q", got, tc.wantDis)
			}
			if h.Get("X-Content-Type-Options") != "nosniff" || !strings.HasSuffix(h.Get("Content-Security-Policy"), "; sandbox") {
				t.Errorf("headers = %v", h)
			}
			if h.Get("ETag") != `"`+strings.Repeat("ab", 32)+`"` {
				t.Errorf("ETag = %q", h.Get("ETag"))
			}
		})
	}
}

// TestServe: the bytes, a HEAD, a range and a revalidation.
func TestServe(t *testing.T) {
	a := chat.Artifact{Name: "notes.txt", MediaType: "text/plain", Content: []byte("hello, world"),
		SHA256: "09ca7e4eaa6e8ae9c7d261167129184883644d07dfba7cbfbc4c8a2e08360d5b"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { Serve(w, r, a) }))
	defer srv.Close()
	get := func(method string, header ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, string(body)
	}
	if res, body := get("GET"); res.StatusCode != 200 || body != "hello, world" || res.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("GET = %d %q %v", res.StatusCode, body, res.Header)
	}
	if res, body := get("HEAD"); res.StatusCode != 200 || body != "" || res.ContentLength != 12 {
		t.Errorf("HEAD = %d %q, length %d", res.StatusCode, body, res.ContentLength)
	}
	if res, body := get("GET", "Range", "bytes=7-"); res.StatusCode != 206 || body != "world" {
		t.Errorf("range = %d %q", res.StatusCode, body)
	}
	if res, body := get("GET", "If-None-Match", `"`+a.SHA256+`"`); res.StatusCode != 304 || body != "" {
		t.Errorf("revalidation = %d %q", res.StatusCode, body)
	}
}

// FuzzHeaders: whatever an artifact's media type and name, the headers
// parse, carry nosniff and the sandbox, and save what is not inline.
func FuzzHeaders(f *testing.F) {
	for _, s := range [][2]string{{"text/plain", "a.txt"}, {"image/svg+xml", "x.svg"}, {"text/html; charset=\"", "é\"\\\x00.html"},
		{"application/x+json", "\r\n"}, {"", ""}, {"image/png;;", "a;b=c"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, mediaType, name string) {
		h := http.Header{}
		setHeaders(h, chat.Artifact{Name: name, MediaType: mediaType, SHA256: "not hex\""})
		for k, vs := range h {
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n\x00") || !utf8.ValidString(v) {
					t.Fatalf("%s: %q", k, v)
				}
			}
		}
		if _, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil {
			t.Fatalf("Content-Type %q: %v", h.Get("Content-Type"), err)
		}
		dis, params, err := mime.ParseMediaType(h.Get("Content-Disposition"))
		if err != nil {
			t.Fatalf("Content-Disposition %q: %v", h.Get("Content-Disposition"), err)
		}
		if want := map[bool]string{true: "inline", false: "attachment"}[Inline(mediaType)]; dis != want {
			t.Fatalf("disposition %q for %q, want %q", dis, mediaType, want)
		}
		if fn, ok := params["filename"]; ok && fn != name {
			t.Fatalf("filename %q, want %q", fn, name)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
			t.Fatalf("headers = %v", h)
		}
		if h.Get("ETag") != "" {
			t.Fatalf("ETag %q from a hash that is not hex", h.Get("ETag"))
		}
	})
}
