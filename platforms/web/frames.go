package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
)

// Limits of the widget protocol (SPEC §7).
const (
	maxFrameBytes   = 65536
	defaultHistory  = 50
	maxHistory      = 500
	maxClientIDLen  = 128
	framesPerSecond = 20
	frameBurst      = 40
)

// Error codes sent in error frames.
const (
	codeBadRequest  = "bad_request"
	codeUnknownBot  = "unknown_bot"
	codeUnknownChat = "unknown_chat"
	codeTooLarge    = "too_large"
	codeRateLimited = "rate_limited"
	codeNotAllowed  = "not_allowed"
	// codeUnavailable is sent when the gateway cannot take the frame now
	// (shutting down, storage failure); the client may retry.
	codeUnavailable = "unavailable"
)

// inFrame is any client → server frame.
type inFrame struct {
	Type     string   `json:"type"`
	Bot      string   `json:"bot,omitempty"`
	Chat     string   `json:"chat,omitempty"`
	Text     string   `json:"text,omitempty"`
	ClientID string   `json:"client_id,omitempty"`
	ReplyTo  int64    `json:"reply_to,omitempty"`
	Bots     []string `json:"bots,omitempty"`
	Limit    int      `json:"limit,omitempty"`
	// Open makes the room a join creates open to anyone (SPEC §12).
	Open bool `json:"open,omitempty"`
	// User is whom an invite adds: a master user ID or a platform ID.
	User string `json:"user,omitempty"`
}

// frameError is a refused frame: its code and message go back to the
// client in an error frame.
type frameError struct {
	Code     string
	Message  string
	ClientID string
}

func (e *frameError) Error() string { return e.Code + ": " + e.Message }

func badRequest(clientID, format string, args ...any) *frameError {
	return &frameError{Code: codeBadRequest, Message: fmt.Sprintf(format, args...), ClientID: clientID}
}

// decodeFrame parses and validates one client frame. Every failure is a
// *frameError with code bad_request.
func decodeFrame(data []byte) (inFrame, error) {
	var f inFrame
	if err := json.Unmarshal(data, &f); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) && strings.Contains(err.Error(), "after top-level value") {
			return f, badRequest("", "malformed JSON: more than one value in the frame")
		}
		return f, badRequest("", "malformed JSON: %v", err)
	}
	return checkFrame(f)
}

// checkFrame validates a decoded frame.
func checkFrame(f inFrame) (inFrame, error) {
	if len(f.ClientID) > maxClientIDLen {
		return f, badRequest("", "client_id longer than %d bytes", maxClientIDLen)
	}
	switch f.Type {
	case "send":
		switch {
		case (f.Bot == "") == (f.Chat == ""):
			return f, badRequest(f.ClientID, "send needs exactly one of bot or chat")
		case strings.TrimSpace(f.Text) == "":
			return f, badRequest(f.ClientID, "send needs a non-empty text")
		case !utf8.ValidString(f.Text):
			return f, badRequest(f.ClientID, "text is not valid UTF-8")
		}
	case "join":
	case "history":
		if (f.Bot == "") == (f.Chat == "") {
			return f, badRequest(f.ClientID, "history needs exactly one of bot or chat")
		}
		if f.Limit < 0 {
			return f, badRequest(f.ClientID, "limit must not be negative")
		}
	case "invite":
		if f.User == "" {
			return f, badRequest(f.ClientID, "invite needs a user")
		}
	case "findings", "context":
		if (f.Bot == "") == (f.Chat == "") {
			return f, badRequest(f.ClientID, "%s needs exactly one of bot or chat", f.Type)
		}
		if f.Limit < 0 {
			return f, badRequest(f.ClientID, "limit must not be negative")
		}
	case "":
		return f, badRequest(f.ClientID, "missing type")
	default:
		return f, badRequest(f.ClientID, "unknown type %q", f.Type)
	}
	if err := checkRoom(f); err != nil {
		return f, err
	}
	return f, nil
}

// checkRoom refuses a frame whose room name breaks the rules of SPEC
// §12 (gateway.CheckRoomName): a join, an invite, or a send or history
// with a chat. Whether the person may enter the room is the gateway's
// to say.
func checkRoom(f inFrame) error {
	if f.Type != "join" && f.Type != "invite" && f.Chat == "" {
		return nil // a send or history with bot
	}
	if f.Chat == "" {
		return badRequest(f.ClientID, "%s needs a chat", f.Type)
	}
	if err := gateway.CheckRoomName(f.Chat); err != nil {
		return badRequest(f.ClientID, "%v", err)
	}
	return nil
}

// Server → client frames.

type helloFrame struct {
	Type       string            `json:"type"`
	User       string            `json:"user"`
	PlatformID string            `json:"platform_id"`
	Token      string            `json:"token"`
	Bots       []gateway.BotInfo `json:"bots"`
}

type invitedFrame struct {
	Type string `json:"type"`
	Chat string `json:"chat"`
	User string `json:"user"`
}

type joinedFrame struct {
	Type string            `json:"type"`
	Chat string            `json:"chat"`
	Bots []gateway.BotInfo `json:"bots"`
}

type ackFrame struct {
	Type     string `json:"type"`
	ClientID string `json:"client_id"`
	ID       int64  `json:"id"`
	// Queued is set when the message starts a turn: the turns ahead of
	// it in its session, the running one included (SPEC §10.3).
	Queued *int `json:"queued,omitempty"`
}

type messageFrame struct {
	Type string `json:"type"`
	ID   int64  `json:"id"`
	Chat string `json:"chat"`
	// Platform is where the message was said when that is not the web
	// (a session's history spans platforms); ChatType is "group" when it
	// was said in a group chat or room. Both are left out otherwise.
	Platform   string          `json:"platform,omitempty"`
	ChatType   string          `json:"chat_type,omitempty"`
	Bot        string          `json:"bot,omitempty"`
	From       chat.Party      `json:"from"`
	Text       string          `json:"text"`
	Time       string          `json:"time"`
	Delegation *delegation.Ref `json:"delegation,omitempty"`
	// ReplyTo is the ID of the message this one answers; Failed marks
	// a failed turn's apology (docs/protocol.md).
	ReplyTo int64 `json:"reply_to,omitempty"`
	Failed  bool  `json:"failed,omitempty"`
	// Artifacts are the files shown with the message; left out when
	// there are none.
	Artifacts []artifactFrame `json:"artifacts,omitempty"`
}

// artifactFrame describes a file shown with a message; the page reads
// its content from GET /artifacts/{id} (artifacts.go).
type artifactFrame struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
}

// artifactFrames describes arts for a message frame (nil for none).
func artifactFrames(arts []chat.Artifact) []artifactFrame {
	var out []artifactFrame
	for _, a := range arts {
		out = append(out, artifactFrame{ID: a.ID, Name: a.Name, MediaType: a.MediaType, Size: a.Size})
	}
	return out
}

type delegationFrame struct {
	Type string `json:"type"`
	delegation.Ref
	// Chat is the chat the hand-off was asked in, when it is one of
	// this platform's (a room's name, or a private chat's ID).
	Chat string `json:"chat,omitempty"`
}

type typingFrame struct {
	Type string `json:"type"`
	Chat string `json:"chat"`
	Bot  string `json:"bot"`
}

type historyFrame struct {
	Type     string         `json:"type"`
	Chat     string         `json:"chat"`
	Bot      string         `json:"bot,omitempty"`
	Messages []messageFrame `json:"messages"`
}

type errorFrame struct {
	Type     string `json:"type"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	ClientID string `json:"client_id,omitempty"`
}

// frameOf renders a message of a chat's history for the widget.
func frameOf(m gateway.Shown) messageFrame {
	f := messageFrame{
		Type: "message", ID: m.ID, Chat: m.ChatID, ChatType: chatTypeField(m.ChatType), Bot: m.Bot, From: m.From,
		Text: m.Text, Time: m.Time.UTC().Format(time.RFC3339Nano), Delegation: m.Delegation,
		ReplyTo: m.ReplyToID, Failed: m.Failed, Artifacts: artifactFrames(m.Artifacts),
	}
	if m.Platform != gateway.PlatformWeb {
		f.Platform = m.Platform
	}
	return f
}

// chatTypeField is a message frame's chat_type: "group" for a group chat,
// nothing for a private one.
func chatTypeField(t chat.Type) string {
	if t == chat.Group {
		return string(chat.Group)
	}
	return ""
}
