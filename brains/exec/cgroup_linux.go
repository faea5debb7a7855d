package exec

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Each turn's cgroup is <the gateway's cgroup>/switchboard-exec/<pid>-
// <run>-<n>: pid and run (random per process) tell a live gateway's
// cgroups from those a crashed one left, which the probe removes.
//
// Finding the cgroup, creating, killing and removing it is done here by
// hand (about a hundred lines over /proc and cgroupfs) rather than with
// github.com/containerd/cgroups, whose manager would bring systemd, D-Bus
// and eBPF dependencies for the one feature used: cgroup.kill.

// cgroupParent is the directory, in the gateway's own cgroup, that holds
// the turns' cgroups.
const cgroupParent = "switchboard-exec"

// cgroupRemoveWait bounds the wait for a killed cgroup to empty before
// it is removed.
const cgroupRemoveWait = 5 * time.Second

var (
	// cgroupRun tells this process's cgroups from a previous process's
	// with the same pid.
	cgroupRun = func() string {
		var b [4]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	cgroupSeq atomic.Uint64
)

// ownCgroup returns the cgroup v2 directory that holds this process,
// from /proc/self/cgroup and /proc/self/mountinfo.
func ownCgroup() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	path, ok := "", false
	for line := range strings.Lines(string(data)) {
		if p, found := strings.CutPrefix(strings.TrimRight(line, "\n"), "0::"); found {
			path, ok = p, true
			break
		}
	}
	if !ok {
		return "", errors.New("this process is in no cgroup v2 hierarchy (cgroup v1 only)")
	}
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	return cgroup2Dir(info, path)
}

// cgroup2Dir finds, in a mountinfo table, the cgroup2 mount that shows
// the cgroup path and returns the cgroup's directory there.
func cgroup2Dir(mountinfo []byte, path string) (string, error) {
	for line := range bytes.Lines(mountinfo) {
		// id parent major:minor root mount-point options [optional…] - type source super-options
		f := strings.Fields(string(line))
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) || f[sep+1] != "cgroup2" {
			continue
		}
		root, mount := unescapeMount(f[3]), unescapeMount(f[4])
		rel, ok := strings.CutPrefix(path, root)
		if !ok || (rel != "" && root != "/" && !strings.HasPrefix(rel, "/")) {
			continue
		}
		return filepath.Join(mount, rel), nil
	}
	return "", errors.New("no cgroup2 mount shows this process's cgroup")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// probeCgroup makes the parent of the turns' cgroups, removes those a
// dead gateway left, and checks that a process can be cloned into a new
// cgroup that has cgroup.kill. It returns the parent.
func probeCgroup() (string, error) {
	own, err := ownCgroup()
	if err != nil {
		return "", err
	}
	const hint = "(run as root, or under systemd with Delegate=yes)"
	parent := filepath.Join(own, cgroupParent)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("cannot create %s %s: %w", parent, hint, err)
	}
	sweepCgroups(parent)
	tc, err := newTurnCgroup(parent)
	if err != nil {
		return "", fmt.Errorf("%w %s", err, hint)
	}
	defer tc.remove(nil)
	if _, err := os.Stat(filepath.Join(tc.dir, "cgroup.kill")); err != nil {
		return "", fmt.Errorf("the kernel has no cgroup.kill (Linux 5.14 or later needed): %w", err)
	}
	if err := probeSpawn(&syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: tc.fd}); err != nil {
		return "", fmt.Errorf("cloning a process into a cgroup (Linux 5.7 or later needed): %w", err)
	}
	return parent, nil
}

// sweepCgroups kills and removes the turns' cgroups under parent that
// no running gateway owns: those of a dead pid, or of this pid in an
// earlier process.
func sweepCgroups(parent string) {
	entries, _ := os.ReadDir(parent)
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		parts := strings.SplitN(e.Name(), "-", 3)
		if !e.IsDir() || len(parts) != 3 {
			continue
		}
		pid, err := strconv.Atoi(parts[0])
		if err != nil {
			continue
		}
		stale := parts[0] == self && parts[1] != cgroupRun
		if parts[0] != self {
			stale = syscall.Kill(pid, 0) == syscall.ESRCH
		}
		if stale {
			(&turnCgroup{dir: filepath.Join(parent, e.Name()), fd: -1}).remove(nil)
		}
	}
}

// turnCgroup is one turn's cgroup.
type turnCgroup struct {
	dir string
	// fd is the open directory the program is cloned into; -1 once
	// closed.
	fd int
}

// newTurnCgroup creates a cgroup for one turn under parent.
func newTurnCgroup(parent string) (*turnCgroup, error) {
	dir := filepath.Join(parent, fmt.Sprintf("%d-%s-%d", os.Getpid(), cgroupRun, cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup for the turn: %w", err)
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		syscall.Rmdir(dir)
		return nil, fmt.Errorf("cgroup for the turn: %w", err)
	}
	return &turnCgroup{dir: dir, fd: fd}, nil
}

// kill sends SIGKILL to every process in the cgroup, at once.
func (t *turnCgroup) kill() error {
	return os.WriteFile(filepath.Join(t.dir, "cgroup.kill"), []byte("1"), 0)
}

// remove kills what is left in the cgroup and removes it once it is
// empty, waiting at most cgroupRemoveWait. log may be nil.
func (t *turnCgroup) remove(log *slog.Logger) {
	if t.fd >= 0 {
		syscall.Close(t.fd)
		t.fd = -1
	}
	t.kill()
	deadline := time.Now().Add(cgroupRemoveWait)
	for {
		err := syscall.Rmdir(t.dir)
		if err == nil || err == syscall.ENOENT {
			return
		}
		if err != syscall.EBUSY || time.Now().After(deadline) {
			if log != nil {
				log.Warn("exec brain: turn cgroup not removed", "cgroup", t.dir, "err", err)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
