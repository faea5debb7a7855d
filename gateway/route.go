package gateway

import "context"

// route picks the chat a turn's reply goes to (SPEC §3): a group message
// is answered in its group; a private one in the private chat where the
// person last spoke in the session, which may be on another platform than
// the message being answered when they moved while the bot was thinking.
func (g *Gateway) route(ctx context.Context, data TurnData) (ChatRef, error) {
	here := ChatRef{Platform: data.Message.Platform, ChatID: data.Message.ChatID, Type: data.Message.ChatType}
	if here.Type == ChatGroup {
		return here, nil
	}
	last, ok, err := g.store.LastPrivateChat(ctx, data.Session.ID)
	if err != nil || !ok {
		return here, err
	}
	return last, nil
}
