package exec

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseOutput(t *testing.T) {
	tests := []struct {
		name, in        string
		text, sessionID string
		wantErr         string
	}{
		{name: "text", in: "  Hello there.\n", text: "Hello there."},
		{name: "multi-line text", in: "line 1\nline 2\n", text: "line 1\nline 2"},
		{name: "claude json", in: `{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"abc-123"}`, text: "Done.", sessionID: "abc-123"},
		{name: "json without session", in: `{"result":"ok"}`, text: "ok"},
		{name: "json lines", in: "{\"type\":\"system\"}\n{\"type\":\"result\",\"result\":\"last\",\"session_id\":\"s\"}\n", text: "last", sessionID: "s"},
		{name: "json array", in: `[{"type":"system"},{"type":"result","result":"arr","session_id":"s2"}]`, text: "arr", sessionID: "s2"},
		{name: "is_error", in: `{"type":"result","subtype":"error_max_turns","is_error":true,"result":"too many turns"}`, wantErr: "error_max_turns"},
		{name: "result not a string", in: `{"result":5}`, wantErr: `no "result"`},
		{name: "envelope without result", in: `{"type":"result","session_id":"x"}`, wantErr: `no "result"`},
		{name: "empty result", in: `{"result":"  "}`, wantErr: "printed nothing"},
		{name: "empty", in: " \n\t", wantErr: "printed nothing"},
		{name: "binary", in: "\xff\xfe", wantErr: "not UTF-8"},
		// A text CLI may answer with JSON that is no envelope, or with
		// something that only starts like JSON.
		{name: "plain json answer", in: `{"name":"Ada"}`, text: `{"name":"Ada"}`},
		{name: "braces in text", in: "{not json} but text", text: "{not json} but text"},
		{name: "number", in: "42", text: "42"},
		// session_id goes on the next command line: only a plain token.
		{name: "session id chars", in: `{"result":"ok","session_id":"a-Z_0.9:x"}`, text: "ok", sessionID: "a-Z_0.9:x"},
		{name: "session id 128", in: `{"result":"ok","session_id":"` + strings.Repeat("a", 128) + `"}`, text: "ok", sessionID: strings.Repeat("a", 128)},
		{name: "session id flag", in: `{"result":"ok","session_id":"--evil-flag=1"}`, wantErr: "starts with '-'"},
		{name: "session id dash", in: `{"result":"ok","session_id":"-"}`, wantErr: "starts with '-'"},
		{name: "session id 129", in: `{"result":"ok","session_id":"` + strings.Repeat("a", 129) + `"}`, wantErr: "over 128"},
		{name: "session id space", in: `{"result":"ok","session_id":"a b"}`, wantErr: "outside A-Z"},
		{name: "session id equals", in: `{"result":"ok","session_id":"a=b"}`, wantErr: "outside A-Z"},
		{name: "session id slash", in: `{"result":"ok","session_id":"../x"}`, wantErr: "outside A-Z"},
		{name: "session id newline", in: `{"result":"ok","session_id":"a\nb"}`, wantErr: "outside A-Z"},
		{name: "session id unicode", in: `{"result":"ok","session_id":"séance"}`, wantErr: "outside A-Z"},
		{name: "session id NUL", in: `{"result":"ok","session_id":"a\u0000"}`, wantErr: "outside A-Z"},
		{name: "empty session id", in: `{"result":"ok","session_id":""}`, text: "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := parseOutput([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseOutput: %v", err)
			}
			if out.text != tt.text || out.sessionID != tt.sessionID {
				t.Errorf("got %q / %q, want %q / %q", out.text, out.sessionID, tt.text, tt.sessionID)
			}
		})
	}
}

func FuzzParseOutput(f *testing.F) {
	for _, s := range []string{"hi", `{"result":"x","session_id":"y"}`, `[{"result":"a"}]`, `{"is_error":true}`, "{", "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := parseOutput(b)
		if err != nil {
			return
		}
		if strings.TrimSpace(out.text) == "" || !utf8.ValidString(out.text) {
			t.Errorf("accepted output with text %q", out.text)
		}
		if out.sessionID != "" && !sessionIDPattern.MatchString(out.sessionID) {
			t.Errorf("accepted session_id %q", out.sessionID)
		}
	})
}

// sessionIDPattern is the rule checkSessionID implements (SPEC §12).
var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:][A-Za-z0-9._:-]{0,127}$`)

func FuzzCheckSessionID(f *testing.F) {
	for _, s := range []string{"abc", "--evil-flag=1", "-", "", "a:b.c_d-e", strings.Repeat("x", 129), "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := checkSessionID(id)
		if want := sessionIDPattern.MatchString(id); (err == nil) != want {
			t.Errorf("checkSessionID(%q) = %v, want accepted = %v", id, err, want)
		}
		// The reasons' own words may hold a short ID by chance (" _ :").
		const words = "it is empty; it starts with '-' and would read as a flag; is outside A-Z a-z 0-9 . _ : -; bytes long, over"
		if err != nil && len(id) > 3 && strings.Contains(err.Error(), id) && !strings.Contains(words+errBadSessionID.Error(), id) {
			t.Errorf("the reason quotes the ID: %v", err)
		}
	})
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 8}
	for _, s := range []string{"hello ", "wonderful ", "world"} {
		tb.Write([]byte(s))
	}
	if got := tb.String(); got != "…ul world" {
		t.Errorf("tail = %q", got)
	}
	small := &tailBuffer{max: 8}
	small.Write([]byte(" hi\n"))
	if got := small.String(); got != "hi" {
		t.Errorf("tail = %q, want hi", got)
	}
}
