// Package identity knows which platform accounts belong to one person. It
// maps platform IDs (telegram-123456, discord-789012, web-bryan, cli-ann)
// to master user IDs from users.yaml.
package identity

import (
	"fmt"
	"slices"
	"strings"
)

// User is one person as listed in users.yaml.
type User struct {
	// ID is the master user ID (user-bryan).
	ID   string
	Name string
	// Identities are the platform IDs that belong to the user.
	Identities []string
	// ShareWithOtherBots and Invisible are the user's effective privacy
	// settings.
	ShareWithOtherBots bool
	Invisible          bool
}

// IDs are every ID the user's records may be stored under: the master ID,
// then the platform IDs, each once.
func (u User) IDs() []string {
	ids := []string{u.ID}
	for _, id := range u.Identities {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Directory is an immutable index of users by platform ID. The zero value
// and nil are empty directories.
type Directory struct {
	users      []User
	byPlatform map[string]int
	byID       map[string]int
}

// NewDirectory indexes users. It fails when a platform ID is claimed by two
// users or a user ID repeats; configuration validation reports these
// earlier with file and line, so here they are a programming error guard.
func NewDirectory(users []User) (*Directory, error) {
	d := &Directory{
		users:      append([]User(nil), users...),
		byPlatform: make(map[string]int),
		byID:       make(map[string]int),
	}
	for i, u := range d.users {
		if _, dup := d.byID[u.ID]; dup {
			return nil, fmt.Errorf("identity: user %q listed twice", u.ID)
		}
		d.byID[u.ID] = i
		for _, p := range u.Identities {
			if j, dup := d.byPlatform[p]; dup {
				return nil, fmt.Errorf("identity: %s claimed by %s and %s", p, d.users[j].ID, u.ID)
			}
			d.byPlatform[p] = i
		}
	}
	return d, nil
}

// Resolve returns the user platformID belongs to. An unlisted platform ID
// resolves to itself with ok false: a stranger keeps working, without
// cross-platform continuity.
func (d *Directory) Resolve(platformID string) (u User, ok bool) {
	if d != nil {
		if i, found := d.byPlatform[platformID]; found {
			return d.users[i], true
		}
	}
	return User{ID: platformID, Identities: []string{platformID}, ShareWithOtherBots: true}, false
}

// User returns the user with master ID id, or the platform ID's stranger
// record when id is an unlisted platform ID.
func (d *Directory) User(id string) (User, bool) {
	if d != nil {
		if i, found := d.byID[id]; found {
			return d.users[i], true
		}
	}
	return d.Resolve(id)
}

// Users lists every listed user in configuration order.
func (d *Directory) Users() []User {
	if d == nil {
		return nil
	}
	return append([]User(nil), d.users...)
}

// Platform returns the platform part of a platform ID ("telegram" for
// "telegram-123"), or "" when the ID has no known platform prefix.
func Platform(platformID string) string {
	for _, p := range []string{"telegram", "discord", "web", "cli"} {
		if strings.HasPrefix(platformID, p+"-") && len(platformID) > len(p)+1 {
			return p
		}
	}
	return ""
}
