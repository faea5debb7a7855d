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
	// errBadSessionID is the cause when the program printed a session_id
	// that checkSessionID refuses.
	errBadSessionID = errors.New("the program's session_id is refused")
)

// MaxSessionID is the longest session_id accepted from a program.
const MaxSessionID = 128

// checkSessionID accepts a CLI's session handle only if it matches
// ^[A-Za-z0-9._:-]{1,128}$ and does not start with '-': it is put on the
// next turn's command line, where anything else could be read as a flag
// or split into several arguments by a wrapper script. The reason it
// gives never quotes the ID, which is the program's output.
func checkSessionID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: it is empty", errBadSessionID)
	case len(id) > MaxSessionID:
		return fmt.Errorf("%w: it is %d bytes long, over %d", errBadSessionID, len(id), MaxSessionID)
	case id[0] == '-':
		return fmt.Errorf("%w: it starts with '-' and would read as a flag", errBadSessionID)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return fmt.Errorf("%w: byte %d is outside A-Z a-z 0-9 . _ : -", errBadSessionID, i)
		}
	}
	return nil
}

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
// be JSON. Anything else is plain text, trimmed. A session_id that
// checkSessionID refuses fails the whole output, so it never reaches a
// command line and the stored one is kept.
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
			// The result, the program's own explanation, may quote the
			// conversation: it stays in the output, which the caller logs
			// at debug level only.
			return output{}, true, fmt.Errorf("the program reported an error (%s)", orDash(e.Subtype))
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
		if e.SessionID != "" {
			if err := checkSessionID(e.SessionID); err != nil {
				return output{}, true, err
			}
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

// orDash is s when it is a short word (an error subtype such as
// error_max_turns), else "-": anything longer could carry the
// program's words into a log line above debug.
func orDash(s string) string {
	if s == "" || len(s) > 64 {
		return "-"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return "-"
		}
	}
	return s
}
