package openai

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"

	"github.com/switchboard-chat/switchboard/brains"
)

// maxToolRounds bounds the requests of one turn that may answer with tool
// calls: a model that still calls tools after them answers with what it
// has said.
const maxToolRounds = 8

// tool is a function tool as the API describes it.
type tool struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// toolsOf makes the function tools of the actions a turn is offered
// (SPEC §10.1): each action a tool of the same name, its schema the
// tool's parameters.
func toolsOf(specs []brains.ActionSpec) []tool {
	out := make([]tool, 0, len(specs))
	for _, s := range specs {
		out = append(out, tool{Type: "function", Function: toolFunction{Name: s.Name, Description: s.Description, Parameters: s.Schema}})
	}
	return out
}

// offers reports whether specs offer the action called name.
func offers(specs []brains.ActionSpec, name string) bool {
	for _, s := range specs {
		if s.Name == name {
			return true
		}
	}
	return false
}

// toolCall is a complete tool call from the model.
type toolCall struct {
	ID        string
	Name      string
	Arguments string
}

// callOut is a tool call as a request repeats it in the assistant's
// message.
type callOut struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// runCalls carries out the model's tool calls of one round through the
// turn's actions and returns the assistant's message that made them and
// one tool message per call with its result, or its error as the
// result (SPEC §10.1). ok counts the calls that succeeded.
func runCalls(ctx context.Context, log *slog.Logger, acts brains.Actions, content string, calls []toolCall, round int) (msgs []chatMessage, ok int) {
	said := chatMessage{Role: "assistant", Content: content}
	var results []chatMessage
	for i, c := range calls {
		if c.ID == "" {
			// Some servers leave IDs out; the results still need one.
			c.ID = "call_" + strconv.Itoa(round) + "_" + strconv.Itoa(i)
		}
		args := c.Arguments
		if args == "" {
			args = "{}"
		}
		var out callOut
		out.ID, out.Type = c.ID, "function"
		out.Function.Name, out.Function.Arguments = c.Name, args
		said.ToolCalls = append(said.ToolCalls, out)

		result, err := acts.Call(ctx, c.Name, json.RawMessage(args))
		if err != nil {
			// The arguments are the model's words (a finding quotes the
			// conversation): the debug log only (SPEC §8). The error
			// names the argument, never its value.
			log.Info("tool call refused", "tool", toolName(c.Name), "err", err)
			log.Debug("tool call refused", "tool", toolName(c.Name), "arguments", args)
			result = "Error: " + err.Error()
		} else {
			ok++
		}
		results = append(results, chatMessage{Role: "tool", ToolCallID: c.ID, Content: result})
	}
	return append([]chatMessage{said}, results...), ok
}

// toolName is a tool name the model gave, quoted, if it looks like one
// (at most 64 letters, digits, '_', '-' or '.'); anything else could be
// the model's words, which stay out of logs above debug.
func toolName(s string) string {
	ok := s != "" && len(s) <= 64
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
	}
	if !ok {
		return "(not a tool name)"
	}
	return strconv.Quote(s)
}
