//go:build !unix

package exec

import osexec "os/exec"

// ownGroup is a no-op where process groups are not supported: cancelling
// kills the program alone (os/exec's default), not its children.
func ownGroup(*osexec.Cmd) {}

// killGroup does nothing where process groups are not supported.
func killGroup(int) error { return nil }
