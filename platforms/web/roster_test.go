package web

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
)

// fakeHost is the gateway as far as the roster and history need one;
// the embedded Host answers nothing else.
type fakeHost struct {
	gateway.Host
	mu      sync.Mutex
	bots    []gateway.BotInfo
	history []gateway.Shown
}

func (h *fakeHost) Bots(string) []gateway.BotInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.bots)
}

func (h *fakeHost) setBots(bots ...gateway.BotInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bots = bots
}

func (h *fakeHost) Resolve(id string) gateway.UserRef {
	if strings.HasPrefix(id, anonPrefix) {
		return gateway.UserRef{ID: id, Name: "Guest " + strings.ToUpper(id[len(anonPrefix):])}
	}
	return gateway.UserRef{ID: id}
}

func (h *fakeHost) Reachable(string, ...string) {}

func (h *fakeHost) SessionHistory(context.Context, string, string, int) ([]gateway.Shown, error) {
	return h.history, nil
}

// startAdapter runs an adapter on host behind a test server and dials
// it; it returns the adapter and the connection, its hello read.
func startAdapter(t *testing.T, host *fakeHost) (*Adapter, *websocket.Conn, map[string]any) {
	t.Helper()
	a := New(Options{TokenKey: []byte("k"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx, host) }()
	<-a.Ready()
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() { cancel(); <-done; srv.Close() })
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return a, ws, readFrame(t, ws)
}

func readFrame(t *testing.T, ws *websocket.Conn) map[string]any {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var f map[string]any
	if err := ws.ReadJSON(&f); err != nil {
		t.Fatalf("read: %v", err)
	}
	return f
}

func botIDsAndNames(v any) string {
	var out []string
	for _, b := range v.([]any) {
		m := b.(map[string]any)
		out = append(out, m["id"].(string)+"="+m["name"].(string))
	}
	return strings.Join(out, ",")
}

// A roster change reaches an open page as one bots frame; a reload that
// leaves the web's bots alone sends none; a message to a bot that left
// is refused by its name.
func TestRosterChangeReachesPages(t *testing.T) {
	host := &fakeHost{bots: []gateway.BotInfo{{ID: "matty", Name: "Matty"}, {ID: "slowpoke", Name: "Slowpoke"}}}
	a, ws, hello := startAdapter(t, host)
	if got := botIDsAndNames(hello["bots"]); got != "matty=Matty,slowpoke=Slowpoke" {
		t.Fatalf("hello bots = %s", got)
	}

	host.setBots(gateway.BotInfo{ID: "matty", Name: "Matty Atlas"}, gateway.BotInfo{ID: "finn", Name: "Finn"})
	a.RosterChanged(host.Bots(gateway.PlatformWeb))
	f := readFrame(t, ws)
	if f["type"] != "bots" || botIDsAndNames(f["bots"]) != "matty=Matty Atlas,finn=Finn" {
		t.Fatalf("after the change: %v", f)
	}

	a.RosterChanged(host.Bots(gateway.PlatformWeb)) // the same list: nothing to say
	ws.WriteJSON(map[string]any{"type": "send", "bot": "slowpoke", "text": "still there?", "client_id": "c1"})
	f = readFrame(t, ws)
	if f["type"] != "error" || f["code"] != codeUnknownBot || f["client_id"] != "c1" ||
		f["message"] != "Slowpoke is no longer available on the web" {
		t.Errorf("a send to the removed bot: %v", f)
	}
	ws.WriteJSON(map[string]any{"type": "history", "bot": "nobody", "client_id": "c2"})
	if f = readFrame(t, ws); f["message"] != `no bot "nobody" on the web` {
		t.Errorf("history of a bot that never was: %v", f)
	}

	// A bot that comes back is available again, and an empty web is a
	// list, not null.
	host.setBots()
	a.RosterChanged(nil)
	if f = readFrame(t, ws); f["type"] != "bots" || len(f["bots"].([]any)) != 0 {
		t.Errorf("no bots left: %v", f)
	}
}

// History with a bot says where each message of the session was said:
// the platform when it is not the web, chat_type for a group; an
// anonymous visitor is named by their guest name whatever was stored.
func TestHistorySaysWhere(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	host := &fakeHost{bots: []gateway.BotInfo{{ID: "matty", Name: "Matty"}}}
	host.history = []gateway.Shown{
		{Message: chat.Message{ID: 1, Platform: "web", ChatID: "web-anon-ab:matty", ChatType: chat.Private, Bot: "matty",
			From: chat.Party{Kind: chat.Human, ID: "web-anon-ab", Name: "Guest"}, Text: "here", Time: at}},
		{Message: chat.Message{ID: 2, Platform: "web", ChatID: "launch-planning", ChatType: chat.Group, Bot: "matty",
			From: chat.Party{Kind: chat.Bot, ID: "matty", Name: "Matty"}, Text: "in the room", Time: at}},
		{Message: chat.Message{ID: 3, Platform: "telegram", ChatID: "111", ChatType: chat.Private, Bot: "matty",
			From: chat.Party{Kind: chat.Human, ID: "telegram-111", Name: "Ann T"}, Text: "on telegram", Time: at}},
		{Message: chat.Message{ID: 4, Platform: "discord", ChatID: "555", ChatType: chat.Group, Bot: "matty",
			From: chat.Party{Kind: chat.Bot, ID: "matty", Name: "Matty"}, Text: "in a channel", Time: at}},
	}
	_, ws, _ := startAdapter(t, host)
	ws.WriteJSON(map[string]any{"type": "history", "bot": "matty"})
	f := readFrame(t, ws)
	if f["type"] != "history" {
		t.Fatalf("got %v", f)
	}
	want := []struct{ platform, chatType, name string }{
		{"", "", "Guest AB"},
		{"", "group", "Matty"},
		{"telegram", "", "Ann T"},
		{"discord", "group", "Matty"},
	}
	msgs := f["messages"].([]any)
	if len(msgs) != len(want) {
		t.Fatalf("%d messages, want %d", len(msgs), len(want))
	}
	for i, w := range want {
		m := msgs[i].(map[string]any)
		platform, _ := m["platform"].(string)
		chatType, _ := m["chat_type"].(string)
		name := m["from"].(map[string]any)["name"]
		if platform != w.platform || chatType != w.chatType || name != w.name {
			t.Errorf("message %d: platform %q, chat_type %q, from %q; want %q, %q, %q", i+1, platform, chatType, name, w.platform, w.chatType, w.name)
		}
	}
}
