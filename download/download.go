// Package download serves an artifact's content over HTTP (SPEC §8) so
// that a browser shows only what is safe to show and saves the rest. The
// admin API and the widget both answer with it, on the gateway's own
// origin, where the dashboard's cookie and the widget's page live: a
// file a bot made must never run there as a page.
//
// Every answer carries the artifact's media type with
// X-Content-Type-Options: nosniff (a browser never guesses another), a
// Content-Security-Policy that sandboxes whatever the browser renders
// (no script, no same-origin access, no fetches), and
// Content-Disposition: attachment for everything but raster images,
// plain text, Markdown and JSON. SVG, which can hold script, is saved,
// not shown, when opened directly; an <img> still shows it, as images
// never run script there. Answers are private and revalidated on every
// use (an ETag of the content's SHA-256), so a cached copy is never
// served to someone the gateway would refuse now.
package download

import (
	"bytes"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
)

// policy is the Content-Security-Policy of every answer: a rendered
// artifact loads nothing, runs nothing and is of no origin.
const policy = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox"

// fallback is the media type of content whose own cannot be used.
const fallback = "application/octet-stream"

// inlineTypes are the media types a browser may show rather than save.
var inlineTypes = map[string]bool{
	"image/png":        true,
	"image/jpeg":       true,
	"image/gif":        true,
	"image/webp":       true,
	"image/avif":       true,
	"text/plain":       true,
	"text/markdown":    true,
	"text/x-markdown":  true,
	"application/json": true,
}

// Inline reports whether content of mediaType is shown in the browser
// rather than saved: raster images, plain text, Markdown and JSON
// (application/json and any application/…+json). Parameters are
// ignored; a media type that does not parse is saved.
func Inline(mediaType string) bool {
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return false
	}
	return inlineTypes[mt] || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// Serve answers r with a's content and the headers of the package
// comment. It honours Range and If-None-Match, and HEAD.
func Serve(w http.ResponseWriter, r *http.Request, a chat.Artifact) {
	setHeaders(w.Header(), a)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.Content))
}

// setHeaders sets the headers of an answer with a's content.
func setHeaders(h http.Header, a chat.Artifact) {
	h.Set("Content-Type", contentType(a.MediaType))
	disposition := "attachment"
	if Inline(a.MediaType) {
		disposition = "inline"
	}
	if v := mime.FormatMediaType(disposition, map[string]string{"filename": a.Name}); v != "" {
		disposition = v
	}
	h.Set("Content-Disposition", disposition)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", policy)
	// Only pages of the gateway's own origin may embed it (an <img> on
	// another site given a leaked link may not), and a link followed
	// from a rendered artifact tells nobody where it came from.
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "private, no-cache")
	if a.SHA256 != "" && isHex(a.SHA256) {
		h.Set("ETag", `"`+a.SHA256+`"`)
	}
}

// contentType is the Content-Type of content labelled mediaType: the
// type as it parses, text in UTF-8 unless it says otherwise, and
// application/octet-stream when it does not parse.
func contentType(mediaType string) string {
	mt, params, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return fallback
	}
	if strings.HasPrefix(mt, "text/") && params["charset"] == "" {
		params["charset"] = "utf-8"
	}
	if v := mime.FormatMediaType(mt, params); v != "" {
		return v
	}
	return fallback
}

// isHex reports whether s is lowercase hex, safe inside an ETag.
func isHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
