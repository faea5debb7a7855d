package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// errTruncated is the cause of a stream that ended before it finished; it
// is retried like a dropped connection.
var errTruncated = errors.New("stream ended before the answer was finished")

// readStream reads a server-sent-events stream of completion chunks
// until "data: [DONE]". Comment lines, other fields and blank events are
// ignored; an event's data lines are joined with "\n" as SSE says. A
// stream that ends without [DONE] is accepted when a finish_reason came,
// and is errTruncated otherwise.
func readStream(br *bufio.Reader) (answer, error) {
	var acc accumulator
	var data []byte
	finished := false
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return answer{}, fmt.Errorf("%w: %w", errTruncated, err)
		}
		eof := err != nil
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 && line[0] != ':' { // ':' starts a keep-alive comment
			field, value, _ := bytes.Cut(line, []byte(":"))
			if string(field) == "data" {
				if data != nil {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(value, []byte(" "))...)
			}
		}
		// A blank line, or the end of the body, dispatches the event.
		if len(line) == 0 || eof {
			if len(data) > 0 {
				done, fin, err := apply(&acc, data)
				if err != nil {
					return answer{}, err
				}
				if done {
					return acc.answer(), nil
				}
				finished = finished || fin
			}
			data = nil
		}
		if eof {
			if finished {
				return acc.answer(), nil
			}
			return answer{}, errTruncated
		}
	}
}

// apply merges one event's data into acc; done reports [DONE], finished
// a finish_reason.
func apply(acc *accumulator, data []byte) (done, finished bool, err error) {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("[DONE]")) {
		return true, false, nil
	}
	var c completion
	if err := json.Unmarshal(data, &c); err != nil {
		// Not the chunk itself: it is the model's words.
		return false, false, fmt.Errorf("%w: a stream chunk of %d bytes: %v", errMalformed, len(data), err)
	}
	if msg := errorMessage(c.Error); msg != "" {
		return false, false, fmt.Errorf("server error in stream: %s", msg)
	}
	if len(c.Choices) == 0 {
		return false, false, nil // usage chunks and the like
	}
	ch := c.Choices[0] // only the first choice is used
	m := ch.Delta
	if m == nil {
		m = ch.Message // a server sending whole messages as chunks
	}
	if m != nil {
		if err := acc.add(m); err != nil {
			return false, false, err
		}
	}
	finished = ch.FinishReason != nil && *ch.FinishReason != ""
	return false, finished, nil
}
