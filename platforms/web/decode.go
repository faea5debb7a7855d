package web

import (
	"strconv"
	"unicode/utf8"
)

// Every message a visitor sends arrives as a frame that json.Unmarshal
// decoded by reflection, a few percent of the gateway's CPU under load.
// scanFrame decodes the usual shape of a frame without it: one object
// whose keys are inFrame's own names, spelt as its tags spell them, each
// once, with string values free of escapes and control characters and
// integer values in plain decimal. Anything else (a key in other case, an
// escape, an array, null, a duplicate, whitespace anywhere but between
// tokens, …) makes it give up, and the frame goes to json.Unmarshal as
// before. FuzzScanFrame holds what it decodes to what json.Unmarshal
// makes of the same bytes.

// scanFrame decodes data into f; ok is false when it gave up (f is then
// unspecified).
func scanFrame(data []byte, f *inFrame) (ok bool) {
	s := scanner{b: data}
	if !s.byte('{') {
		return false
	}
	var (
		seen  uint8
		limit int64 // f.Limit, read as any integer and checked at the end
	)
	if s.byte('}') {
		return s.end()
	}
	for {
		key, ok := s.str()
		if !ok || !s.byte(':') {
			return false
		}
		// Each key once: bit marks it seen. A string field's value goes
		// to str, an integer's to num.
		var (
			bit uint8
			str *string
			num *int64
		)
		switch key {
		case "type":
			bit, str = 1<<0, &f.Type
		case "bot":
			bit, str = 1<<1, &f.Bot
		case "chat":
			bit, str = 1<<2, &f.Chat
		case "text":
			bit, str = 1<<3, &f.Text
		case "client_id":
			bit, str = 1<<4, &f.ClientID
		case "reply_to":
			bit, num = 1<<5, &f.ReplyTo
		case "limit":
			bit, num = 1<<6, &limit
		default:
			return false
		}
		if str != nil {
			*str, ok = s.str()
		} else {
			*num, ok = s.int()
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if s.byte('}') {
			f.Limit = int(limit)
			return int64(f.Limit) == limit && s.end()
		}
		if !s.byte(',') {
			return false
		}
	}
}

// scanner reads JSON tokens from b.
type scanner struct {
	b []byte
	i int
}

// space skips JSON whitespace.
func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte consumes c (after whitespace) if it comes next.
func (s *scanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only whitespace is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// str reads a string without escapes, control characters or invalid
// UTF-8.
func (s *scanner) str() (string, bool) {
	if !s.byte('"') {
		return "", false
	}
	start, ascii := s.i, true
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(v) {
				return "", false
			}
			return string(v), true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// int reads an integer in plain decimal: an optional minus and digits,
// without a leading zero.
func (s *scanner) int() (int64, bool) {
	s.space()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == digits || s.b[digits] == '0' && s.i-digits > 1 {
		return 0, false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	return n, err == nil
}
