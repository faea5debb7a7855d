package web

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
)

func TestDecodeFrame(t *testing.T) {
	tests := []struct {
		name, in string
		wantErr  string // substring; empty for success
	}{
		{"send to bot", `{"type":"send","bot":"matty","text":"hi","client_id":"c1"}`, ""},
		{"send to room", `{"type":"send","chat":"lobby","text":"@finn hi"}`, ""},
		{"join", `{"type":"join","chat":"lobby","bots":["finn"]}`, ""},
		{"history", `{"type":"history","bot":"matty","limit":10}`, ""},
		{"malformed", `{"type":"send",`, "malformed JSON"},
		{"not an object", `[1,2]`, "malformed JSON"},
		{"two values", `{"type":"history","bot":"a"} {}`, "more than one value"},
		{"no type", `{"bot":"matty"}`, "missing type"},
		{"unknown type", `{"type":"dance"}`, "unknown type"},
		{"send without target", `{"type":"send","text":"hi"}`, "exactly one of bot or chat"},
		{"send with both", `{"type":"send","bot":"a","chat":"b","text":"hi"}`, "exactly one of bot or chat"},
		{"send empty text", `{"type":"send","bot":"a","text":"  "}`, "non-empty text"},
		{"join without chat", `{"type":"join"}`, "missing chat"},
		{"join colon", `{"type":"join","chat":"web-x:finn"}`, "may not contain"},
		{"history negative", `{"type":"history","bot":"a","limit":-1}`, "negative"},
		{"wrong field type", `{"type":"send","bot":1,"text":"x"}`, "malformed JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeFrame([]byte(tc.in))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var fe *frameError
			if !errors.As(err, &fe) || fe.Code != codeBadRequest {
				t.Fatalf("err = %v; want a bad_request frame error", err)
			}
			if !strings.Contains(fe.Message, tc.wantErr) {
				t.Errorf("message %q does not mention %q", fe.Message, tc.wantErr)
			}
		})
	}
}

func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"send","bot":"matty","text":"hi","client_id":"c1"}`,
		`{"type":"join","chat":"lobby","bots":["finn"]}`,
		`{"type":"history","chat":"lobby","limit":500}`,
		`{"type":`, `null`, `"x"`, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := decodeFrame(data)
		if err != nil {
			var fe *frameError
			if !errors.As(err, &fe) || fe.Code != codeBadRequest {
				t.Fatalf("error %v is not a bad_request frame error", err)
			}
			return
		}
		switch fr.Type {
		case "send", "join", "history":
		default:
			t.Fatalf("accepted frame of type %q", fr.Type)
		}
	})
}

func TestIdentify(t *testing.T) {
	secret := []byte("s3cret")
	key := []byte("token-key")
	anon, err := identify(url.Values{}, nil, key)
	if err != nil || !strings.HasPrefix(anon.platformID, "web-anon-") || anon.token == "" {
		t.Fatalf("anonymous visitor = %+v, %v", anon, err)
	}
	tests := []struct {
		name    string
		q       url.Values
		secret  []byte
		wantID  string
		wantErr error
	}{
		{"signed", url.Values{"user": {"bryan"}, "sig": {Sign(secret, "bryan")}}, secret, "web-bryan", nil},
		{"signed upper-case hex", url.Values{"user": {"bryan"}, "sig": {strings.ToUpper(Sign(secret, "bryan"))}}, secret, "web-bryan", nil},
		{"bad sig", url.Values{"user": {"bryan"}, "sig": {Sign(secret, "mallory")}}, secret, "", errBadSig},
		{"no secret", url.Values{"user": {"bryan"}, "sig": {Sign(secret, "bryan")}}, nil, "", errNoSecret},
		{"half", url.Values{"user": {"bryan"}}, secret, "", errHalfSigned},
		{"bad user", url.Values{"user": {"a b"}, "sig": {Sign(secret, "a b")}}, secret, "", errBadUser},
		{"resume", url.Values{"token": {anon.token}}, nil, anon.platformID, nil},
		{"forged token", url.Values{"token": {anon.token + "x"}}, nil, "", errBadToken},
		{"token for another id", url.Values{"token": {sealToken([]byte("other"), anon.platformID)}}, nil, "", errBadToken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := identify(tc.q, tc.secret, key)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if v.platformID != tc.wantID {
				t.Errorf("platform ID = %q, want %q", v.platformID, tc.wantID)
			}
		})
	}
}

func TestOriginAllowed(t *testing.T) {
	tests := []struct {
		origin  string
		allowed []string
		want    bool
	}{
		{"", nil, true},
		{"http://127.0.0.1:8080", nil, true},
		{"http://evil.example", nil, false},
		{"https://app.example.com", []string{"https://app.example.com"}, true},
		{"https://app.example.com", []string{"https://other.example.com"}, false},
		{"https://any.example", []string{"*"}, true},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("GET", "http://127.0.0.1:8080/ws", nil)
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if got := originAllowed(r, tc.allowed); got != tc.want {
			t.Errorf("origin %q allowed %v = %v, want %v", tc.origin, tc.allowed, got, tc.want)
		}
	}
}

func TestTokenBucket(t *testing.T) {
	b := tokenBucket{rate: framesPerSecond, burst: frameBurst}
	now := testTime
	allowed := 0
	for range 100 {
		if b.allow(now) {
			allowed++
		}
	}
	if allowed != frameBurst {
		t.Errorf("burst allowed %d, want %d", allowed, frameBurst)
	}
	// A second later, 20 more.
	now = now.Add(1e9)
	allowed = 0
	for range 100 {
		if b.allow(now) {
			allowed++
		}
	}
	if allowed != framesPerSecond {
		t.Errorf("after 1s allowed %d, want %d", allowed, framesPerSecond)
	}
}

var testTime = mustTime("2026-01-02T03:04:05Z")

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// jsonStrings are strings that take every branch of appendJSONString.
var jsonStrings = []string{
	"", "plain text", `quote " and backslash \`, "<b>&amp;</b>", "tab\tnew\nline\rcr",
	"\b\f\x00\x01\x1f\x7f", "héllo wörld ✓ 😀", "line\u2028para\u2029end", "bad \xff\xfe utf8 \xc3",
	"\xe2\x80", strings.Repeat("long ", 100),
}

// TestAppendJSON holds the frames encoded by hand to what WriteJSON
// (encoding/json and a newline) writes for them.
func TestAppendJSON(t *testing.T) {
	var frames []jsonAppender
	for _, s := range jsonStrings {
		frames = append(frames,
			ackFrame{Type: "ack", ClientID: s, ID: 42},
			messageFrame{Type: "message", ID: -7, Chat: s, Bot: s, From: gateway.Party{Kind: "bot", ID: s, Name: s}, Text: s, Time: "2026-11-24T09:00:00.123Z"},
			messageFrame{Type: "message", ID: 1, Chat: "c", From: gateway.Party{Kind: "human"}, Text: s,
				Delegation: &gateway.DelegationRef{ID: s, From: "matty", To: "finn", Task: s, Status: "queued", Depth: 2}},
		)
	}
	for _, f := range frames {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.appendJSON(nil); string(got) != string(want) {
			t.Errorf("%+v:\n got %s\nwant %s", f, got, want)
		}
	}
}

// FuzzAppendJSONString holds appendJSONString to encoding/json for any
// string.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

// scanFrames are frames scanFrame takes and frames it must leave to
// json.Unmarshal.
var scanFrames = []string{
	`{"type":"send","bot":"matty","text":"hi","client_id":"c1"}`,
	` { "type" : "send" , "chat":"lobby", "text":"héllo ✓", "reply_to": 12 } `,
	`{"type":"history","bot":"matty","limit":-0}`, `{"type":"history","chat":"x","limit":500}`,
	`{}`, `{"limit":9223372036854775807}`,
	`{"reply_to":9223372036854775808}`, `{"type":"join","chat":"lobby","bots":["finn"]}`, `{"TYPE":"send"}`, `{"type":"se\u006ed"}`,
	`{"type":"send","type":"join"}`, `{"type":null}`, `{"limit":1.5}`, `{"limit":1e3}`, `{"limit":01}`,
	`{"text":"bad ` + "\xff" + `"}`, `{"text":"tab` + "\t" + `"}`, `{"type":"send"}x`, `{"type":"send"`,
	`{"type":"send",}`, `{"unknown":1}`, `[]`, `null`, ``,
}

// FuzzScanFrame holds the fast decoder to json.Unmarshal: whatever it
// takes, json.Unmarshal takes too and decodes alike.
func FuzzScanFrame(f *testing.F) {
	for _, s := range scanFrames {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast inFrame
		if !scanFrame(data, &fast) {
			return
		}
		var slow inFrame
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("scanFrame took %q, which json.Unmarshal refuses: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("scanFrame(%q) = %+v, json.Unmarshal %+v", data, fast, slow)
		}
	})
}

// TestScanFrameTakesTheUsualFrames checks that the fast path is taken
// for the frames widgets send, so it does not quietly stop being one.
func TestScanFrameTakesTheUsualFrames(t *testing.T) {
	for _, s := range scanFrames[:6] {
		var f inFrame
		if !scanFrame([]byte(s), &f) {
			t.Errorf("scanFrame gave up on %s", s)
		}
	}
	for _, s := range scanFrames[6:] {
		var f inFrame
		if scanFrame([]byte(s), &f) {
			t.Errorf("scanFrame took %q", s)
		}
	}
}
