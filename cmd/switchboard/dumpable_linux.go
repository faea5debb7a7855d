package main

import "golang.org/x/sys/unix"

// makeNonDumpable makes the gateway non-dumpable (SPEC §12): a process
// of the same user, such as a brain's program, can then neither read its
// /proc/<pid>/environ (every token) nor its memory, nor attach to it.
// Only a process with CAP_SYS_PTRACE (root's programs; see the exec
// brain's Containment) still can. It also means no core dumps.
func makeNonDumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
