//go:build !unix

package exec

import (
	"log/slog"
	osexec "os/exec"
)

// processGroups is false where process groups are not supported:
// cancelling kills the program alone (os/exec's default), not its
// children.
const processGroups = false

func probeContainment() Containment {
	return Containment{NoCgroup: "cgroups are Linux only"}
}

// contain does nothing here: the program is killed alone.
func (b *Brain) contain(*osexec.Cmd) (func(*slog.Logger), error) {
	return func(*slog.Logger) {}, nil
}
