package openai

import (
	"github.com/switchboard-chat/switchboard/brains"
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
// it matters.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// request builds the body for prompt p, offering the delegate tool for
// team when withTools is set.
func (b *Brain) request(p prompt.Prompt, team []brains.Mate, withTools bool) request {
	msgs := make([]chatMessage, 0, len(p.Messages)+1)
	msgs = append(msgs, chatMessage{Role: prompt.RoleSystem, Content: p.System})
	for _, m := range p.Messages {
		msgs = append(msgs, chatMessage{Role: m.Role, Content: m.Content})
	}
	r := request{
		Model:       b.model,
		Messages:    msgs,
		Stream:      true,
		Temperature: b.temperature,
		MaxTokens:   max(b.maxTokens, 0),
	}
	if withTools && len(team) > 0 {
		r.Tools = []tool{delegateTool(team)}
	}
	return r
}
