package discord

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
)

func botsOf(m map[string]string) func(string) (string, bool) {
	return func(id string) (string, bool) { b, ok := m[id]; return b, ok }
}

func TestParseMentions(t *testing.T) {
	bots := botsOf(map[string]string{"9001": "matty", "9002": "finn"})
	tests := []struct {
		text string
		want []gateway.Mention
	}{
		{"<@9001> hi", []gateway.Mention{{Start: 0, End: 7, Bot: "matty"}}},
		{"<@!9001> hi", []gateway.Mention{{Start: 0, End: 8, Bot: "matty"}}},
		{"hey <@9002>, and <@555>", []gateway.Mention{{Start: 4, End: 11, Bot: "finn"}, {Start: 17, End: 23, Name: "555"}}},
		{"été <@9001>", []gateway.Mention{{Start: 6, End: 13, Bot: "matty"}}},
		{"<@<@9001>>", []gateway.Mention{{Start: 2, End: 9, Bot: "matty"}}},
		{"<@&123> role, <#456> channel, <@> <@!> <@12a> <@ 1> <@1", nil},
		{"<@123456789012345678901> too long", nil},
		{"", nil},
	}
	for _, tt := range tests {
		got := parseMentions(tt.text, bots)
		if len(got) != len(tt.want) {
			t.Errorf("parseMentions(%q) = %+v, want %+v", tt.text, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("parseMentions(%q)[%d] = %+v, want %+v", tt.text, i, got[i], tt.want[i])
			}
		}
	}
}

var mentionToken = regexp.MustCompile(`^<@!?([0-9]{1,20})>$`)

func FuzzMentions(f *testing.F) {
	for _, s := range []string{"<@9001> hi", "<@!9001>", "a<@1><@2>", "<@<@!3>>", "<@", "<@!>", "\xff<@1>\xfe", "é<@12>"} {
		f.Add(s)
	}
	bots := botsOf(map[string]string{"9001": "matty"})
	f.Fuzz(func(t *testing.T, text string) {
		prev := 0
		for _, m := range parseMentions(text, bots) {
			if m.Start < prev || m.End <= m.Start || m.End > len(text) {
				t.Fatalf("mention [%d,%d) out of order or outside %q", m.Start, m.End, text)
			}
			sub := mentionToken.FindStringSubmatch(text[m.Start:m.End])
			if sub == nil {
				t.Fatalf("mention %q is not a whole <@id> token", text[m.Start:m.End])
			}
			if (m.Bot == "matty") != (sub[1] == "9001") || (m.Bot == "" && m.Name != sub[1]) {
				t.Fatalf("mention %+v of %q resolved wrongly", m, sub[1])
			}
			prev = m.End
		}
		ev := gateway.Event{Platform: "discord", ChatID: "c", ChatType: chat.Group, MessageID: "m",
			Sender: gateway.Sender{PlatformID: "discord-1"}, Text: text + "x", Mentions: parseMentions(text, bots)}
		if err := ev.Validate(); err != nil {
			t.Fatalf("event with parsed mentions is invalid: %v", err)
		}
	})
}

func TestPacer(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newPacer(Pace{Messages: 5, Per: 5 * time.Second}, func() time.Time { return now })
	delay := func(key string) time.Duration { return p.reserve(key).DelayFrom(now) }
	for i := range 5 {
		if d := delay("a"); d != 0 {
			t.Fatalf("message %d waits %s, want none within the burst", i+1, d)
		}
	}
	if d := delay("a"); d != time.Second {
		t.Fatalf("sixth message waits %s, want 1s", d)
	}
	seventh := p.reserve("a")
	if d := seventh.DelayFrom(now); d != 2*time.Second {
		t.Fatalf("seventh message waits %s, want 2s", d)
	}
	if d := delay("b"); d != 0 {
		t.Fatalf("another channel waits %s, want none", d)
	}
	seventh.CancelAt(now) // the last reservation: its token comes back
	now = now.Add(2 * time.Second)
	if d := delay("a"); d != 0 {
		t.Fatalf("after 2s and a returned token the next waits %s, want none", d)
	}
	now = now.Add(time.Hour)
	for i := range 5 {
		if d := delay("a"); d != 0 {
			t.Fatalf("after an idle hour message %d waits %s; the bucket holds only a burst", i+1, d)
		}
	}
	first := p.reserve("a")
	if d := first.DelayFrom(now); d != time.Second {
		t.Fatalf("after the burst the next waits %s, want 1s", d)
	}
	if d := delay("a"); d != 2*time.Second {
		t.Fatalf("the one behind it waits %s, want 2s", d)
	}
	// A reservation with another behind it gives nothing back: the
	// later one's turn stands, and a third caller queues behind both.
	first.CancelAt(now)
	if d := delay("a"); d != 3*time.Second {
		t.Fatalf("after a cancelled reservation the next waits %s, want 3s", d)
	}
}

// TestPacerWaitEndsWithContext: a wait cut short by its context returns the
// context's error and gives its token back.
func TestPacerWaitEndsWithContext(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newPacer(Pace{Messages: 5, Per: 5 * time.Second}, func() time.Time { return now })
	for range 5 {
		if err := p.wait(context.Background(), "a"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.wait(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait with a cancelled context: %v", err)
	}
	if d := p.reserve("a").DelayFrom(now); d != time.Second {
		t.Fatalf("after a cancelled wait the next waits %s, want 1s (the token given back)", d)
	}
}

// TestPacerPrunesFullBuckets: past maxIdleBuckets, buckets that have
// refilled are forgotten; one still waiting on is kept.
func TestPacerPrunesFullBuckets(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newPacer(Pace{Messages: 1, Per: time.Second}, func() time.Time { return now })
	p.reserve("busy")
	p.reserve("busy") // one token owed: not full for 2 s
	for i := range maxIdleBuckets {
		p.reserve(strconv.Itoa(i))
	}
	now = now.Add(time.Second) // all but the busy one have refilled
	p.reserve("new")
	if n := len(p.buckets); n != 2 {
		t.Fatalf("%d buckets kept, want the busy one and the new one", n)
	}
	if _, ok := p.buckets["busy"]; !ok {
		t.Fatal("a bucket still owed a token was dropped")
	}
}

func TestTransport(t *testing.T) {
	var got []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.RequestURI())
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(upstream.Close)

	tests := []struct {
		apiURL, gatewayURL string
		req                string
		want               string // the upstream request, or the discovery body
	}{
		{upstream.URL + "/api/v9", "", "https://discord.com/api/v9/channels/1/messages?x=1", "GET /api/v9/channels/1/messages?x=1"},
		{upstream.URL, "", "https://discord.com/api/v9/users/@me", "GET /api/v9/users/@me"},
		{upstream.URL + "/custom/", "", "https://discord.com/api/v9/gateway", "GET /custom/gateway"},
		{upstream.URL, "ws://gw.example/ws", "https://discord.com/api/v9/gateway", `{"session_start_limit":{"max_concurrency":1,"remaining":1000,"reset_after":0,"total":1000},"shards":1,"url":"ws://gw.example/ws"}`},
		{upstream.URL, "ws://gw.example/ws", "https://discord.com/api/v9/gateway/bot", `"url":"ws://gw.example/ws"`},
	}
	for _, tt := range tests {
		got = nil
		tr, err := newTransport(tt.apiURL, tt.gatewayURL)
		if err != nil {
			t.Fatal(err)
		}
		ctx, pr := withProbe(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tt.req, nil)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.req, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if req.URL.Host != "discord.com" {
			t.Errorf("the transport modified the caller's request: %s", req.URL)
		}
		if resp.StatusCode == http.StatusOK {
			if !strings.Contains(string(body), tt.want) {
				t.Errorf("%s answered %s, want %s", tt.req, body, tt.want)
			}
			if len(got) != 0 {
				t.Errorf("%s reached upstream: %v", tt.req, got)
			}
			continue
		}
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s with api_url %s reached %v, want %s", tt.req, tt.apiURL, got, tt.want)
		}
		if status, h := pr.result(); status != http.StatusTeapot || h.Get("Retry-After") != "7" {
			t.Errorf("probe recorded %d %v", status, h)
		}
	}

	for _, bad := range [][2]string{{"ftp://x", ""}, {"not a url", ""}, {"", "http://x"}, {"", "ws://"}} {
		if _, err := newTransport(bad[0], bad[1]); err == nil {
			t.Errorf("newTransport(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

// A message of another Switchboard bot is not taken: the gateway stored
// it when that bot said it. Another app's bot is, as a bot's message.
func TestOwnBotsMessagesNotTaken(t *testing.T) {
	p := New(Options{})
	p.users["9002"] = "finn"
	msg := func(author string) *discordgo.Message {
		return &discordgo.Message{ID: "1", ChannelID: "c", GuildID: "g", Content: "<@9001> over to you",
			Author: &discordgo.User{ID: author, Username: "x", Bot: true}}
	}
	if ev, ok := p.event("matty", "9001", msg("9002")); ok {
		t.Errorf("finn's message was taken: %+v", ev)
	}
	ev, ok := p.event("matty", "9001", msg("7777"))
	if !ok || !ev.Sender.IsBot {
		t.Errorf("another app's bot: %+v, %v", ev, ok)
	}
}

// FuzzMessage feeds MESSAGE_CREATE payloads, as the gateway websocket
// delivers them, through discordgo's decoding and the adapter's
// normalization: whatever arrives, an event the adapter takes is valid.
func FuzzMessage(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","channel_id":"c","guild_id":"g","type":0,"content":"<@9001> hi","author":{"id":"5","username":"ann"},"timestamp":"2026-01-02T03:04:05Z"}`,
		`{"id":"2","channel_id":"d","type":19,"content":"re","author":{"id":"5","global_name":"Ann","bot":true},"message_reference":{"message_id":"1","channel_id":"d"}}`,
		`{"id":"3","channel_id":"c","type":0,"content":"   ","author":{"id":"9001"}}`,
		`{"id":"","channel_id":"c","content":"x","author":null}`,
		`{"id":"4","channel_id":"c","type":7,"content":"joined","author":{"id":"6"}}`,
		`{"id":"5","channel_id":"c","content":"\u0000\ud800<@!9001>","author":{"id":"7","username":""}}`,
	} {
		f.Add([]byte(s))
	}
	p := New(Options{})
	f.Fuzz(func(t *testing.T, payload []byte) {
		var m discordgo.Message
		if json.Unmarshal(payload, &m) != nil {
			return
		}
		ev, ok := p.event("matty", "9001", &m)
		if !ok {
			return
		}
		if ev.Sender.PlatformID == PlatformID("9001") {
			t.Fatalf("the bot's own message was taken: %+v", ev)
		}
		if err := ev.Validate(); err != nil {
			t.Fatalf("payload %q gave an invalid event: %v", payload, err)
		}
	})
}
