package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/switchboard-chat/switchboard/brains"
)

// DelegateTool is the name of the function tool offered to a bot that
// may hand work to others.
const DelegateTool = "delegate"

// tool is a function tool as the API describes it.
type tool struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// delegateTool describes delegate(bot, task), bot being one of the
// team's IDs.
func delegateTool(team []brains.Mate) tool {
	ids := make([]string, 0, len(team))
	for _, m := range team {
		ids = append(ids, m.ID)
	}
	return tool{Type: "function", Function: toolFunction{
		Name: DelegateTool,
		Description: "Hand a task to another bot of your team. That bot does the work and answers the user " +
			"itself; you are told the result later. Use it when the task is that bot's job, not yours.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"bot": map[string]any{
					"type":        "string",
					"enum":        ids,
					"description": "The ID of the bot to hand the task to.",
				},
				"task": map[string]any{
					"type":        "string",
					"description": "What the bot should do, complete enough to act on without this conversation.",
				},
			},
			"required": []string{"bot", "task"},
		},
	}}
}

// toolCall is a complete tool call from the model.
type toolCall struct {
	ID        string
	Name      string
	Arguments string
}

// errBadToolCall is the cause for tool calls that are not a usable
// delegate call.
var errBadToolCall = errors.New("unusable tool call")

// handoffs turns the model's delegate calls into hand-offs. Calls of
// other tools, and delegate calls with malformed arguments, are logged
// and skipped; bad reports the last of them. A bot given by name or
// with an '@' is mapped to its ID; one not in the team is passed on for
// the gateway's router to refuse with its usual explanation.
func handoffs(log *slog.Logger, calls []toolCall, team []brains.Mate) (out []brains.Handoff, bad error) {
	for _, c := range calls {
		if c.Name != DelegateTool {
			bad = fmt.Errorf("%w: unknown tool %s", errBadToolCall, toolName(c.Name))
			log.Warn("model called an unknown tool; ignored", "tool", toolName(c.Name))
			continue
		}
		var args struct {
			Bot  string `json:"bot"`
			Task string `json:"task"`
		}
		// The arguments are the model's words (a task quotes the
		// conversation): the debug log only (SPEC §8).
		if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
			bad = fmt.Errorf("%w: delegate arguments are not a JSON object (%d bytes): %v", errBadToolCall, len(c.Arguments), err)
			log.Warn("delegate call with malformed arguments; ignored", "err", err)
			log.Debug("delegate call with malformed arguments", "arguments", c.Arguments)
			continue
		}
		bot, task := teamID(args.Bot, team), strings.TrimSpace(args.Task)
		if bot == "" || task == "" {
			bad = fmt.Errorf("%w: delegate needs a bot and a task (bot given: %t, task given: %t)", errBadToolCall, bot != "", task != "")
			log.Warn("delegate call without a bot or a task; ignored", "bot_given", bot != "", "task_given", task != "")
			log.Debug("delegate call without a bot or a task", "arguments", c.Arguments)
			continue
		}
		out = append(out, brains.Handoff{Bot: bot, Task: task})
	}
	return out, bad
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

// teamID maps what the model wrote for a bot to a team member's ID when
// it names one by ID or display name, in any case, with or without '@'.
func teamID(s string, team []brains.Mate) string {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "@"))
	for _, m := range team {
		if strings.EqualFold(s, m.ID) || strings.EqualFold(s, m.Name) {
			return m.ID
		}
	}
	return s
}
