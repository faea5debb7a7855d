package exec

import (
	"log/slog"
	"sync"
)

// Containment is what holds an exec brain's programs on this host. It is
// probed once per process, the first time it is asked for, and every
// brain uses the same answer.
//
// Every program leads a process group of its own. On Linux, when a
// writable cgroup v2 hierarchy holds the gateway, each turn also gets a
// cgroup of its own (the program is cloned straight into it), and
// ending the turn, by the program's exit, the timeout or a cancel,
// writes cgroup.kill: every process the turn started dies, including
// those that left the process group with setsid or a double fork.
// Without such a cgroup, only the process group is killed.
//
// When the gateway runs as root, the programs of bots without run_as
// run, where the kernel allows it, in a user namespace of their own that
// maps every user to itself: they keep root's access to files but hold
// no capability over processes outside it, so they cannot read the
// gateway's /proc environ or memory (root's CAP_SYS_PTRACE would
// otherwise ignore the gateway being non-dumpable).
type Containment struct {
	// Cgroup is the cgroup v2 directory under which each turn gets its
	// cgroup; empty when cgroups are not usable here.
	Cgroup string
	// NoCgroup says why Cgroup is empty.
	NoCgroup string
	// Root is true when the gateway runs as root.
	Root bool
	// UserNS is true when programs of a root gateway's bots without
	// run_as run in a user namespace of their own.
	UserNS bool
	// NoUserNS says why UserNS is false when Root is true.
	NoUserNS string
}

// Kill names what ending a turn kills: "cgroup" or "process group"
// ("process" where there are no process groups).
func (c Containment) Kill() string {
	switch {
	case c.Cgroup != "":
		return "cgroup"
	case processGroups:
		return "process group"
	}
	return "process"
}

// LogAttrs are c as log attributes, for the line that says at start what
// containment is in force.
func (c Containment) LogAttrs() []any {
	attrs := []any{"kill", c.Kill()}
	if c.Cgroup != "" {
		attrs = append(attrs, "cgroup", c.Cgroup)
	} else {
		attrs = append(attrs, "no_cgroup", c.NoCgroup)
	}
	attrs = append(attrs, "root", c.Root)
	if c.Root {
		attrs = append(attrs, "userns", c.UserNS)
		if !c.UserNS {
			attrs = append(attrs, "no_userns", c.NoUserNS)
		}
	}
	return attrs
}

// Log writes one line saying what containment is in force, at warning
// level when a child that detaches can outlive its turn.
func (c Containment) Log(log *slog.Logger) {
	if c.Cgroup != "" {
		log.Info("exec brains: containment", c.LogAttrs()...)
		return
	}
	log.Warn("exec brains: containment is the process group only; a program that calls setsid can outlive its turn", c.LogAttrs()...)
}

var (
	probeOnce sync.Once
	probed    Containment
)

// Probe returns this host's containment, probing it on the first call
// (probeContainment, per platform).
func Probe() Containment {
	probeOnce.Do(func() { probed = probeContainment() })
	return probed
}
