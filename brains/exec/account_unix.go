//go:build unix

package exec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// account is the user a brain's programs run as (brain.run_as).
type account struct {
	name     string
	uid, gid uint32
	// groups are the user's supplementary groups, the primary one
	// included.
	groups []uint32
	home   string
}

// lookupAccount finds run_as, a user name or a numeric user ID, in the
// system's user database.
func lookupAccount(spec string) (*account, error) {
	var u *user.User
	var err error
	if _, perr := strconv.ParseUint(spec, 10, 32); perr == nil {
		u, err = user.LookupId(spec)
	} else {
		u, err = user.Lookup(spec)
	}
	if err != nil {
		return nil, fmt.Errorf("run_as %s: %w", spec, err)
	}
	uid, uerr := strconv.ParseUint(u.Uid, 10, 32)
	gid, gerr := strconv.ParseUint(u.Gid, 10, 32)
	if uerr != nil || gerr != nil {
		return nil, fmt.Errorf("run_as %s: user ID %q or group ID %q is not a number", spec, u.Uid, u.Gid)
	}
	a := &account{name: u.Username, uid: uint32(uid), gid: uint32(gid), groups: []uint32{uint32(gid)}, home: u.HomeDir}
	// A user in no group file keeps its primary group alone.
	ids, _ := u.GroupIds()
	for _, s := range ids {
		if g, err := strconv.ParseUint(s, 10, 32); err == nil && !slices.Contains(a.groups, uint32(g)) {
			a.groups = append(a.groups, uint32(g))
		}
	}
	return a, nil
}

// checkRunAs refuses an account a process running as euid cannot
// switch to. It returns nil when a is that user, which needs no switch.
func checkRunAs(a *account, euid int) (*account, error) {
	switch {
	case a.uid == uint32(euid):
		return nil, nil
	case euid != 0:
		return nil, fmt.Errorf("run_as %s: switchboard runs as user ID %d, not root, so it cannot start programs as another user", a.name, euid)
	}
	return a, nil
}

// isRoot reports whether a is the superuser.
func (a *account) isRoot() bool { return a.uid == 0 }

// credential is a's identity for the program's SysProcAttr.
func (a *account) credential() *syscall.Credential {
	return &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: slices.Clone(a.groups)}
}

// canSearch reports whether a may pass through the directory fi
// describes (execute permission; ACLs are not consulted).
func (a *account) canSearch(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || a.uid == 0 {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == a.uid:
		return perm&0o100 != 0
	case slices.Contains(a.groups, st.Gid):
		return perm&0o010 != 0
	}
	return perm&0o001 != 0
}

// checkReach fails unless a can pass through every existing directory
// above root down to it, so a program started as a can enter its
// working directory. Directories not made yet are made passable.
func (a *account) checkReach(root string) error {
	abs, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("run_as %s: %w", a.name, err)
		case !a.canSearch(fi):
			return fmt.Errorf("run_as %s: the user cannot pass through %s (mode %04o) to reach its working directories: give it search permission (chmod o+x, or a group it is in) or move gateway.database", a.name, dir, fi.Mode().Perm())
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
	}
}

// owns reports whether fi is owned by a.
func (a *account) owns(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == a.uid && st.Gid == a.gid
}

// chownTree gives dir and everything under it to a, without following
// symlinks. It runs when a session's directory is not a's (run_as was
// added or changed), between turns, when no program of the session runs.
func (a *account) chownTree(dir string) error {
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(a.uid), int(a.gid))
	})
}

// chown gives the open file f to a.
func (a *account) chown(f *os.File) error {
	return f.Chown(int(a.uid), int(a.gid))
}
