package exec

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	osexec "os/exec"
	"syscall"
)

// identityMap maps every user or group ID to itself, so a program in a
// user namespace of its own keeps its files' owners and its access to
// them. (On 32-bit systems, where Size is 32 bits, IDs from 2^31 up stay
// unmapped.)
var identityMap = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: int(min(idSpan, math.MaxInt))}}

// idSpan is the number of user or group IDs, 0 to 2^32-2.
var idSpan uint64 = 1<<32 - 1

// userNSAttr is the part of SysProcAttr that puts a program in a user
// namespace of its own, mapped to itself.
func userNSAttr(attr *syscall.SysProcAttr) {
	attr.Cloneflags |= syscall.CLONE_NEWUSER
	attr.UidMappings = identityMap
	attr.GidMappings = identityMap
	attr.GidMappingsEnableSetgroups = true
}

// probeContainment finds what this host allows: a cgroup per turn, and
// for a root gateway a user namespace per program, each tried by really
// starting a process with it.
func probeContainment() Containment {
	c := Containment{Root: os.Geteuid() == 0}
	var err error
	if c.Cgroup, err = probeCgroup(); err != nil {
		c.NoCgroup = err.Error()
	}
	if !c.Root {
		return c
	}
	attr := &syscall.SysProcAttr{}
	userNSAttr(attr)
	if err := probeSpawn(attr); err != nil {
		c.NoUserNS = fmt.Sprintf("a user namespace per program is refused here: %v", err)
		return c
	}
	if c.Cgroup != "" {
		// Both at once, as a turn uses them.
		tc, err := newTurnCgroup(c.Cgroup)
		if err == nil {
			attr.UseCgroupFD, attr.CgroupFD = true, tc.fd
			err = probeSpawn(attr)
			tc.remove(nil)
		}
		if err != nil {
			c.NoUserNS = fmt.Sprintf("a user namespace with a cgroup per turn is refused here: %v", err)
			return c
		}
	}
	c.UserNS = true
	return c
}

// probeSpawn starts a process with attr that fails at exec: ENOTDIR
// from execve (the path runs through /dev/null) proves the kernel set
// up everything attr asks for, and the failed child is reaped by
// ForkExec.
func probeSpawn(attr *syscall.SysProcAttr) error {
	_, err := syscall.ForkExec("/dev/null/switchboard-probe", []string{"switchboard-probe"}, &syscall.ProcAttr{Sys: attr})
	if errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err == nil {
		return errors.New("the probe started")
	}
	return err
}

// contain sets cmd up to run contained: the leader of a process group of
// its own; as the brain's run_as user, or for a root gateway without one
// in a user namespace of its own (Containment.UserNS); cloned into a
// cgroup of its own when the host allows (Containment.Cgroup). Ending ctx
// kills the cgroup and the group; the release it returns, called once
// the program has exited, kills whatever is left and removes the cgroup.
func (b *Brain) contain(cmd *osexec.Cmd) (func(*slog.Logger), error) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	switch {
	case b.account != nil:
		attr.Credential = b.account.credential()
	case b.userNS:
		userNSAttr(attr)
	}
	var tc *turnCgroup
	if b.cgroup != "" {
		var err error
		if tc, err = newTurnCgroup(b.cgroup); err != nil {
			return nil, err
		}
		attr.UseCgroupFD, attr.CgroupFD = true, tc.fd
	}
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error {
		if tc != nil {
			tc.kill()
		}
		return killGroup(cmd.Process.Pid)
	}
	return func(log *slog.Logger) {
		if cmd.Process != nil {
			killGroup(cmd.Process.Pid)
		}
		if tc != nil {
			tc.remove(log)
		}
	}, nil
}
