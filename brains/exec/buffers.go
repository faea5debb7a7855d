package exec

import (
	"strings"
	"unicode/utf8"
)

// capped keeps at most max bytes written to it and notes an overflow
// instead of growing without bound.
type capped struct {
	max      int
	buf      []byte
	overflow bool
}

// Write keeps what fits and never fails, so the program is not killed by
// a broken pipe before its exit status is known.
func (c *capped) Write(p []byte) (int, error) {
	room := c.max - len(c.buf)
	if len(p) > room {
		c.overflow = true
		c.buf = append(c.buf, p[:max(room, 0)]...)
		return len(p), nil
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

// Bytes returns what was kept.
func (c *capped) Bytes() []byte { return c.buf }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max       int
	buf       []byte
	truncated bool
}

// Write appends p, dropping the oldest bytes beyond max. The buffer is
// compacted only once it holds twice max, so a chatty program costs
// amortised constant time a byte.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
		t.truncated = true
	}
	return len(p), nil
}

// String is the kept tail, trimmed of surrounding white space, with a
// leading "…" when earlier output was dropped.
func (t *tailBuffer) String() string {
	b := t.buf
	cut := t.truncated
	if len(b) > t.max {
		b, cut = b[len(b)-t.max:], true
	}
	s := strings.TrimSpace(tail(b, len(b)))
	if cut {
		s = "…" + s
	}
	return s
}

// tail is the last n bytes of b as text, starting on a rune boundary.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
