package shared

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/switchboard-chat/switchboard/world"
)

func TestCanonicalAttributes(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{`{}`, `{}`},
		{` { "b" : 1, "a": "x<&>" } `, `{"a":"x<&>","b":1}`},
		{`{"n": 1.50, "e": 1e2, "big": 12345678901234567890123}`, `{"big":12345678901234567890123,"e":1e2,"n":1.50}`},
		{`{"o": {"z": [1, {"y": null, "x": true}]}}`, `{"o":{"z":[1,{"x":true,"y":null}]}}`},
		{`{"a": 1, "a": 2}`, `{"a":2}`},
		{`{"s": "é\u00e9\n"}`, `{"s":"éé\n"}`},
		{`{"nul": "a\u0000b"}`, `{"nul":"a\u0000b"}`},
	} {
		got, err := CanonicalAttributes(json.RawMessage(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("CanonicalAttributes(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{``, ` `, `null`, `[]`, `"x"`, `1`, `{`, `{"a":}`, `{} {}`, `{}x`, `{"a":1}}`} {
		_, err := CanonicalAttributes(json.RawMessage(bad))
		var ie *world.InvalidError
		if !errors.As(err, &ie) || ie.Field != "attributes" || !errors.Is(err, world.ErrInvalid) {
			t.Errorf("CanonicalAttributes(%q) = %v; want an invalid attributes error", bad, err)
		}
	}
}

func TestMergeAttributes(t *testing.T) {
	for _, tc := range []struct {
		old, add, want string
	}{
		{``, `{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{`{"pricing":"$99","founded":2019}`, `{"pricing":"$89"}`, `{"founded":2019,"pricing":"$89"}`},
		{`{"pricing":"$99"}`, `{"employees":40}`, `{"employees":40,"pricing":"$99"}`},
		// A top-level key is replaced whole: no deep merge; null is a
		// value like any other.
		{`{"o":{"a":1,"b":2}}`, `{"o":{"c":3}}`, `{"o":{"c":3}}`},
		{`{"a":1,"b":2}`, `{"a":null}`, `{"a":null,"b":2}`},
		{`{"a": 1}`, `{}`, `{"a":1}`},
	} {
		got, err := MergeAttributes(json.RawMessage(tc.old), json.RawMessage(tc.add))
		if err != nil || string(got) != tc.want {
			t.Errorf("MergeAttributes(%s, %s) = %s, %v; want %s", tc.old, tc.add, got, err, tc.want)
		}
	}
	if _, err := MergeAttributes(json.RawMessage(`{"a":1}`), json.RawMessage(`[1]`)); !errors.Is(err, world.ErrInvalid) {
		t.Errorf("merging an array: %v, want ErrInvalid", err)
	}
}

// FuzzAttributes: no input makes the functions panic; what
// CanonicalAttributes accepts is a JSON object in its written form, which
// it leaves as it is, and merging it into nothing gives the same.
func FuzzAttributes(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"o":{"z":[1,null]},"s":"<&>"}`, `[1]`, `null`, `{"a":1e999}`, `{"\ud800":"\u0000"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := CanonicalAttributes(json.RawMessage(in))
		if err != nil {
			if !errors.Is(err, world.ErrInvalid) {
				t.Fatalf("CanonicalAttributes(%q) = %v, not ErrInvalid", in, err)
			}
			return
		}
		var obj map[string]json.RawMessage
		if !json.Valid(got) || json.Unmarshal(got, &obj) != nil || obj == nil {
			t.Fatalf("CanonicalAttributes(%q) = %s, not a JSON object", in, got)
		}
		again, err := CanonicalAttributes(got)
		if err != nil || string(again) != string(got) {
			t.Fatalf("CanonicalAttributes(%s) = %s, %v; want it unchanged", got, again, err)
		}
		merged, err := MergeAttributes(nil, json.RawMessage(in))
		if err != nil || string(merged) != string(got) {
			t.Fatalf("MergeAttributes(nil, %q) = %s, %v; want %s", in, merged, err, got)
		}
	})
}
