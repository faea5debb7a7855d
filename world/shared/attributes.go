package shared

import (
	"bytes"
	"encoding/json"
	"maps"

	"github.com/switchboard-chat/switchboard/world"
)

// An entity's attributes are kept in one written form on every store, so
// that the prompt, the API and a copy between stores show the same text
// whatever the store did to the JSON (PostgreSQL's jsonb adds spaces and
// reorders keys): compact, the keys of every object sorted,
// '<', '>' and '&' not escaped. Numbers are kept as written on SQLite;
// PostgreSQL's jsonb may write one in another form of the same value
// (1e2 as 100).

// CanonicalAttributes returns the JSON object raw in the stores' written
// form (compact, keys sorted), or an error if raw is not one JSON
// object (a *world.InvalidError of the field "attributes").
func CanonicalAttributes(raw json.RawMessage) (json.RawMessage, error) {
	obj, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	return encodeCanonical(obj)
}

// MergeAttributes merges the JSON object add into the JSON object old
// ("" or nil for none) key by key: each top-level key of add replaces
// the same key of old (even with null), the other keys of old are kept.
// The result is in the stores' written form; attributes that are not a
// JSON object are a *world.InvalidError of the field "attributes".
func MergeAttributes(old, add json.RawMessage) (json.RawMessage, error) {
	merged := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		o, err := decodeObject(old)
		if err != nil {
			return nil, err
		}
		merged = o
	}
	a, err := decodeObject(add)
	if err != nil {
		return nil, err
	}
	maps.Copy(merged, a)
	return encodeCanonical(merged)
}

// decodeObject reads one JSON object, its numbers as written. null, an
// array or a scalar is not one (json.Unmarshal takes null for an empty
// map), nor is anything after the object.
func decodeObject(raw json.RawMessage) (map[string]any, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, world.Invalid("attributes", "not a JSON object")
	}
	d := json.NewDecoder(bytes.NewReader(trimmed))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		return nil, world.Invalid("attributes", "not a JSON object: %v", err)
	}
	if d.InputOffset() != int64(len(trimmed)) {
		return nil, world.Invalid("attributes", "not one JSON object: something follows it")
	}
	return obj, nil
}

// encodeCanonical writes v compact with its keys sorted (what
// encoding/json does with maps), without escaping HTML.
func encodeCanonical(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// CheckMerged refuses merged attributes, as a store is about to keep
// them, beyond MaxAttributes bytes: each addition is bounded, and so is
// what they add up to, since an entity's attributes go into every
// prompt of its space. The error is a *world.InvalidError of "attributes".
func CheckMerged(merged json.RawMessage) error {
	if n := len(merged); n > MaxAttributes {
		return world.Invalid("attributes", "with what is known of the entity they come to %d bytes of JSON, more than %d; "+
			"replace keys rather than adding new ones", n, MaxAttributes)
	}
	return nil
}
