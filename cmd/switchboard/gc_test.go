package main

import (
	"runtime/debug"
	"testing"
)

// TestTuneGC: serving sets the collector's target to gcPercent, unless
// the operator's GOGC has set one.
func TestTuneGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	tests := []struct {
		name, gogc string
		applied    bool
		want       int
	}{
		{"unset", "", true, gcPercent},
		{"set by the operator", "50", false, 100},
		{"off", "off", false, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			getenv := func(k string) string {
				if k == "GOGC" {
					return tc.gogc
				}
				return ""
			}
			if got := tuneGC(getenv); got != tc.applied {
				t.Errorf("tuneGC = %v, want %v", got, tc.applied)
			}
			if got := debug.SetGCPercent(100); got != tc.want {
				t.Errorf("GC percent = %d, want %d", got, tc.want)
			}
		})
	}
}
