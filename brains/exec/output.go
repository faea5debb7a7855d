package exec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// output is a run's answer.
type output struct {
	text string
	// sessionID is the CLI's own session handle, when it printed one.
	sessionID string
}

// Errors of parseOutput.
var (
	errEmptyOutput  = errors.New("the program printed nothing")
	errBinaryOutput = errors.New("the program's output is not UTF-8 text")
	errNoResult     = errors.New(`the program's JSON output has no "result" string`)
)

// envelope is the JSON a CLI prints with --output-format json: claude's
// is {"type":"result","subtype":"success","is_error":false,
// "result":"…","session_id":"…",…}.
type envelope struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	IsError   bool            `json:"is_error"`
	Result    json.RawMessage `json:"result"`
	SessionID string          `json:"session_id"`
}

// parseOutput reads a program's stdout. Output that starts with '{' or
// '[' and is a sequence of JSON values (one object, an array of events,
// or JSON lines) is searched from the end for an object with a "result"
// string; an envelope with "is_error" true is an error carrying its
// result. JSON that looks like no CLI envelope (no "result", "type" or
// "session_id" anywhere) is taken as a plain-text answer that happens to
// be JSON. Anything else is plain text, trimmed.
func parseOutput(stdout []byte) (output, error) {
	trimmed := bytes.TrimSpace(stdout)
	if len(trimmed) == 0 {
		return output{}, errEmptyOutput
	}
	if !utf8.Valid(trimmed) {
		return output{}, errBinaryOutput
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		if values, ok := decodeAll(trimmed); ok {
			if out, found, err := fromEnvelopes(values); found || err != nil {
				return out, err
			}
			if looksLikeEnvelope(values) {
				return output{}, errNoResult
			}
		}
	}
	return output{text: string(trimmed)}, nil
}

// decodeAll decodes every JSON value in b; ok is false unless all of b
// is JSON.
func decodeAll(b []byte) ([]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var values []json.RawMessage
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if err == io.EOF {
			return values, len(values) > 0
		}
		if err != nil {
			return nil, false
		}
		values = append(values, v)
	}
}

// fromEnvelopes finds the last envelope with a result among values and
// the elements of array values.
func fromEnvelopes(values []json.RawMessage) (output, bool, error) {
	for i := len(values) - 1; i >= 0; i-- {
		v := bytes.TrimSpace(values[i])
		if len(v) > 0 && v[0] == '[' {
			var elems []json.RawMessage
			if json.Unmarshal(v, &elems) == nil {
				if out, found, err := fromEnvelopes(elems); found || err != nil {
					return out, found, err
				}
			}
			continue
		}
		var e envelope
		if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &e) != nil {
			continue
		}
		if e.IsError {
			return output{}, true, fmt.Errorf("the program reported an error (%s): %s", orDash(e.Subtype), resultText(e.Result))
		}
		if e.Result == nil {
			continue
		}
		var text string
		if err := json.Unmarshal(e.Result, &text); err != nil {
			return output{}, true, errNoResult
		}
		if strings.TrimSpace(text) == "" {
			return output{}, true, errEmptyOutput
		}
		return output{text: strings.TrimSpace(text), sessionID: e.SessionID}, true, nil
	}
	return output{}, false, nil
}

// looksLikeEnvelope reports whether any object among values (or in an
// array) has a field a CLI envelope would.
func looksLikeEnvelope(values []json.RawMessage) bool {
	for _, v := range values {
		v = bytes.TrimSpace(v)
		if len(v) > 0 && v[0] == '[' {
			var elems []json.RawMessage
			if json.Unmarshal(v, &elems) == nil && looksLikeEnvelope(elems) {
				return true
			}
			continue
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(v, &fields) != nil {
			continue
		}
		for _, k := range []string{"result", "type", "session_id", "is_error"} {
			if _, ok := fields[k]; ok {
				return true
			}
		}
	}
	return false
}

// resultText is an error envelope's result for a message, short.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil || s == "" {
		return "no details"
	}
	return tail([]byte(s), 512)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
