package brains

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ErrUnsafeName is the cause of every CheckArtifactName error.
var ErrUnsafeName = errors.New("not a plain file name")

// maxNameBytes is the longest file name Linux file systems take
// (NAME_MAX).
const maxNameBytes = 255

// CheckArtifactName accepts an artifact name that stays a single file in
// a working directory (SPEC §12: artifact names are file names, never
// paths). It refuses the empty name, ".", anything containing "..", "/",
// "\" or NUL, names over 255 bytes and, on any OS, names that are not
// local there (filepath.IsLocal). The error names the rule broken and
// wraps ErrUnsafeName. The gateway checks expected outputs with it when a
// hand-off is submitted, and the exec brain checks every name again
// before it touches the file system.
func CheckArtifactName(name string) error {
	var why string
	switch {
	case name == "":
		why = "it is empty"
	case name == ".":
		why = `"." is the directory itself`
	case strings.Contains(name, ".."):
		why = `it contains ".."`
	case strings.Contains(name, "/"):
		why = `it contains "/"`
	case strings.Contains(name, `\`):
		why = `it contains "\"`
	case strings.Contains(name, "\x00"):
		why = "it contains a NUL byte"
	case len(name) > maxNameBytes:
		why = fmt.Sprintf("it is longer than %d bytes", maxNameBytes)
	case !filepath.IsLocal(name):
		why = "it is not a local file name on this system"
	default:
		return nil
	}
	return fmt.Errorf("artifact name %q: %w (%s)", name, ErrUnsafeName, why)
}
