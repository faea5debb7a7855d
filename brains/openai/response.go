package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
)

// MaxResponse is the most bytes of a response body read.
const MaxResponse = 16 << 20

// answer is a completed model answer.
type answer struct {
	content string
	calls   []toolCall
}

// errMalformed is the cause of responses that are not chat completions.
var errMalformed = errors.New("malformed response")

// message is a choice's message, or a stream chunk's delta.
type message struct {
	// Content is a string, null, or (some servers) an array of parts.
	Content   json.RawMessage `json:"content"`
	ToolCalls []callDelta     `json:"tool_calls"`
}

// callDelta is a tool call, or a streamed piece of one.
type callDelta struct {
	// Index identifies the call across stream chunks; some servers leave
	// it out.
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a JSON-encoded string (a fragment of one when
		// streamed); a few servers send the object itself.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// apiError is the error object servers put in a body or a stream.
type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

// completion is a non-streamed response, and also a stream chunk (which
// has delta instead of message).
type completion struct {
	Choices []struct {
		Message      *message `json:"message"`
		Delta        *message `json:"delta"`
		FinishReason *string  `json:"finish_reason"`
	} `json:"choices"`
	Error json.RawMessage `json:"error"`
}

// readAnswer reads a 2xx response body: an SSE stream when the server
// says so or the body starts like one, else a JSON completion.
func readAnswer(contentType string, body io.Reader) (answer, error) {
	br := bufio.NewReader(io.LimitReader(body, MaxResponse))
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "text/event-stream" {
		// Some servers stream without the right type; look.
		head, _ := br.Peek(16)
		head = bytes.TrimLeft(head, " \t\r\n")
		if !(bytes.HasPrefix(head, []byte("data:")) || bytes.HasPrefix(head, []byte(":")) || bytes.HasPrefix(head, []byte("event:"))) {
			return readJSON(br)
		}
	}
	return readStream(br)
}

// readJSON decodes a non-streamed completion.
func readJSON(r io.Reader) (answer, error) {
	var c completion
	if err := json.NewDecoder(r).Decode(&c); err != nil {
		return answer{}, fmt.Errorf("%w: not a JSON completion: %v", errMalformed, err)
	}
	if msg := errorMessage(c.Error); msg != "" {
		return answer{}, fmt.Errorf("server error: %s", msg)
	}
	if len(c.Choices) == 0 || c.Choices[0].Message == nil {
		return answer{}, fmt.Errorf("%w: no choices", errMalformed)
	}
	var acc accumulator
	if err := acc.add(c.Choices[0].Message); err != nil {
		return answer{}, err
	}
	return acc.answer(), nil
}

// accumulator assembles an answer from a message or from stream deltas.
type accumulator struct {
	content strings.Builder
	calls   []toolCall
	// byIndex maps a delta's index to its call in calls.
	byIndex map[int]int
}

// add merges one message or delta.
func (a *accumulator) add(m *message) error {
	text, err := contentText(m.Content)
	if err != nil {
		return err
	}
	a.content.WriteString(text)
	for _, d := range m.ToolCalls {
		args, err := argumentsText(d.Function.Arguments)
		if err != nil {
			return err
		}
		i := a.callFor(d)
		c := &a.calls[i]
		if c.ID == "" {
			c.ID = d.ID
		}
		c.Name += d.Function.Name
		c.Arguments += args
	}
	return nil
}

// callFor finds or starts the call a delta belongs to: by index when the
// server sends one, else by ID, else the latest call (or a new one).
func (a *accumulator) callFor(d callDelta) int {
	if a.byIndex == nil {
		a.byIndex = make(map[int]int)
	}
	if d.Index != nil {
		if i, ok := a.byIndex[*d.Index]; ok {
			return i
		}
		a.calls = append(a.calls, toolCall{})
		a.byIndex[*d.Index] = len(a.calls) - 1
		return len(a.calls) - 1
	}
	for i, c := range a.calls {
		if d.ID != "" && c.ID == d.ID {
			return i
		}
	}
	if d.ID == "" && len(a.calls) > 0 {
		return len(a.calls) - 1
	}
	a.calls = append(a.calls, toolCall{})
	return len(a.calls) - 1
}

// answer is what was accumulated.
func (a *accumulator) answer() answer {
	return answer{content: a.content.String(), calls: a.calls}
}

// contentText reads a content field: a string, null, or an array of
// {"type":"text","text":…} parts.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("%w: content is neither text nor parts", errMalformed)
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "" {
			sb.WriteString(p.Text)
		}
	}
	return sb.String(), nil
}

// argumentsText reads a tool call's arguments: a JSON string (the
// standard), or an object servers send unencoded.
func argumentsText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%w: tool call arguments: %v", errMalformed, err)
		}
		return s, nil
	}
	return string(raw), nil
}

// errorMessage is the message of an error field: an object with
// "message", or a plain string; "" when there is none.
func errorMessage(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var e apiError
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		return e.Message
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s
	}
	return string(raw)
}

// stripThinking drops a leading <think>…</think> block, which reasoning
// models served through some servers put in the content.
func stripThinking(s string) string {
	t := strings.TrimLeft(s, " \t\r\n")
	if !strings.HasPrefix(t, "<think>") {
		return s
	}
	if _, after, ok := strings.Cut(t, "</think>"); ok {
		return after
	}
	return s
}
