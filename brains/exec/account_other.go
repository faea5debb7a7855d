//go:build !unix

package exec

import (
	"errors"
	"io/fs"
	"os"
)

// account is the user a brain's programs run as; brain.run_as is not
// supported on this system, so there never is one.
type account struct{ home string }

func lookupAccount(string) (*account, error) {
	return nil, errors.New("run_as is not supported on this system")
}

func checkRunAs(a *account, _ int) (*account, error) { return a, nil }
func (a *account) checkReach(string) error           { return nil }
func (a *account) isRoot() bool                      { return false }
func (a *account) owns(fs.FileInfo) bool             { return true }
func (a *account) chownTree(string) error            { return nil }
func (a *account) chown(*os.File) error              { return nil }
