package gateway

import (
	"context"
	"fmt"
	"sync"

	"github.com/switchboard-chat/switchboard/brains"
)

// The instant path. A person's message in a private chat that starts one
// turn, for a bot whose brain answers at once (brains.Instant), is
// answered before it is stored: the message, its turn (stored done) and
// the reply with its outbox entry are written in one transaction
// (Store.AppendAnswered). The exchange then costs one commit instead of
// two, and its ack and reply leave together.
//
// The promises stay those of the stored path: nothing is acknowledged
// before it is durable (a crash before the commit loses a message no one
// was told was stored, which the sender sends again), and the reply is
// stored before it is sent. The turn runs on the delivering goroutine
// while its session is claimed in the queues, so the session's other
// turns wait for it as they would for a queued turn; it sees the session
// as the store's cache holds it. When any of that is missing (the session
// is new or not cached, a turn of it is queued or running, the message
// starts several turns or none, the chat is a group, the gateway is
// stopping), the message takes the stored path.

// instantBot returns the bot of the one turn an event starts, when the
// event may take the instant path.
func instantBot(ev Event, roster *Roster, turns []TurnRequest) (*Bot, bool) {
	if len(turns) != 1 || ev.ChatType != ChatPrivate || ev.Sender.IsBot {
		return nil, false
	}
	bot, ok := roster.Bot(turns[0].Session.Bot)
	if !ok {
		return nil, false
	}
	in, ok := bot.Brain.(brains.Instant)
	return bot, ok && in.Instant()
}

// deliverInstant answers and stores ev on the instant path. taken is
// false when the event must take the stored path instead (nothing has
// been stored then).
func (g *Gateway) deliverInstant(ctx context.Context, ev Event, user UserRef, roster *Roster, bot *Bot, req TurnRequest) (rec Receipt, taken bool, err error) {
	limit := g.historyLimit()
	data, ok := g.store.PeekSession(req.Session, limit)
	if !ok || !g.queues.claim(data.Ref.SessionID) {
		return Receipt{}, false, nil
	}
	defer g.queues.release(data.Ref.SessionID)
	// Again, now that no other turn of the session can start: a turn may
	// have ended between the two looks.
	if data, ok = g.store.PeekSession(req.Session, limit); !ok {
		return Receipt{}, false, nil
	}
	data.Message = Message{
		Platform: ev.Platform, ChatID: ev.ChatID, ChatType: ev.ChatType,
		PlatformMsgID: ev.MessageID, Kind: KindChat,
		From:   Party{Kind: "human", ID: ev.Sender.PlatformID, Name: user.Name},
		UserID: user.ID, Bot: ev.Bot, Text: ev.Text, ReplyTo: ev.ReplyTo, Time: ev.Time,
	}
	data.Text = req.Text
	ctxTurn := g.turnCtx
	c := g.ordinaryTurn(ctxTurn, with(g.log, "session", data.Ref.SessionID), roster, bot, data)
	if ctxTurn.Err() != nil {
		return Receipt{}, true, fmt.Errorf("deliver: %w", ErrStopped)
	}
	c.OnStored = g.completionStored(c)
	in := Inbound{Event: ev, UserID: user.ID, UserName: user.Name, Turns: []TurnRequest{req}, OnStored: g.inboundStored(ev, false)}
	res, _, err := g.store.AppendAnswered(ctx, in, c)
	if err != nil {
		return Receipt{}, true, fmt.Errorf("deliver: %w", err)
	}
	return Receipt{MessageID: res.Message.ID, Time: res.Message.Time, Duplicate: res.Duplicate}, true, nil
}

// claims orders the deliveries of each session: a message is stored (and,
// on the instant path, answered) only while no other message of one of
// its sessions is between its own look at the session and its commit.
// Without it a message that took the stored path could be stored while an
// earlier one was still being answered, and the two would be stored in
// the other order.
type claims struct {
	mu sync.Mutex
	m  map[SessionKey]chan struct{} // closed when the claim ends
}

// take waits until none of keys is claimed, then claims them all at once
// (so two deliveries never hold one key each while waiting for the
// other's). The returned function ends the claim.
func (c *claims) take(ctx context.Context, keys []SessionKey) (func(), error) {
	for {
		c.mu.Lock()
		var busy chan struct{}
		for _, k := range keys {
			if ch, ok := c.m[k]; ok {
				busy = ch
				break
			}
		}
		if busy == nil {
			if c.m == nil {
				c.m = make(map[SessionKey]chan struct{})
			}
			done := make(chan struct{})
			for _, k := range keys {
				c.m[k] = done
			}
			c.mu.Unlock()
			return func() {
				c.mu.Lock()
				for _, k := range keys {
					if c.m[k] == done {
						delete(c.m, k)
					}
				}
				c.mu.Unlock()
				close(done)
			}, nil
		}
		c.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
