package web

import (
	"strconv"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// The two frames every message costs, the sender's ack and the bot's
// message, are encoded by hand: encoding/json's reflection was a few
// percent of the gateway's CPU under load. The bytes are exactly what
// websocket.Conn.WriteJSON wrote for them (encoding/json with HTML
// escaping, then a newline); TestAppendJSON and FuzzAppendJSONString
// hold the two to each other. Every other frame still goes through
// WriteJSON.

// jsonAppender is a frame that encodes itself.
type jsonAppender interface {
	appendJSON(dst []byte) []byte
}

// writeFrame writes one frame, by hand if it can encode itself; buf is
// reused between frames.
func writeFrame(ws *websocket.Conn, v any, buf *[]byte) error {
	a, ok := v.(jsonAppender)
	if !ok {
		return ws.WriteJSON(v)
	}
	*buf = append(a.appendJSON((*buf)[:0]), '\n')
	err := ws.WriteMessage(websocket.TextMessage, *buf)
	if cap(*buf) > 8<<10 {
		*buf = nil // a large frame's buffer is not kept
	}
	return err
}

func (f ackFrame) appendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = appendJSONString(b, f.Type)
	b = append(b, `,"client_id":`...)
	b = appendJSONString(b, f.ClientID)
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, f.ID, 10)
	return append(b, '}')
}

func (f messageFrame) appendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = appendJSONString(b, f.Type)
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, f.ID, 10)
	b = append(b, `,"chat":`...)
	b = appendJSONString(b, f.Chat)
	if f.Bot != "" {
		b = append(b, `,"bot":`...)
		b = appendJSONString(b, f.Bot)
	}
	b = append(b, `,"from":{"kind":`...)
	b = appendJSONString(b, f.From.Kind)
	b = append(b, `,"id":`...)
	b = appendJSONString(b, f.From.ID)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, f.From.Name)
	b = append(b, `},"text":`...)
	b = appendJSONString(b, f.Text)
	b = append(b, `,"time":`...)
	b = appendJSONString(b, f.Time)
	if d := f.Delegation; d != nil {
		b = append(b, `,"delegation":{"id":`...)
		b = appendJSONString(b, d.ID)
		b = append(b, `,"from_bot":`...)
		b = appendJSONString(b, d.From)
		b = append(b, `,"to_bot":`...)
		b = appendJSONString(b, d.To)
		b = append(b, `,"task":`...)
		b = appendJSONString(b, d.Task)
		b = append(b, `,"status":`...)
		b = appendJSONString(b, d.Status)
		b = append(b, `,"depth":`...)
		b = strconv.AppendInt(b, int64(d.Depth), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string the way encoding/json
// writes one with HTML escaping on: <, > and & and control characters as
// \u00XX (but \b \f \n \r \t), invalid UTF-8 as \ufffd, and U+2028 and
// U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
