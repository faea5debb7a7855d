package exec

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboard-chat/switchboard/brains"
)

// Working directories. A session's directory is
// <root>/<readable prefix>-<32 hex digits>, the digits an HMAC-SHA256 of
// the session ID under a key kept in <root>/.workdir-key (0600, made on
// first use): a program that knows its own directory cannot derive
// another session's. The root is 0700, or 0711 with run_as so the
// program may pass through it to its own directory but not list it; a
// session's directory is 0700 and, with run_as, owned by that user.
const (
	sessionDirMode  = 0o700
	privateRootMode = 0o700
	sharedRootMode  = 0o711
	keyFile         = ".workdir-key"
	keySize         = 32
)

// workdir returns the session's working directory, creating it and the
// root as needed and setting their modes and owner.
func (b *Brain) workdir(log *slog.Logger, sessionID string) (string, error) {
	if err := b.makeRoot(); err != nil {
		return "", fmt.Errorf("exec brain: work root: %w", err)
	}
	dir, err := b.sessionDir(sessionID)
	if err != nil {
		return "", fmt.Errorf("exec brain: working directory: %w", err)
	}
	b.migrate(log, sessionID, dir)
	if err := os.Mkdir(dir, sessionDirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("exec brain: working directory: %w", err)
	}
	// A symlink planted in its place would send inputs elsewhere.
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("exec brain: working directory: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("exec brain: working directory %s is not a directory", dir)
	}
	if fi.Mode().Perm() != sessionDirMode {
		// The umask, or a program that opened its directory up.
		if err := os.Chmod(dir, sessionDirMode); err != nil {
			return "", fmt.Errorf("exec brain: working directory: %w", err)
		}
	}
	if b.account != nil && !b.account.owns(fi) {
		if err := b.account.chownTree(dir); err != nil {
			return "", fmt.Errorf("exec brain: working directory for run_as: %w", err)
		}
	}
	return dir, nil
}

// rootMode is the mode of the brain's work root.
func (b *Brain) rootMode() fs.FileMode {
	if b.account != nil {
		return sharedRootMode
	}
	return privateRootMode
}

// makeRoot creates the work root and the directories above it that are
// missing, each with rootMode whatever the umask, and sets the root's
// mode.
func (b *Brain) makeRoot() error {
	mode := b.rootMode()
	var missing []string
	for dir := b.root; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(dir); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, dir)
		if dir == filepath.Dir(dir) {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], mode); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := os.Chmod(missing[i], mode); err != nil {
			return err
		}
	}
	fi, err := os.Stat(b.root)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() != mode {
		return os.Chmod(b.root, mode)
	}
	return nil
}

// sessionDir is the path of the session's working directory.
func (b *Brain) sessionDir(sessionID string) (string, error) {
	key, err := b.dirKey()
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(sessionID))
	return filepath.Join(b.root, readablePrefix(sessionID)+"-"+hex.EncodeToString(mac.Sum(nil)[:16])), nil
}

// dirKey loads the key that names working directories, making it on
// first use. Two brains of one root (a reload) may race to make it: the
// key is written aside and linked into place, so one key wins and both
// read it.
func (b *Brain) dirKey() ([]byte, error) {
	b.keyMu.Lock()
	defer b.keyMu.Unlock()
	if b.key != nil {
		return b.key, nil
	}
	path := filepath.Join(b.root, keyFile)
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err = b.makeRoot(); err == nil {
			err = makeKey(path)
		}
		if err == nil {
			key, err = os.ReadFile(path)
		}
	}
	if err != nil {
		return nil, err
	}
	if len(key) != keySize {
		return nil, fmt.Errorf("%s is not a %d-byte key: delete it to make a new one (sessions then start in new directories)", path, keySize)
	}
	b.key = key
	return key, nil
}

// makeKey writes a random key at path unless one is there already.
func makeKey(path string) error {
	key := make([]byte, keySize)
	rand.Read(key)
	f, err := os.CreateTemp(filepath.Dir(path), keyFile+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(key)
	if err := errors.Join(f.Chmod(0o600), werr, f.Close()); err != nil {
		return err
	}
	if err := os.Link(f.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// migrate renames the directory an earlier version named after the
// session ID itself (legacyDirName) to dir, so the session keeps its
// files.
func (b *Brain) migrate(log *slog.Logger, sessionID, dir string) {
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	old := filepath.Join(b.root, legacyDirName(sessionID))
	if fi, err := os.Lstat(old); err != nil || !fi.IsDir() {
		return
	}
	if err := os.Rename(old, dir); err != nil {
		log.Warn("exec brain: working directory not renamed to its new name; the session starts in a new one", "err", err)
		return
	}
	log.Info("exec brain: working directory renamed to its unguessable name")
}

// readablePrefix is the start of a working directory's name: the
// session ID's letters, digits, '.', '_' and '-', others replaced by
// '_', without leading dots, at most 40 bytes; "session" if that leaves
// nothing. It helps an operator find a directory and is not secret.
func readablePrefix(id string) string {
	var sb strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
		if sb.Len() >= 40 {
			break
		}
	}
	name := strings.TrimLeft(sb.String(), ".")
	if name == "" {
		name = "session"
	}
	return name
}

// legacyDirName is the name earlier versions gave a session's directory.
// IDs made of letters, digits, '.', '_' and '-' were kept as they are;
// others got their other characters replaced and a hash of the ID
// appended.
func legacyDirName(id string) string {
	var sb strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
	}
	name := sb.String()
	if name == id && id != "" && !strings.HasPrefix(id, ".") && len(id) <= 128 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	name = strings.TrimLeft(name, ".")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		name = "session"
	}
	return name + "-" + hex.EncodeToString(sum[:6])
}

// errUnsafeName is the cause for artifact names that are not a plain
// file name.
var errUnsafeName = brains.ErrUnsafeName

// checkName accepts a name that stays a single file in the working
// directory, by the rule the gateway applies at submission
// (brains.CheckArtifactName): no separators, no "..", no NUL, not empty.
func checkName(name string) error { return brains.CheckArtifactName(name) }

// writeFile puts content at dir/name through a temporary file and a
// rename, so a symlink the program left under that name is replaced, not
// followed. With run_as (acc not nil) the file is given to that user.
func writeFile(dir, name string, content []byte, acc *account) error {
	f, err := os.CreateTemp(dir, ".input-*")
	if err != nil {
		return err
	}
	// 0600 whatever the umask; with run_as, the user's.
	oerr := f.Chmod(0o600)
	if acc != nil && oerr == nil {
		oerr = acc.chown(f)
	}
	_, werr := f.Write(content)
	cerr := f.Close()
	if err = errors.Join(oerr, werr, cerr); err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
