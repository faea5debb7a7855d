package config

// Users is the content of users.yaml.
type Users struct {
	// Defaults apply to every user that does not override them. After Load
	// both privacy pointers are set.
	Defaults UserDefaults `yaml:"defaults"`
	// Users lists the known people in file order.
	Users []User `yaml:"users"`
}

// UserDefaults is users.yaml's defaults section.
type UserDefaults struct {
	// Privacy applies to users who do not set their own.
	Privacy Privacy `yaml:"privacy"`
}

// User is one person with their platform identities.
type User struct {
	// ID is the master user ID, unique in the file.
	ID string `yaml:"id"`
	// Name is the display name (default: ID).
	Name string `yaml:"name"`
	// Identities are platform IDs (telegram-<id>, discord-<id>, web-<id>,
	// cli-<name>) that resolve to this user; each belongs to one user.
	Identities []string `yaml:"identities"`
	// Privacy overrides the defaults where set.
	Privacy Privacy `yaml:"privacy"`
}

// Privacy holds cross-bot privacy settings. A nil field is not set and
// falls back to the defaults.
type Privacy struct {
	// ShareWithOtherBots lets gossip and shared artifacts mention the user
	// (default true).
	ShareWithOtherBots *bool `yaml:"share_with_other_bots"`
	// Invisible hides the user from every cross-bot feature (default false).
	Invisible *bool `yaml:"invisible"`
}

// EffectivePrivacy resolves the user's privacy: the user's own setting,
// else def's, else share true and invisible false.
func (u User) EffectivePrivacy(def Privacy) (share, invisible bool) {
	return pick(u.Privacy.ShareWithOtherBots, def.ShareWithOtherBots, true),
		pick(u.Privacy.Invisible, def.Invisible, false)
}

// User returns the user with the given master ID.
func (us Users) User(id string) (User, bool) {
	for _, u := range us.Users {
		if u.ID == id {
			return u, true
		}
	}
	return User{}, false
}

// ByIdentity returns the user who claims the platform ID.
func (us Users) ByIdentity(platformID string) (User, bool) {
	for _, u := range us.Users {
		for _, id := range u.Identities {
			if id == platformID {
				return u, true
			}
		}
	}
	return User{}, false
}

// pick returns the first non-nil of own and def, else fallback.
func pick(own, def *bool, fallback bool) bool {
	switch {
	case own != nil:
		return *own
	case def != nil:
		return *def
	}
	return fallback
}
