package openai

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/world/actions"
)

// callChunk is a stream chunk with a piece of tool call index i.
func callChunk(i int, id, name, args string) string {
	return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}]}}]}`,
		i, id, name, args)
}

// toolsDone is the stream chunk that ends an answer of tool calls.
const toolsDone = `{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`

// noted is a test action, note {text, level?}, that records its calls.
type noted struct {
	mu    sync.Mutex
	calls []string
}

func (n *noted) action() actions.Action {
	return actions.Action{
		Name: "note", Description: "Write a note.",
		Schema: actions.Object([]string{"text"},
			actions.Text("text", "The note.", 100),
			actions.OneOf("level", "How loud.", "soft", "soft", "loud")),
		Handle: func(_ actions.Context, c actions.Call) (string, error) {
			var a struct{ Text string }
			c.Decode(&a)
			n.mu.Lock()
			defer n.mu.Unlock()
			n.calls = append(n.calls, a.Text)
			return fmt.Sprintf("noted %q", a.Text), nil
		},
	}
}

func TestDelegateToolCallStreamed(t *testing.T) {
	srv := newServer(t,
		stream(
			delta("On it: "),
			callChunk(0, "call_1", "delegate", ""),
			callChunk(0, "", "", `{"bot": "finn`),
			callChunk(0, "", "", `shipley", "task": "build the `),
			delta("handing over."),
			callChunk(0, "", "", `login page"}`),
			callChunk(1, "call_2", "delegate", `{"bot":"@Priest","task":"review it"}`),
			toolsDone,
		),
		stream(delta("Finn builds it, Priest reviews it.")))
	b, _ := newBrain(t, srv, Config{})
	tn, acts := teamTurn("we need a login page")
	r, err := b.Reply(context.Background(), tn)
	if err != nil {
		t.Fatalf("Reply: %v", err)
	}
	want := []brains.Handoff{{Bot: "finnshipley", Task: "build the login page"}, {Bot: "priest", Task: "review it"}}
	if got := acts.End(); !reflect.DeepEqual(got, want) {
		t.Errorf("hand-offs = %+v, want %+v", got, want)
	}
	if r.Text != "On it: handing over.\n\nFinn builds it, Priest reviews it." {
		t.Errorf("Text = %q", r.Text)
	}

	reqs := srv.sent()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (the calls, then their results)", len(reqs))
	}
	s := reqs[0]
	if len(s.body.Tools) != 1 || s.body.Tools[0].Function.Name != "delegate" {
		t.Fatalf("tools = %+v, want the delegate tool", s.body.Tools)
	}
	if got := s.body.Tools[0].Function.Parameters.Properties.Bot.Enum; !reflect.DeepEqual(got, []string{"finnshipley", "priest"}) {
		t.Errorf("bot enum = %v, want the team's IDs", got)
	}
	contains(t, "system message", s.body.Messages[0].Content, "=== TEAM ===", "Finn Shipley (@finnshipley)", "delegate tool")
	// The second request repeats the assistant's calls and answers each
	// with a tool message.
	msgs := reqs[1].body.Messages
	n := len(msgs)
	said, res1, res2 := msgs[n-3], msgs[n-2], msgs[n-1]
	if said.Role != "assistant" || said.Content != "On it: handing over." || len(said.ToolCalls) != 2 ||
		said.ToolCalls[0].ID != "call_1" || said.ToolCalls[0].Function.Name != "delegate" ||
		said.ToolCalls[0].Function.Arguments != `{"bot": "finnshipley", "task": "build the login page"}` {
		t.Errorf("assistant's message = %+v", said)
	}
	if res1.Role != "tool" || res1.ToolCallID != "call_1" || !strings.Contains(res1.Content, "Finn Shipley") ||
		res2.Role != "tool" || res2.ToolCallID != "call_2" {
		t.Errorf("tool results = %+v, %+v", res1, res2)
	}
}

func TestDelegateToolCallPlain(t *testing.T) {
	// A non-streamed answer: content null, arguments a JSON string; then
	// nothing more to say.
	srv := newServer(t,
		raw(200, `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[`+
			`{"id":"c1","type":"function","function":{"name":"delegate","arguments":"{\"bot\":\"Finn Shipley\",\"task\":\"ship it\"}"}}]},"finish_reason":"tool_calls"}]}`),
		jsonReply(""))
	b, _ := newBrain(t, srv, Config{})
	tn, acts := teamTurn("ship it")
	r, err := b.Reply(context.Background(), tn)
	if err != nil {
		t.Fatalf("Reply: %v", err)
	}
	if want := []brains.Handoff{{Bot: "finnshipley", Task: "ship it"}}; !reflect.DeepEqual(acts.End(), want) || r.Text != "" {
		t.Errorf("reply = %+v; want no text, only the hand-off %+v", r, want)
	}
}

func TestNoToolsWithoutActions(t *testing.T) {
	srv := newServer(t, stream(delta("hi")))
	b, _ := newBrain(t, srv, Config{})
	lonely := turn("hi")
	lonely.Actions = actions.New().Bind(actions.Caller{Bot: "mattyatlas"}) // no team: delegate not offered
	for _, tn := range []brains.Turn{turn("hi"), lonely} {
		if _, err := b.Reply(context.Background(), tn); err != nil {
			t.Fatalf("Reply: %v", err)
		}
	}
	for i, s := range srv.sent() {
		if _, ok := s.raw["tools"]; ok {
			t.Errorf("request %d: tools offered to a bot with no actions", i)
		}
	}
}

func TestToolsUnsupportedFallsBack(t *testing.T) {
	srv := newServer(t,
		raw(400, `{"error":{"message":"registry.ollama.ai/library/gemma:2b does not support tools","type":"api_error"}}`),
		stream(delta("tell Finn Shipley to build it")))
	b, _ := newBrain(t, srv, Config{})
	for i := range 2 {
		tn, _ := teamTurn("build it")
		r, err := b.Reply(context.Background(), tn)
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

// Every action is a tool; a call with bad arguments gets the error,
// naming the argument, as its result, and the model tries again.
func TestToolErrorsGoBack(t *testing.T) {
	n := &noted{}
	srv := newServer(t,
		stream(callChunk(0, "a", "note", `{"text": "JWT with 24h expiry", "level": "shouty"}`), toolsDone),
		stream(callChunk(0, "b", "note", `{"text": "JWT with 24h expiry", "level": "loud"}`), callChunk(1, "c", "fly", `{}`), toolsDone),
		stream(delta("Noted.")))
	b, _ := newBrain(t, srv, Config{})
	tn, _ := teamTurn("remember the JWT expiry", n.action())
	r, err := b.Reply(context.Background(), tn)
	if err != nil || r.Text != "Noted." {
		t.Fatalf("Reply = %+v, %v", r, err)
	}
	if !reflect.DeepEqual(n.calls, []string{"JWT with 24h expiry"}) {
		t.Errorf("note ran for %q, want once (the good call)", n.calls)
	}
	reqs := srv.sent()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	var names []string
	for _, tl := range reqs[0].body.Tools {
		names = append(names, tl.Function.Name)
	}
	if !reflect.DeepEqual(names, []string{"delegate", "note"}) {
		t.Errorf("tools = %v, want every action offered", names)
	}
	second := reqs[1].body.Messages
	if last := second[len(second)-1]; last.Role != "tool" || last.ToolCallID != "a" ||
		!strings.Contains(last.Content, "Error: note: level: must be one of soft, loud") {
		t.Errorf("result of the bad call = %+v", last)
	}
	third := reqs[2].body.Messages
	if ok, unknown := third[len(third)-2], third[len(third)-1]; !strings.Contains(ok.Content, `noted "JWT`) ||
		!strings.Contains(unknown.Content, `Error: action refused: there is no action "fly"`) {
		t.Errorf("results = %q, %q", ok.Content, unknown.Content)
	}
}

// A model that never stops calling tools is stopped after maxToolRounds
// requests, its words kept.
func TestToolRoundsBounded(t *testing.T) {
	n := &noted{}
	srv := newServer(t, stream(delta("Again."), callChunk(0, "x", "note", `{"text": "loop"}`), toolsDone))
	b, _ := newBrain(t, srv, Config{})
	tn, _ := teamTurn("go", n.action())
	r, err := b.Reply(context.Background(), tn)
	if err != nil {
		t.Fatalf("Reply: %v", err)
	}
	if got := len(srv.sent()); got != maxToolRounds {
		t.Errorf("%d requests, want %d", got, maxToolRounds)
	}
	if len(n.calls) != maxToolRounds-1 || !strings.HasPrefix(r.Text, "Again.") {
		t.Errorf("%d calls run, text %q", len(n.calls), r.Text)
	}
}

func TestOnlyFailedToolCallsIsAnError(t *testing.T) {
	srv := newServer(t, stream(callChunk(0, "c", "delegate", `{"bot":`), toolsDone), jsonReply(""))
	b, _ := newBrain(t, srv, Config{})
	tn, _ := teamTurn("x")
	_, err := b.Reply(context.Background(), tn)
	if err == nil || !strings.Contains(err.Error(), "tool calls that failed") {
		t.Errorf("err = %v", err)
	}
}

// The model's tool arguments quote the conversation: they are logged at
// debug level only, and the results sent back never repeat them.
func TestToolArgumentsStayAtDebug(t *testing.T) {
	for _, call := range []toolCall{
		{Name: "delegate", Arguments: `{"bot":"priest","task":"secret-words`},
		{Name: "delegate", Arguments: `{"task":"secret-words"}`},
		{Name: "secret-words and more words"},
	} {
		var buf strings.Builder
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		_, acts := teamTurn("")
		msgs, ok := runCalls(context.Background(), log, acts, "", []toolCall{call}, 1)
		if ok != 0 || strings.Contains(msgs[1].Content, "secret-words") {
			t.Errorf("%+v: result %q, want an error without the arguments", call, msgs[1].Content)
		}
		for line := range strings.Lines(buf.String()) {
			if !strings.Contains(line, "level=DEBUG") && strings.Contains(line, "secret-words") {
				t.Errorf("%+v: logged above debug: %s", call, line)
			}
		}
	}
}
