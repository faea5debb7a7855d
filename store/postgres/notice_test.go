package postgres

import (
	"testing"

	"github.com/switchboard-chat/switchboard/gateway"
)

func TestParseNotice(t *testing.T) {
	for _, tc := range []struct {
		payload string
		want    gateway.Notice
		ok      bool
		bad     bool
	}{
		{`{"k":"entry","i":"i-b","id":7,"p":"web","c":"web-x:matty"}`, gateway.Notice{Kind: gateway.NoticeEntry, ID: 7, Platform: "web", ChatID: "web-x:matty"}, true, false},
		{`{"k":"message","i":"i-b","id":8,"p":"cli","c":"den"}`, gateway.Notice{Kind: gateway.NoticeMessage, ID: 8, Platform: "cli", ChatID: "den"}, true, false},
		{`{"k":"delegation","i":"","d":"d-1"}`, gateway.Notice{Kind: gateway.NoticeDelegation, Delegation: "d-1"}, true, false},
		{`{"k":"delegation","i":"i-b","d":"d-2","n":true}`, gateway.Notice{Kind: gateway.NoticeDelegation, Delegation: "d-2", New: true}, true, false},
		{`{"k":"entry","i":"i-self","id":7,"p":"web","c":"x"}`, gateway.Notice{Kind: gateway.NoticeEntry, ID: 7, Platform: "web", ChatID: "x"}, false, false},
		{`{"k":"entry","i":"i-b","p":"web","c":"x"}`, gateway.Notice{}, false, true},
		{`{"k":"delegation","i":"i-b"}`, gateway.Notice{}, false, true},
		{`{"k":"finding","i":"i-b","id":9,"s":"chat:web:den"}`, gateway.Notice{Kind: gateway.NoticeFinding, ID: 9, Space: "chat:web:den"}, true, false},
		{`{"k":"finding","i":"i-b","id":9}`, gateway.Notice{}, false, true},
		{`{"k":"context","i":"i-b","s":"chat:web:den"}`, gateway.Notice{Kind: gateway.NoticeContext, Space: "chat:web:den"}, true, false},
		{`{"k":"context","i":"i-b"}`, gateway.Notice{}, false, true},
		{`{"k":"gossip","i":"i-b","id":1}`, gateway.Notice{}, false, true},
		{`not json`, gateway.Notice{}, false, true},
	} {
		got, ok, err := parseNotice(tc.payload, "i-self")
		if (err != nil) != tc.bad || ok != tc.ok || (!tc.bad && got != tc.want) {
			t.Errorf("parseNotice(%s) = %+v, %v, %v; want %+v, %v, error %v", tc.payload, got, ok, err, tc.want, tc.ok, tc.bad)
		}
	}
}

// FuzzParseNotice: no payload makes the parser panic, and what it
// accepts has what its kind needs.
func FuzzParseNotice(f *testing.F) {
	f.Add(`{"k":"entry","i":"i-b","id":7,"p":"web","c":"web-x:matty"}`)
	f.Add(`{"k":"delegation","d":"d-1"}`)
	f.Add(`{"k":"message","id":-1}`)
	f.Fuzz(func(t *testing.T, payload string) {
		n, ok, err := parseNotice(payload, "i-self")
		if err != nil {
			if ok {
				t.Fatal("an error with ok")
			}
			return
		}
		switch n.Kind {
		case gateway.NoticeEntry, gateway.NoticeMessage:
			if n.ID <= 0 || n.Platform == "" || n.ChatID == "" {
				t.Fatalf("accepted %+v", n)
			}
		case gateway.NoticeDelegation:
			if n.Delegation == "" {
				t.Fatalf("accepted %+v", n)
			}
		case gateway.NoticeFinding:
			if n.ID <= 0 || n.Space == "" {
				t.Fatalf("accepted %+v", n)
			}
		case gateway.NoticeContext:
			if n.Space == "" {
				t.Fatalf("accepted %+v", n)
			}
		default:
			t.Fatalf("accepted kind %q", n.Kind)
		}
	})
}
