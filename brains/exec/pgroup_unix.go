//go:build unix

package exec

import "syscall"

// processGroups is true where a program can lead a process group.
const processGroups = true

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
