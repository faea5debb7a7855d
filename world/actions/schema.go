package actions

import "github.com/google/jsonschema-go/jsonschema"

// Helpers that write the schemas of actions briefly; their packages use
// them too.

// Object is an object schema of the properties, in the order given (as
// name, schema pairs), that allows no others; required lists the ones a
// call must give.
func Object(required []string, props ...Property) *jsonschema.Schema {
	s := &jsonschema.Schema{
		Type: "object", Properties: map[string]*jsonschema.Schema{}, Required: required,
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
	for _, p := range props {
		s.Properties[p.Name] = p.Schema
		s.PropertyOrder = append(s.PropertyOrder, p.Name)
	}
	return s
}

// Property is one property of an Object.
type Property struct {
	Name   string
	Schema *jsonschema.Schema
}

// Text is a string property of at least one and at most maxLen
// characters (no maximum when maxLen is 0).
func Text(name, description string, maxLen int) Property {
	s := &jsonschema.Schema{Type: "string", Description: description, MinLength: jsonschema.Ptr(1)}
	if maxLen > 0 {
		s.MaxLength = jsonschema.Ptr(maxLen)
	}
	return Property{name, s}
}

// OneOf is a string property that takes one of values; def, when not
// empty, is the default a call may leave it at.
func OneOf(name, description, def string, values ...string) Property {
	s := &jsonschema.Schema{Type: "string", Description: description}
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	if def != "" {
		s.Default = []byte(`"` + def + `"`)
	}
	return Property{name, s}
}

// Number is a number property from lo to hi (both allowed).
func Number(name, description string, lo, hi float64) Property {
	return Property{name, &jsonschema.Schema{Type: "number", Description: description, Minimum: jsonschema.Ptr(lo), Maximum: jsonschema.Ptr(hi)}}
}
