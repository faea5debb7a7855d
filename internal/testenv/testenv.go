// Package testenv ends a test that needs something this machine lacks:
// under CI=true that is a failure, since CI must have everything the
// tests need; elsewhere the test is skipped with the reason.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// Missing ends t for want of what reason names.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("required under CI=true: %s", reason)
	}
	t.Skipf("skipped (it fails under CI=true): %s", reason)
}
