//go:build unix && !linux

package exec

import (
	"log/slog"
	"os"
	osexec "os/exec"
	"syscall"
)

func probeContainment() Containment {
	root := os.Geteuid() == 0
	c := Containment{NoCgroup: "cgroups are Linux only", Root: root}
	if root {
		c.NoUserNS = "user namespaces are Linux only"
	}
	return c
}

// contain makes cmd lead a process group of its own, run as the brain's
// run_as user if it has one, and be killed with its whole group when ctx
// ends; the release it returns kills what is left of the group.
func (b *Brain) contain(cmd *osexec.Cmd) (func(*slog.Logger), error) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if b.account != nil {
		attr.Credential = b.account.credential()
	}
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	return func(*slog.Logger) {
		if cmd.Process != nil {
			killGroup(cmd.Process.Pid)
		}
	}, nil
}
