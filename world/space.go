// Package world names the places where bots share what they learn
// (SPEC §10): spaces. A person's private space, user:<master id>, holds
// everything said in any of that person's private chats with any bot; a
// group chat has a space of its own, chat:<platform>:<chat id>, shared by
// its members. What lives in a space (findings now; context, insights
// later) is kept by the packages under world/, and nothing of a person's
// private space is ever shown to another person.
package world

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The kinds of Space.
const (
	KindUser = "user"
	KindChat = "chat"
)

// MaxSpaceLen is the longest space name Parse accepts, in bytes.
const MaxSpaceLen = 1024

// Space is one space: a person's, or a group chat's.
type Space struct {
	// Kind is KindUser or KindChat.
	Kind string
	// User is the person's master user ID (their platform ID when
	// users.yaml does not list them), for KindUser.
	User string
	// Platform and Chat place a group chat, for KindChat.
	Platform string
	Chat     string
}

// User is the private space of the person with user ID id.
func User(id string) Space { return Space{Kind: KindUser, User: id} }

// Chat is the space of a group chat.
func Chat(platform, chatID string) Space {
	return Space{Kind: KindChat, Platform: platform, Chat: chatID}
}

// String is the space's name: "user:<id>" or "chat:<platform>:<chat id>".
func (s Space) String() string {
	if s.Kind == KindChat {
		return KindChat + ":" + s.Platform + ":" + s.Chat
	}
	return KindUser + ":" + s.User
}

// IsZero reports whether s names no space.
func (s Space) IsZero() bool { return s == Space{} }

// ErrBadSpace is wrapped by Parse's errors.
var ErrBadSpace = errors.New("bad space")

// Parse reads a space's name, as String writes it. The platform is
// letters and digits; a chat ID may hold ':' (a terminal conversation's
// does), so everything after the platform's ':' is the chat ID.
func Parse(name string) (Space, error) {
	switch {
	case name == "":
		return Space{}, fmt.Errorf("%w: empty; use user:<user id> or chat:<platform>:<chat id>", ErrBadSpace)
	case len(name) > MaxSpaceLen:
		return Space{}, fmt.Errorf("%w: longer than %d bytes", ErrBadSpace, MaxSpaceLen)
	case !utf8.ValidString(name):
		return Space{}, fmt.Errorf("%w: not valid UTF-8", ErrBadSpace)
	}
	for _, r := range name {
		if r < ' ' || r == 0x7f {
			return Space{}, fmt.Errorf("%w: holds a control character", ErrBadSpace)
		}
	}
	kind, rest, _ := strings.Cut(name, ":")
	switch kind {
	case KindUser:
		if strings.TrimSpace(rest) == "" {
			return Space{}, fmt.Errorf("%w: %q names no user; use user:<user id>", ErrBadSpace, name)
		}
		return User(rest), nil
	case KindChat:
		platform, chatID, ok := strings.Cut(rest, ":")
		if !ok || platform == "" || strings.TrimSpace(chatID) == "" {
			return Space{}, fmt.Errorf("%w: %q; use chat:<platform>:<chat id>", ErrBadSpace, name)
		}
		for _, r := range platform {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
				return Space{}, fmt.Errorf("%w: %q is not a platform name", ErrBadSpace, platform)
			}
		}
		return Chat(platform, chatID), nil
	}
	return Space{}, fmt.Errorf("%w: %q is neither user:<user id> nor chat:<platform>:<chat id>", ErrBadSpace, name)
}
