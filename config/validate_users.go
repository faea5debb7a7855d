package config

import (
	"fmt"
	"regexp"
	"strings"
)

// identityRE matches the platform IDs users.yaml may list: Telegram and
// Discord use the platforms' numeric user IDs; web and cli names may not
// hold spaces or ':' (which separates the bot in web chat IDs).
var identityRE = regexp.MustCompile(`^((telegram|discord)-[0-9]+|(web|cli)-[^\s:]+)$`)

// validateUsers checks user IDs and that each identity is well formed and
// claimed by one user only.
func validateUsers(r *report, us *Users) {
	ids := map[string]int{}        // user ID → index of its first use
	claimed := map[string]string{} // identity → key path of its first claim
	for i, u := range us.Users {
		key := fmt.Sprintf("users[%d]", i)
		switch first, dup := ids[u.ID]; {
		case u.ID == "":
			r.errorf(key+".id", "required")
		case strings.IndexFunc(u.ID, isSpace) >= 0:
			r.errorf(key+".id", "%q must not contain spaces", u.ID)
		case dup:
			r.errorf(key+".id", "duplicate user id %q (also users[%d])", u.ID, first)
		default:
			ids[u.ID] = i
		}
		for j, id := range u.Identities {
			k := fmt.Sprintf("%s.identities[%d]", key, j)
			if !identityRE.MatchString(id) {
				r.errorf(k, "%q is not a platform ID: use telegram-<number>, discord-<number>, web-<id> or cli-<name>", id)
				continue
			}
			if first, ok := claimed[id]; ok {
				r.errorf(k, "identity %q is already claimed by %s", id, first)
				continue
			}
			claimed[id] = fmt.Sprintf("%s (%s)", orKey(u.ID, key), k)
		}
	}
}

// orKey returns id, or key when the id is missing.
func orKey(id, key string) string {
	if id == "" {
		return key
	}
	return "user " + id
}

// isSpace reports the characters a user ID may not contain.
func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }
