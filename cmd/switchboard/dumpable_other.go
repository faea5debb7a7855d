//go:build !linux

package main

// makeNonDumpable does nothing outside Linux: there, programs of the
// gateway's own user may read its environment (macOS's ps -E, for one),
// and brain.run_as is what keeps an exec brain's programs out of it.
func makeNonDumpable() error { return nil }
