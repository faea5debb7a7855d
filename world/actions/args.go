package actions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// ArgumentError is a call whose arguments do not fit its action's
// schema. Its text names the action, the argument and the rule broken,
// never the value given (it may be a person's words).
type ArgumentError struct {
	Action string
	// Arg is the argument at fault, a path for one inside another
	// ("expected_outputs[1].name"); "" when the arguments as a whole
	// are (not a JSON object).
	Arg string
	// Problem says what is wrong: "missing; it is required", "must be
	// one of low, medium, high, critical".
	Problem string
}

// Error returns "ACTION: ARG: PROBLEM".
func (e *ArgumentError) Error() string {
	if e.Arg == "" {
		return e.Action + ": " + e.Problem
	}
	return e.Action + ": " + e.Arg + ": " + e.Problem
}

// check checks a call's arguments against the action's schema and
// returns them as the handler gets them: an object ({} for none).
func (e *entry) check(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, &ArgumentError{Action: e.Name, Problem: "the arguments are not JSON: " + syntaxProblem(err)}
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, &ArgumentError{Action: e.Name, Problem: "the arguments must be a JSON object"}
	}
	if err := e.resolved.Validate(v); err != nil {
		if arg, problem := explain(e.Schema, v, ""); problem != "" {
			return nil, &ArgumentError{Action: e.Name, Arg: arg, Problem: problem}
		}
		return nil, &ArgumentError{Action: e.Name, Problem: "the arguments do not fit the action's schema: " + firstLine(err.Error(), 200)}
	}
	return raw, nil
}

// syntaxProblem is a JSON syntax error without the text around it.
func syntaxProblem(err error) string {
	var se *json.SyntaxError
	if ok := asSyntax(err, &se); ok {
		return fmt.Sprintf("invalid at byte %d", se.Offset)
	}
	return "invalid JSON"
}

func asSyntax(err error, se **json.SyntaxError) bool {
	s, ok := err.(*json.SyntaxError)
	if ok {
		*se = s
	}
	return ok
}

// explain finds where v breaks s, as the argument's path under at and
// what rule it breaks; problem is "" when it finds nothing (a rule this
// does not model).
func explain(s *jsonschema.Schema, v any, at string) (arg, problem string) {
	if s == nil {
		return "", ""
	}
	if !typeFits(s, v) || len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return sameValue(e, v) }) {
		return at, describe(s)
	}
	switch x := v.(type) {
	case string:
		n := utf8.RuneCountInString(x)
		if s.MinLength != nil && n < *s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
			return at, describe(s)
		}
	case float64:
		if s.Minimum != nil && x < *s.Minimum || s.Maximum != nil && x > *s.Maximum {
			return at, describe(s)
		}
	case map[string]any:
		for _, name := range sortedKeys(x) {
			if _, known := s.Properties[name]; !known && closed(s) {
				return join(at, name), "unknown argument; " + takes(s, at)
			}
		}
		for _, name := range s.Required {
			if _, ok := x[name]; !ok {
				return join(at, name), "missing; it is required"
			}
		}
		for _, name := range propertyOrder(s) {
			if val, ok := x[name]; ok {
				if a, p := explain(s.Properties[name], val, join(at, name)); p != "" {
					return a, p
				}
			}
		}
	case []any:
		if s.MinItems != nil && len(x) < *s.MinItems || s.MaxItems != nil && len(x) > *s.MaxItems {
			return at, describe(s)
		}
		for i, item := range x {
			if a, p := explain(s.Items, item, at+"["+strconv.Itoa(i)+"]"); p != "" {
				return a, p
			}
		}
	}
	return "", ""
}

// describe says what a value of s must be: "must be one of low, medium,
// high", "must be a non-empty string of at most 4000 characters".
func describe(s *jsonschema.Schema) string {
	if len(s.Enum) > 0 {
		var vals []string
		for _, e := range s.Enum {
			vals = append(vals, fmt.Sprint(e))
		}
		return "must be one of " + strings.Join(vals, ", ")
	}
	var what string
	switch s.Type {
	case "string":
		what = "a string"
		if s.MinLength != nil && *s.MinLength > 0 {
			what = "a non-empty string"
		}
		if s.MaxLength != nil {
			what += fmt.Sprintf(" of at most %d characters", *s.MaxLength)
		}
	case "number":
		what = "a number" + numberRange(s)
	case "integer":
		what = "a whole number" + numberRange(s)
	case "boolean":
		what = "true or false"
	case "object":
		what = "a JSON object"
	case "array":
		what = "a list"
		if s.MaxItems != nil {
			what += fmt.Sprintf(" of at most %d items", *s.MaxItems)
		}
	default:
		return "does not fit its schema"
	}
	return "must be " + what
}

// numberRange is " from 0 to 1", " of at least 1" or "".
func numberRange(s *jsonschema.Schema) string {
	switch {
	case s.Minimum != nil && s.Maximum != nil:
		return fmt.Sprintf(" from %g to %g", *s.Minimum, *s.Maximum)
	case s.Minimum != nil:
		return fmt.Sprintf(" of at least %g", *s.Minimum)
	case s.Maximum != nil:
		return fmt.Sprintf(" of at most %g", *s.Maximum)
	}
	return ""
}

// typeFits reports whether v is of s's type (any type when s names none).
func typeFits(s *jsonschema.Schema, v any) bool {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) == 0 {
		return true
	}
	got := jsonType(v)
	return slices.Contains(types, got) || got == "integer" && slices.Contains(types, "number")
}

// jsonType is the JSON type of a value decoded into any.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// sameValue compares an enum's value with a decoded one.
func sameValue(e, v any) bool {
	if n, ok := e.(int); ok {
		e = float64(n)
	}
	return reflect.DeepEqual(e, v)
}

// closed reports whether s allows no properties but its own
// (additionalProperties: false).
func closed(s *jsonschema.Schema) bool {
	ap := s.AdditionalProperties
	return ap != nil && ap.Not != nil && reflect.DeepEqual(*ap.Not, jsonschema.Schema{})
}

// takes lists an object schema's arguments: "the arguments are text,
// severity".
func takes(s *jsonschema.Schema, at string) string {
	names := propertyOrder(s)
	if len(names) == 0 {
		return "it takes none"
	}
	if at == "" {
		return "the arguments are " + strings.Join(names, ", ")
	}
	return "its keys are " + strings.Join(names, ", ")
}

// propertyOrder lists s's properties: in PropertyOrder, then the rest
// sorted.
func propertyOrder(s *jsonschema.Schema) []string {
	out := slices.Clone(s.PropertyOrder)
	var rest []string
	for name := range s.Properties {
		if !slices.Contains(out, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// join appends a key to an argument path.
func join(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}

// firstLine is s's first line, at most n bytes.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// quoteName quotes a name a caller gave, if it looks like one; anything
// else may be a model's words and is not repeated.
func quoteName(s string) string {
	if namePattern.MatchString(s) || s != "" && len(s) <= 64 && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}) < 0 {
		return strconv.Quote(s)
	}
	return "(a name that is not an action name)"
}

// joinNames lists names for a message: "delegate, post_finding".
func joinNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
