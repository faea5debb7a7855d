package cliclient

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"bryan": "bryan", "Bryan Lee": "Bryan-Lee", "DOMAIN\\ann": "DOMAIN-ann", "_svc": "svc",
		"": "", "ünï": "n", strings.Repeat("a", 70): strings.Repeat("a", 64),
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGroupID(t *testing.T) {
	if got := GroupID([]string{"mattyatlas", "finnshipley", "mattyatlas"}); got != "cli:finnshipley+mattyatlas" {
		t.Errorf("GroupID = %q", got)
	}
}

func TestDecodeFrame(t *testing.T) {
	f, err := decodeFrame([]byte(`{"type":"delegation","id":"dlg-1","from_bot":"matty","to_bot":"finn","task":"x","status":"running","depth":1}`))
	if err != nil || f.Delegation == nil || f.Delegation.ID != "dlg-1" || f.Delegation.To != "finn" || f.Delegation.Status != "running" {
		t.Errorf("delegation = %+v, %v", f, err)
	}
	f, err = decodeFrame([]byte(`{"type":"message","id":7,"chat":"c","from":{"kind":"bot","id":"finn","name":"Finn"},"text":"hi","reply_to":3,"delegation":{"id":"dlg-1","status":"done"}}`))
	if err != nil || f.ID != 7 || f.ReplyTo != 3 || f.From.Name != "Finn" || f.Delegation.Status != "done" || string(f.Raw) == "" {
		t.Errorf("message = %+v, %v", f, err)
	}
	if _, err := decodeFrame([]byte(`{"type":"message","id":"seven"}`)); err == nil {
		t.Error("a message with a string id decoded")
	}
}

// A delegation frame's progress decodes, and reads as the widget shows it.
func TestDecodeProgress(t *testing.T) {
	f, err := decodeFrame([]byte(`{"type":"delegation","id":"dlg-1","to_bot":"researcher","status":"running","progress":{"text":"Surveying CompetitorX","step":1,"total":3}}`))
	if err != nil || f.Delegation.Progress == nil || f.Delegation.Progress.Label() != "Step 1/3: Surveying CompetitorX" {
		t.Errorf("delegation = %+v, %v", f.Delegation, err)
	}
	for p, want := range map[Progress]string{
		{Text: "Writing", Step: 2}: "Step 2: Writing",
		{Text: "Reading"}:          "Reading",
		{Text: "x", Total: 3}:      "x",
	} {
		if got := p.Label(); got != want {
			t.Errorf("%+v: %q, want %q", p, got, want)
		}
	}
}

// FuzzDecodeFrame: any bytes from the server decode or fail, never
// panic; a decoded frame keeps its bytes.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{`{"type":"hello","bots":[{"id":"a","name":"A"}]}`, `{"type":"delegation","id":"x"}`, `[]`, `{"type":1}`, `{"type":"history","messages":[{"id":1}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := decodeFrame(data)
		if err == nil && string(fr.Raw) != string(data) {
			t.Fatalf("raw %q != %q", fr.Raw, data)
		}
	})
}

// FuzzSanitize: a sanitized name is a valid cli name or empty, and
// sanitizing it again changes nothing.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"bryan", "a b", "-x", "日本", "a:b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		s := Sanitize(name)
		if Sanitize(s) != s || len(s) > 64 || !utf8.ValidString(s) || strings.ContainsAny(s, ": \n") {
			t.Fatalf("Sanitize(%q) = %q", name, s)
		}
	})
}
