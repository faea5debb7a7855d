package web

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
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
		{"join without chat", `{"type":"join"}`, "join needs a chat"},
		{"join open", `{"type":"join","chat":"lobby","open":true}`, ""},
		// A private chat's form is the gateway's to refuse (not_allowed).
		{"join private form", `{"type":"join","chat":"web-x:finn"}`, ""},
		{"join cli group", `{"type":"join","chat":"cli:finn+matty"}`, ""},
		{"join control character", `{"type":"join","chat":"lob\u0007by"}`, "unprintable character"},
		{"join bidi override", `{"type":"join","chat":"lobby\u202e"}`, "unprintable character"},
		{"join blank", `{"type":"join","chat":"   "}`, "blank"},
		{"join too long", `{"type":"join","chat":"` + strings.Repeat("é", 101) + `"}`, "longer than 100"},
		{"invite", `{"type":"invite","chat":"lobby","user":"web-bob","client_id":"i1"}`, ""},
		{"invite without user", `{"type":"invite","chat":"lobby"}`, "invite needs a user"},
		{"invite without chat", `{"type":"invite","user":"web-bob"}`, "invite needs a chat"},
		{"send to a bad room", `{"type":"send","chat":"a\u2066b","text":"hi"}`, "unprintable character"},
		{"history of a bad room", `{"type":"history","chat":"\n"}`, "unprintable character"},
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
		`{"type":"invite","chat":"lobby","user":"user-bryan"}`,
		`{"type":"join","chat":"cli:a+b","open":true}`,
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
		case "send", "join", "history", "invite":
		default:
			t.Fatalf("accepted frame of type %q", fr.Type)
		}
		// Every room name that gets past the frame check is printable.
		if fr.Chat != "" || fr.Type == "join" || fr.Type == "invite" {
			if err := gateway.CheckRoomName(fr.Chat); err != nil {
				t.Fatalf("accepted room name %q: %v", fr.Chat, err)
			}
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

func TestFrameLimiter(t *testing.T) {
	b := newFrameLimiter()
	now := testTime
	allowed := 0
	for range 100 {
		if b.AllowN(now, 1) {
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
		if b.AllowN(now, 1) {
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

// TestFrameWire pins the JSON of the frames every message costs, the
// sender's ack and the bot's message, as the write loop sends them
// (WriteJSON: encoding/json with HTML escaping, then a newline).
func TestFrameWire(t *testing.T) {
	tests := []struct {
		name  string
		frame any
		want  string
	}{
		{
			"ack",
			ackFrame{Type: "ack", ClientID: "c1", ID: 42},
			`{"type":"ack","client_id":"c1","id":42}`,
		},
		{
			"ack with an empty client ID",
			ackFrame{Type: "ack", ID: 7},
			`{"type":"ack","client_id":"","id":7}`,
		},
		{
			"message to a room",
			messageFrame{Type: "message", ID: 3, Chat: "lobby", From: chat.Party{Kind: "human", ID: "web-ann", Name: "Ann"},
				Text: "hi", Time: "2026-11-24T09:00:00.123Z"},
			`{"type":"message","id":3,"chat":"lobby","from":{"kind":"human","id":"web-ann","name":"Ann"},"text":"hi","time":"2026-11-24T09:00:00.123Z"}`,
		},
		{
			"message from a bot, escaped",
			messageFrame{Type: "message", ID: -7, Chat: "web-ann:matty", Bot: "matty", From: chat.Party{Kind: "bot", ID: "matty", Name: "Matty"},
				Text: "<b>&</b> \"q\" \\ \t\n\x01 \u2028 \xff ✓", Time: "t"},
			`{"type":"message","id":-7,"chat":"web-ann:matty","bot":"matty","from":{"kind":"bot","id":"matty","name":"Matty"},` +
				`"text":"\u003cb\u003e\u0026\u003c/b\u003e \"q\" \\ \t\n\u0001 \u2028 \ufffd ✓","time":"t"}`,
		},
		{
			"message with a delegation",
			messageFrame{Type: "message", ID: 1, Chat: "c", From: chat.Party{Kind: "system"}, Text: "x", Time: "t",
				Delegation: &delegation.Ref{ID: "d1", From: "matty", To: "finn", Task: "look", Status: "queued", Depth: 2}},
			`{"type":"message","id":1,"chat":"c","from":{"kind":"system","id":"","name":""},"text":"x","time":"t",` +
				`"delegation":{"id":"d1","from_bot":"matty","to_bot":"finn","task":"look","status":"queued","depth":2}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := json.NewEncoder(&b).Encode(tt.frame); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tt.want+"\n" {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
