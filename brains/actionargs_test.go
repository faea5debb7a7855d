package brains

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestActionArgs(t *testing.T) {
	spec := ActionSpec{Name: "remember", Schema: json.RawMessage(`{"type":"object","properties":{
		"text":{"type":"string"},"confidence":{"type":"number"},"step":{"type":"integer"},
		"urgent":{"type":"boolean"},"attributes":{"type":"object"},"tags":{"type":["array","null"]}}}`)}
	got, err := ActionArgs(spec, map[string]string{
		"text": "0.9 is a string here", "confidence": " 0.9 ", "step": "2", "urgent": "true",
		"attributes": `{"pricing": "$99/month"}`, "tags": `["a"]`, "extra": "kept as text",
	})
	want := `{"attributes":{"pricing":"$99/month"},"confidence":0.9,"extra":"kept as text","step":2,"tags":["a"],"text":"0.9 is a string here","urgent":true}`
	if err != nil || string(got) != want {
		t.Errorf("ActionArgs = %s, %v\nwant %s", got, err, want)
	}
	for arg, text := range map[string]string{"confidence": "very", "step": "1.5", "urgent": "yes please", "attributes": `["not", "an object"]`} {
		_, err := ActionArgs(spec, map[string]string{arg: text})
		if err == nil || !strings.HasPrefix(err.Error(), "remember: "+arg+": its text is not") || strings.Contains(err.Error(), text) {
			t.Errorf("%s = %q: err = %v; want one naming the argument, not the value", arg, text, err)
		}
	}
	if got, err := ActionArgs(ActionSpec{Name: "x"}, map[string]string{"a": "1"}); err != nil || string(got) != `{"a":"1"}` {
		t.Errorf("without a schema = %s, %v", got, err)
	}
}
