package openai

import (
	"github.com/switchboard-chat/switchboard/brains/prompt"
)

// request is the body of POST /chat/completions. Optional fields are
// left out when unset, so servers apply their own defaults.
type request struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Stream      bool          `json:"stream"`
	Temperature *float64      `json:"temperature,omitempty"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
	Tools       []tool        `json:"tools,omitempty"`
}

// chatMessage is a message as sent. The speaker's name is not sent:
// several servers reject the field, and the prompt labels speakers where
// it matters. An assistant's message that called tools carries the
// calls, and each call's result follows as a "tool" message.
type chatMessage struct {
	Role       string    `json:"role"`
	Content    string    `json:"content"`
	ToolCalls  []callOut `json:"tool_calls,omitempty"`
	ToolCallID string    `json:"tool_call_id,omitempty"`
}

// messages are the chat messages of prompt p: the system part, then the
// kept history and the new message.
func messages(p prompt.Prompt) []chatMessage {
	msgs := make([]chatMessage, 0, len(p.Messages)+1)
	msgs = append(msgs, chatMessage{Role: prompt.RoleSystem, Content: p.System})
	for _, m := range p.Messages {
		msgs = append(msgs, chatMessage{Role: m.Role, Content: m.Content})
	}
	return msgs
}

// request builds the body for msgs, offering tools.
func (b *Brain) request(msgs []chatMessage, tools []tool) request {
	return request{
		Model:       b.model,
		Messages:    msgs,
		Stream:      true,
		Temperature: b.temperature,
		MaxTokens:   max(b.maxTokens, 0),
		Tools:       tools,
	}
}
