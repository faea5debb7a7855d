//go:build unix

package exec

import (
	osexec "os/exec"
	"syscall"
)

// ownGroup makes cmd lead a new process group and makes cancelling it
// kill the whole group, so children it spawned die with it.
func ownGroup(cmd *osexec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return killGroup(cmd.Process.Pid)
	}
}

// killGroup sends SIGKILL to the process group led by pid. A group
// already gone is not an error.
func killGroup(pid int) error {
	if pid <= 0 {
		return nil
	}
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}
