package web

import (
	"context"
	"errors"

	"github.com/switchboard-chat/switchboard/gateway"
)

// handleInvite adds a member to a room (SPEC §12): invite {chat, user}
// from a member is answered invited {chat, user}. The invited person is
// told nothing now; their next join of the room succeeds.
func (c *conn) handleInvite(ctx context.Context, f inFrame) error {
	if err := c.host.InviteToRoom(ctx, c.v.platform, f.Chat, c.v.platformID, f.User); err != nil {
		return c.refusal("invite", err, f.ClientID)
	}
	c.send(invitedFrame{Type: "invited", Chat: f.Chat, User: f.User})
	return nil
}

// refusal turns what the gateway answered a frame with into the error
// frame the client gets, naming the frame's client_id. A failure that is
// not a refusal is logged, and the client may retry (unavailable).
func (c *conn) refusal(what string, err error, clientID string) *frameError {
	fe := &frameError{Message: err.Error(), ClientID: clientID}
	var r *gateway.Refusal
	if errors.As(err, &r) {
		fe.Message = r.Message
	}
	switch {
	case errors.Is(err, gateway.ErrNotAllowed):
		fe.Code = codeNotAllowed
	case errors.Is(err, gateway.ErrUnknownChat):
		fe.Code = codeUnknownChat
	case errors.Is(err, gateway.ErrInvalidRequest), errors.Is(err, gateway.ErrInvalidEvent):
		fe.Code = codeBadRequest
	case errors.Is(err, gateway.ErrUnknownBot):
		fe.Code = codeUnknownBot
	default:
		c.a.log.Error(what, "platform_id", c.v.platformID, "err", err)
		fe.Code, fe.Message = codeUnavailable, errUnavailable.Error()
	}
	return fe
}
