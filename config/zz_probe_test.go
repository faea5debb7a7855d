package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestZZBots(t *testing.T) {
	for _, n := range []int{100_000, 200_000, 400_000} {
		var s strings.Builder
		s.WriteString("bots:\n")
		for i := 0; s.Len() < n; i++ {
			fmt.Fprintf(&s, "  - id: b%d\n    brain: {kind: script, default: hi}\n", i)
		}
		st := time.Now()
		parse("/tmp", []byte(s.String()), []byte("users: []\n"))
		t.Log(n, time.Since(st))
	}
}
