package gateway

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/identity"
)

// MaxRoomName is the most characters (Unicode code points) a room name
// may have (SPEC §12).
const MaxRoomName = 100

// CheckRoomName refuses a room name that a person could not read as it
// is (SPEC §12), with an error matching ErrInvalidRequest: a blank name,
// one over MaxRoomName characters, one that is not UTF-8, one that starts
// or ends with a space, and one with a character that is not printed —
// control characters (Unicode Cc), line and paragraph separators, and
// format characters (Cf: the bidirectional overrides, embeddings,
// isolates and marks, zero-width spaces, the byte order mark…), except
// the zero-width joiner and the tag characters that emoji sequences use.
// A bidirectional override could make one room's name read as another's.
//
// It does not refuse names of the form of a private chat ID; see
// PrivateChatOwner.
func CheckRoomName(name string) error {
	switch {
	case name == "":
		return refuse(ErrInvalidRequest, "missing room name")
	case !utf8.ValidString(name):
		return refuse(ErrInvalidRequest, "the room name is not valid UTF-8")
	case utf8.RuneCountInString(name) > MaxRoomName:
		return refuse(ErrInvalidRequest, "the room name is longer than %d characters", MaxRoomName)
	}
	visible := false
	for _, r := range name {
		if hidden(r) {
			return refuse(ErrInvalidRequest, "the room name has an unprintable character (%U)", r)
		}
		if unicode.IsGraphic(r) && !unicode.IsSpace(r) {
			visible = true
		}
	}
	switch {
	case !visible:
		return refuse(ErrInvalidRequest, "the room name is blank")
	case strings.TrimSpace(name) != name:
		return refuse(ErrInvalidRequest, "the room name starts or ends with a space")
	}
	return nil
}

// hidden reports whether r is a character that is not printed, or that
// changes how the characters around it are shown (see CheckRoomName).
func hidden(r rune) bool {
	switch {
	case r == '\u200d', r >= 0xE0020 && r <= 0xE007F:
		return false // zero-width joiner and tags: parts of emoji
	case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
		return true
	case unicode.In(r, unicode.Zl, unicode.Zp):
		return true
	}
	return false
}

// PrivateChatOwner reports whether id has the form of a private chat ID,
// "<platform ID>:<bot>" with a platform ID of a known platform
// ("web-ann:matty", "cli-ann:matty"), and whose chat it would be. A room
// may not have such a name, so that it can never shadow a person's
// private chat. CLI group conversations ("cli:" and bot IDs) do not
// have that form.
func PrivateChatOwner(id string) (platformID string, ok bool) {
	pid, _, ok := SplitPrivateChatID(id)
	if !ok || identity.Platform(pid) == "" {
		return "", false
	}
	return pid, true
}

// userIDLike reports whether id may be a user ID: a master user ID or a
// platform ID is printable, has no space, and is at most maxUserID bytes.
func userIDLike(id string) bool {
	if id == "" || len(id) > maxUserID || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if unicode.IsSpace(r) || !unicode.IsGraphic(r) {
			return false
		}
	}
	return true
}

// maxUserID bounds a user ID given by a person (an invite's user).
const maxUserID = 256

// Refusal is a request the gateway turns down, with a message for the
// person who asked. It matches its Reason (ErrNotAllowed,
// ErrUnknownChat, ErrInvalidRequest, …) with errors.Is, so an adapter
// translates it to its own code and shows Message.
type Refusal struct {
	Reason  error
	Message string
}

func (r *Refusal) Error() string { return r.Message }

func (r *Refusal) Unwrap() error { return r.Reason }

// refuse returns a *Refusal for reason.
func refuse(reason error, format string, args ...any) error {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}
