package gateway

import "unicode/utf8"

// UTF16Span converts a span given in UTF-16 code units (as Telegram's
// message entities are) into byte offsets into text. ok is false when the
// span does not fall on character boundaries inside text.
func UTF16Span(text string, offset, length int) (start, end int, ok bool) {
	if offset < 0 || length < 0 {
		return 0, 0, false
	}
	start, end = -1, -1
	units := 0
	for i, r := range text {
		if units == offset {
			start = i
		}
		if units == offset+length {
			end = i
			break
		}
		if r == utf8.RuneError {
			// Invalid UTF-8 counts as one unit, as encoders replace it.
			units++
			continue
		}
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
	}
	if units == offset && start < 0 {
		start = len(text)
	}
	if end < 0 && units == offset+length {
		end = len(text)
	}
	if start < 0 || end < 0 || end < start {
		return 0, 0, false
	}
	return start, end, true
}
