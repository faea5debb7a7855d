package web

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
)

// TestArtifactsOnTheWire: a message frame names the files it shows, as
// SPEC §7 spells them, without their content; a message with none has
// no artifacts field.
func TestArtifactsOnTheWire(t *testing.T) {
	m := chat.Message{ID: 9, ChatID: "web-ann:matty", Bot: "matty", From: chat.Party{Kind: "bot", ID: "matty", Name: "Matty"},
		Text: "here", Time: testTime, Artifacts: []chat.Artifact{
			{ID: "art-1", Name: "checklist.md", MediaType: "text/markdown", Size: 120, SHA256: "ab", Producer: "matty", Content: []byte("secret")},
			{ID: "art-2", Name: "chart.png", MediaType: "image/png", Size: 4096},
		}}
	var b strings.Builder
	if err := json.NewEncoder(&b).Encode(frameOf(gateway.Shown{Message: m})); err != nil {
		t.Fatal(err)
	}
	want := `{"type":"message","id":9,"chat":"web-ann:matty","bot":"matty","from":{"kind":"bot","id":"matty","name":"Matty"},` +
		`"text":"here","time":"2026-01-02T03:04:05Z","artifacts":[` +
		`{"id":"art-1","name":"checklist.md","media_type":"text/markdown","size":120},` +
		`{"id":"art-2","name":"chart.png","media_type":"image/png","size":4096}]}` + "\n"
	if b.String() != want {
		t.Errorf("got  %s\nwant %s", b.String(), want)
	}
	m.Artifacts = nil
	if data, _ := json.Marshal(frameOf(gateway.Shown{Message: m})); strings.Contains(string(data), "artifacts") {
		t.Errorf("a message without artifacts: %s", data)
	}
}
