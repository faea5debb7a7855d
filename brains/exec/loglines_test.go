package exec

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// logLines captures a brain's log at debug level, one line a record.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// above returns the lines above debug level that contain s.
func (l *logLines) above(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.Lines(l.buf.String()) {
		if !strings.Contains(line, "level=DEBUG") && strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// has reports whether any line contains every one of parts.
func (l *logLines) has(parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for line := range strings.Lines(l.buf.String()) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
