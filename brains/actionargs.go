package brains

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ActionArgs makes the JSON arguments of a call of spec's action from
// text values, such as a script rule's templated arguments (SPEC
// §10.1): each value becomes the type its property's schema names — a
// number ("0.9"), a whole number, true or false, a JSON object or list
// (written as JSON) — and stays a string otherwise, or when spec does not
// name it (the action then refuses it by name). A value that does not
// convert is an error naming the argument, never the value. The result
// lists the arguments by name.
func ActionArgs(spec ActionSpec, text map[string]string) (json.RawMessage, error) {
	var schema struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	if len(spec.Schema) > 0 {
		if err := json.Unmarshal(spec.Schema, &schema); err != nil {
			return nil, fmt.Errorf("%s: the action's schema: %v", spec.Name, err)
		}
	}
	out := make(map[string]any, len(text))
	for name, v := range text {
		types := schemaTypes(schema.Properties[name].Type)
		val, err := convert(v, types)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", spec.Name, name, err)
		}
		out[name] = val
	}
	return json.Marshal(out)
}

// schemaTypes reads a schema's "type": a name or a list of names.
func schemaTypes(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	json.Unmarshal(raw, &many)
	return many
}

// convert makes text the first of types it can be; a string when types
// allow one or name none.
func convert(text string, types []string) (any, error) {
	if len(types) == 0 || slices.Contains(types, "string") {
		return text, nil
	}
	t := strings.TrimSpace(text)
	var problems []string
	for _, typ := range types {
		switch typ {
		case "number":
			if f, err := strconv.ParseFloat(t, 64); err == nil {
				return f, nil
			}
			problems = append(problems, "a number")
		case "integer":
			if n, err := strconv.ParseInt(t, 10, 64); err == nil {
				return n, nil
			}
			problems = append(problems, "a whole number")
		case "boolean":
			if b, err := strconv.ParseBool(t); err == nil {
				return b, nil
			}
			problems = append(problems, "true or false")
		case "object", "array":
			var v any
			if err := json.Unmarshal([]byte(t), &v); err == nil {
				_, isObject := v.(map[string]any)
				_, isList := v.([]any)
				if typ == "object" && isObject || typ == "array" && isList {
					return v, nil
				}
			}
			problems = append(problems, map[string]string{"object": "a JSON object", "array": "a JSON list"}[typ])
		case "null":
			if t == "" || t == "null" {
				return nil, nil
			}
			problems = append(problems, "null")
		}
	}
	return nil, fmt.Errorf("its text is not %s", strings.Join(problems, " or "))
}
