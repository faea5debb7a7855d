package delegation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Expected is an output a programmatic hand-off requires of its target.
type Expected struct {
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	// Schema, when set, is a JSON Schema the output's content must match.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// Produced is an output the target made.
type Produced struct {
	Name      string
	MediaType string
	Content   []byte
}

// CompileSchema checks that raw is a usable JSON Schema. External $refs
// are not loaded: a schema must be self-contained.
func CompileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource("switchboard:expected-output.json", doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	sch, err := c.Compile("switchboard:expected-output.json")
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return sch, nil
}

// CheckOutputs reports, one sentence each, every expected output that is
// missing, of the wrong media type, or fails its schema. No problems means
// the outputs are complete.
func CheckOutputs(expected []Expected, produced []Produced) []string {
	var problems []string
	for _, e := range expected {
		var got *Produced
		for i := range produced {
			if produced[i].Name == e.Name {
				got = &produced[i]
				break
			}
		}
		if got == nil {
			problems = append(problems, fmt.Sprintf("%s: missing (expected %s)", e.Name, e.MediaType))
			continue
		}
		if e.MediaType != "" && !sameMediaType(e.MediaType, got.MediaType) {
			problems = append(problems, fmt.Sprintf("%s: media type %s, expected %s", e.Name, got.MediaType, e.MediaType))
			continue
		}
		if len(e.Schema) == 0 {
			continue
		}
		sch, err := CompileSchema(e.Schema)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: the expected schema is unusable: %v", e.Name, err))
			continue
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(got.Content))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: not valid JSON: %v", e.Name, err))
			continue
		}
		if err := sch.Validate(inst); err != nil {
			problems = append(problems, fmt.Sprintf("%s: does not match its schema: %s", e.Name, oneLine(schemaError(err))))
		}
	}
	return problems
}

// schemaError keeps the useful part of the validator's message.
func schemaError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "\n"); i >= 0 {
		// The first line names the schema URL; the rest are the causes.
		return strings.TrimSpace(msg[i+1:])
	}
	return msg
}

// sameMediaType compares media types without parameters, ignoring case.
func sameMediaType(a, b string) bool {
	pa, _, errA := mime.ParseMediaType(a)
	pb, _, errB := mime.ParseMediaType(b)
	if errA != nil || errB != nil {
		return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
	}
	return pa == pb
}

// Corrective is the turn text that tells the target what to fix.
func Corrective(task string, problems []string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Your answer to the task %q is missing outputs or has invalid ones:\n", task)
	for _, p := range problems {
		fmt.Fprintf(&sb, "- %s\n", p)
	}
	sb.WriteString("Please answer again and produce every expected output.")
	return sb.String()
}
