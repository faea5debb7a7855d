package delegation

import (
	"strings"
	"testing"
)

func TestCheckOutputs(t *testing.T) {
	schema := []byte(`{"type":"object","required":["competitors"],"properties":{"competitors":{"type":"array","items":{"type":"string"}}}}`)
	expected := []Expected{
		{Name: "competitors.json", MediaType: "application/json", Schema: schema},
		{Name: "notes.md", MediaType: "text/markdown"},
	}
	tests := []struct {
		name     string
		produced []Produced
		want     []string // substrings, one per problem
	}{
		{"all good", []Produced{
			{Name: "competitors.json", MediaType: "application/json; charset=utf-8", Content: []byte(`{"competitors":["a","b"]}`)},
			{Name: "notes.md", MediaType: "text/markdown", Content: []byte("# hi")},
		}, nil},
		{"missing", []Produced{{Name: "notes.md", MediaType: "text/markdown"}}, []string{"competitors.json: missing"}},
		{"schema", []Produced{
			{Name: "competitors.json", MediaType: "application/json", Content: []byte(`{"competitors":[1]}`)},
			{Name: "notes.md", MediaType: "text/markdown"},
		}, []string{"competitors.json: does not match its schema"}},
		{"not json", []Produced{
			{Name: "competitors.json", MediaType: "application/json", Content: []byte(`{`)},
			{Name: "notes.md", MediaType: "text/plain"},
		}, []string{"not valid JSON", "notes.md: media type text/plain"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckOutputs(expected, tc.produced)
			if len(got) != len(tc.want) {
				t.Fatalf("problems = %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to mention %q", i, got[i], w)
				}
			}
		})
	}
}

func TestCompileSchemaRefusesExternalRefs(t *testing.T) {
	if _, err := CompileSchema([]byte(`{"$ref":"file:///etc/passwd"}`)); err == nil {
		t.Error("a schema with an external $ref compiled")
	}
	if _, err := CompileSchema([]byte(`{"type":`)); err == nil {
		t.Error("a malformed schema compiled")
	}
}
