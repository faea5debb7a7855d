package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// AnonymousPrefix begins the platform ID of every anonymous web visitor
// (web-anon-<random>); no other platform ID has it.
const AnonymousPrefix = "web-anon-"

// GuestName is the name an anonymous web visitor goes by: "Guest " and
// four hexadecimal digits derived from the platform ID ("Guest 4F2A").
// The same visitor has the same name wherever they appear and for every
// person who sees them, across restarts; two visitors share one only by
// a 1-in-65,536 chance. ok is false for any other platform ID, which has
// no guest name.
func GuestName(platformID string) (name string, ok bool) {
	if !strings.HasPrefix(platformID, AnonymousPrefix) || len(platformID) == len(AnonymousPrefix) {
		return "", false
	}
	// A hash rather than the ID's own digits: the name says nothing of
	// the ID, and IDs that differ in one digit get unrelated names.
	sum := sha256.Sum256([]byte(platformID))
	return "Guest " + strings.ToUpper(hex.EncodeToString(sum[:2])), true
}
