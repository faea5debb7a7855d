package openai

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
)

// callChunk is a stream chunk with a piece of tool call index i.
func callChunk(i int, id, name, args string) string {
	return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}]}}]}`,
		i, id, name, args)
}

func TestDelegateToolCallStreamed(t *testing.T) {
	srv := newServer(t, stream(
		delta("On it: "),
		callChunk(0, "call_1", "delegate", ""),
		callChunk(0, "", "", `{"bot": "finn`),
		callChunk(0, "", "", `shipley", "task": "build the `),
		delta("handing over."),
		callChunk(0, "", "", `login page"}`),
		callChunk(1, "call_2", "delegate", `{"bot":"@Priest","task":"review it"}`),
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	))
	b, _ := newBrain(t, srv, Config{})
	r, err := b.Reply(context.Background(), teamTurn("we need a login page"))
	if err != nil {
		t.Fatalf("Reply: %v", err)
	}
	want := []brains.Handoff{{Bot: "finnshipley", Task: "build the login page"}, {Bot: "priest", Task: "review it"}}
	if !reflect.DeepEqual(r.Handoffs, want) {
		t.Errorf("Handoffs = %+v, want %+v", r.Handoffs, want)
	}
	if r.Text != "On it: handing over." {
		t.Errorf("Text = %q", r.Text)
	}

	s := srv.sent()[0]
	if len(s.body.Tools) != 1 || s.body.Tools[0].Function.Name != "delegate" {
		t.Fatalf("tools = %+v, want the delegate tool", s.body.Tools)
	}
	if got := s.body.Tools[0].Function.Parameters.Properties.Bot.Enum; !reflect.DeepEqual(got, []string{"finnshipley", "priest"}) {
		t.Errorf("bot enum = %v, want the team's IDs", got)
	}
	contains(t, "system message", s.body.Messages[0].Content, "=== TEAM ===", "Finn Shipley (@finnshipley)", "delegate tool")
}

func TestDelegateToolCallPlain(t *testing.T) {
	// A non-streamed answer: content null, arguments a JSON string.
	srv := newServer(t, raw(200, `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[`+
		`{"id":"c1","type":"function","function":{"name":"delegate","arguments":"{\"bot\":\"Finn Shipley\",\"task\":\"ship it\"}"}}]},"finish_reason":"tool_calls"}]}`))
	b, _ := newBrain(t, srv, Config{})
	r, err := b.Reply(context.Background(), teamTurn("ship it"))
	if err != nil {
		t.Fatalf("Reply: %v", err)
	}
	if want := []brains.Handoff{{Bot: "finnshipley", Task: "ship it"}}; !reflect.DeepEqual(r.Handoffs, want) || r.Text != "" {
		t.Errorf("reply = %+v, want only %+v", r, want)
	}
}

func TestNoToolsWithoutTeam(t *testing.T) {
	srv := newServer(t, stream(delta("hi")))
	b, _ := newBrain(t, srv, Config{})
	if _, err := b.Reply(context.Background(), turn("hi")); err != nil {
		t.Fatalf("Reply: %v", err)
	}
	if _, ok := srv.sent()[0].raw["tools"]; ok {
		t.Error("tools offered to a bot with no team")
	}
}

func TestToolsUnsupportedFallsBack(t *testing.T) {
	srv := newServer(t,
		raw(400, `{"error":{"message":"registry.ollama.ai/library/gemma:2b does not support tools","type":"api_error"}}`),
		stream(delta("tell Finn Shipley to build it")))
	b, _ := newBrain(t, srv, Config{})
	for i := range 2 {
		r, err := b.Reply(context.Background(), teamTurn("build it"))
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if r.Text != "tell Finn Shipley to build it" {
			t.Errorf("turn %d: Text = %q", i, r.Text)
		}
	}
	reqs := srv.sent()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (refused, retried without tools, then without tools at once)", len(reqs))
	}
	for i, s := range reqs {
		_, has := s.raw["tools"]
		if has != (i == 0) {
			t.Errorf("request %d: tools offered = %v", i, has)
		}
	}
	contains(t, "system message without tools", reqs[1].body.Messages[0].Content, "tell <name> to <task>")
}

func TestHandoffs(t *testing.T) {
	team := teamTurn("").Team
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tests := []struct {
		name    string
		calls   []toolCall
		want    []brains.Handoff
		wantBad string
	}{
		{"by id", []toolCall{{Name: "delegate", Arguments: `{"bot":"priest","task":"review"}`}}, []brains.Handoff{{Bot: "priest", Task: "review"}}, ""},
		{"by name any case", []toolCall{{Name: "delegate", Arguments: `{"bot":"finn shipley","task":" x "}`}}, []brains.Handoff{{Bot: "finnshipley", Task: "x"}}, ""},
		{"unknown bot passed on", []toolCall{{Name: "delegate", Arguments: `{"bot":"fin","task":"x"}`}}, []brains.Handoff{{Bot: "fin", Task: "x"}}, ""},
		{"malformed", []toolCall{{Name: "delegate", Arguments: `{"bot":`}}, nil, "delegate arguments"},
		{"no task", []toolCall{{Name: "delegate", Arguments: `{"bot":"priest"}`}}, nil, "needs a bot and a task"},
		{"other tool", []toolCall{{Name: "search", Arguments: `{}`}}, nil, "unknown tool"},
		{"good and bad", []toolCall{{Name: "search"}, {Name: "delegate", Arguments: `{"bot":"priest","task":"r"}`}}, []brains.Handoff{{Bot: "priest", Task: "r"}}, "unknown tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, bad := handoffs(log, tt.calls, team)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("handoffs = %+v, want %+v", got, tt.want)
			}
			if (bad == nil) != (tt.wantBad == "") || bad != nil && !strings.Contains(bad.Error(), tt.wantBad) {
				t.Errorf("bad = %v, want %q", bad, tt.wantBad)
			}
		})
	}
}

func TestOnlyBadToolCallsIsAnError(t *testing.T) {
	srv := newServer(t, stream(callChunk(0, "c", "delegate", `{"bot":`), `{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`))
	b, _ := newBrain(t, srv, Config{})
	_, err := b.Reply(context.Background(), teamTurn("x"))
	if err == nil || !strings.Contains(err.Error(), "unusable tool calls") {
		t.Errorf("err = %v", err)
	}
}

// The model's tool arguments quote the conversation: they are logged at
// debug level only, and the errors (logged above it) never carry them.
func TestToolArgumentsStayAtDebug(t *testing.T) {
	team := teamTurn("").Team
	for _, calls := range [][]toolCall{
		{{Name: "delegate", Arguments: `{"bot":"priest","task":"secret-words`}},
		{{Name: "delegate", Arguments: `{"task":"secret-words"}`}},
		{{Name: "secret-words and more words"}},
	} {
		var buf strings.Builder
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		_, bad := handoffs(log, calls, team)
		if bad == nil || strings.Contains(bad.Error(), "secret-words") {
			t.Errorf("%+v: bad = %v, want an error without the arguments", calls, bad)
		}
		for line := range strings.Lines(buf.String()) {
			if !strings.Contains(line, "level=DEBUG") && strings.Contains(line, "secret-words") {
				t.Errorf("%+v: logged above debug: %s", calls, line)
			}
		}
	}
}
