package exec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/brains/prompt"
)

// The artifact chain's files (SPEC §10.7). A turn whose space has an
// artifact chain finds the outputs of its steps as files under
// artifacts/ (prompt.ArtifactsDir) in its working directory, the newest
// output of each name. The gateway owns that directory: each turn it is
// built afresh beside the old one and renamed into its place, so a file
// of an older chain, or one the program put there, never lingers; a
// turn without chain outputs has none. Nothing under it is ever
// collected as an output (expected outputs are plain names in the
// working directory itself).
const (
	// artifactsDir is the directory's name in the working directory.
	artifactsDir = prompt.ArtifactsDir
	// stagingPrefix starts the names of the directories a turn builds
	// the new one in and moves the old one to before removing it. A
	// crash may leave them; the next turn removes them.
	stagingPrefix = ".switchboard-artifacts-"
)

// placeArtifacts makes dir's artifacts/ hold the outputs of the chain
// of c, read through files, and nothing else. An output whose name is a
// path, or whose content cannot be read, is logged and left out; an
// error means the directory could not be set up.
//
// Every step goes through an os.Root of dir and never follows a
// symlink the program left: an artifacts/ that is a symlink is moved
// aside and removed as a link. Files are 0600 and directories 0700
// whatever the umask, and with run_as both are the user's.
func (b *Brain) placeArtifacts(ctx context.Context, log *slog.Logger, dir string, c *brains.SharedContext, files brains.Files) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("exec brain: artifacts: %w", err)
	}
	defer root.Close()
	removeStaging(log, root)

	var outs []brains.Artifact
	for _, a := range c.Outputs() {
		if err := checkName(a.Name); err != nil {
			log.Warn("exec brain: chain output not written", "err", err)
			continue
		}
		outs = append(outs, a)
	}
	if len(outs) == 0 {
		return retire(log, root)
	}

	staging := stagingPrefix + randomHex()
	if err := b.fillDir(ctx, log, root, staging, outs, files); err != nil {
		if rerr := root.RemoveAll(staging); rerr != nil {
			log.Warn("exec brain: artifacts staging directory not removed", "dir", staging, "err", rerr)
		}
		return fmt.Errorf("exec brain: artifacts: %w", err)
	}
	if err := retire(log, root); err != nil {
		root.RemoveAll(staging)
		return err
	}
	if err := root.Rename(staging, artifactsDir); err != nil {
		root.RemoveAll(staging)
		return fmt.Errorf("exec brain: artifacts: %w", err)
	}
	return nil
}

// fillDir makes the directory name in root and writes outs into it,
// skipping those files cannot read.
func (b *Brain) fillDir(ctx context.Context, log *slog.Logger, root *os.Root, name string, outs []brains.Artifact, files brains.Files) error {
	if err := root.Mkdir(name, sessionDirMode); err != nil {
		return err
	}
	sub, err := root.OpenRoot(name)
	if err != nil {
		return err
	}
	defer sub.Close()
	d, err := sub.Open(".")
	if err != nil {
		return err
	}
	// Through the open directory, not its name: the mode whatever the
	// umask, and with run_as the owner.
	err = d.Chmod(sessionDirMode)
	if b.account != nil && err == nil {
		err = b.account.chown(d)
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for _, a := range outs {
		if files == nil {
			log.Warn("exec brain: chain output not written: the turn reads no artifacts", "name", a.Name, "artifact", a.ID)
			continue
		}
		content, err := files.ReadFile(ctx, a.ID)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			log.Warn("exec brain: chain output not written: its content cannot be read", "name", a.Name, "artifact", a.ID, "err", err)
			continue
		}
		if err := b.createFile(sub, a.Name, content); err != nil {
			return fmt.Errorf("write %s: %w", a.Name, err)
		}
	}
	return nil
}

// createFile writes content to a new file name in root: 0600, the
// run_as user's.
func (b *Brain) createFile(root *os.Root, name string, content []byte) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = f.Chmod(0o600)
	if b.account != nil && err == nil {
		err = b.account.chown(f)
	}
	if err == nil {
		_, err = f.Write(content)
	}
	return errors.Join(err, f.Close())
}

// retire removes root's artifacts/, whatever it is: it is first renamed
// aside, so that even when part of it cannot be removed (a program may
// have taken the permissions off a directory of it), the name is free
// and no stale file is found under it. What stays behind is logged and
// tried again next turn.
func retire(log *slog.Logger, root *os.Root) error {
	if _, err := root.Lstat(artifactsDir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	old := stagingPrefix + "old-" + randomHex()
	if err := root.Rename(artifactsDir, old); err != nil {
		return fmt.Errorf("exec brain: artifacts: move the old directory aside: %w", err)
	}
	if err := root.RemoveAll(old); err != nil {
		log.Warn("exec brain: old artifacts directory not removed", "dir", old, "err", err)
	}
	return nil
}

// removeStaging removes what an earlier turn that did not finish left
// under stagingPrefix names.
func removeStaging(log *slog.Logger, root *os.Root) {
	d, err := root.Open(".")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if !strings.HasPrefix(n, stagingPrefix) {
			continue
		}
		if err := root.RemoveAll(n); err != nil {
			log.Warn("exec brain: old artifacts directory not removed", "dir", n, "err", err)
		}
	}
}

// randomHex is 16 random hex digits, for names no program can guess.
func randomHex() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
