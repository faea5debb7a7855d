package exec

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboard-chat/switchboard/brains"
)

// workdir returns the session's working directory under the brain's
// root, creating both with mode 0700 as needed.
func (b *Brain) workdir(sessionID string) (string, error) {
	if err := os.MkdirAll(b.root, 0o700); err != nil {
		return "", fmt.Errorf("exec brain: work root: %w", err)
	}
	dir := filepath.Join(b.root, dirName(sessionID))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
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
	return dir, nil
}

// dirName turns a session ID into one safe path element. IDs made of
// letters, digits, '.', '_' and '-' are kept as they are; others get
// their other characters replaced and a hash of the ID appended, so two
// IDs never share a directory.
func dirName(id string) string {
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
// followed.
func writeFile(dir, name string, content []byte) error {
	f, err := os.CreateTemp(dir, ".input-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(content)
	cerr := f.Close()
	if err = errors.Join(werr, cerr); err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
