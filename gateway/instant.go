package gateway

import (
	"context"
	"errors"
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
// turns wait for it as they would for a queued turn, and it sees the
// session as the store's cache holds it; if the session gains a message
// or a pending turn before the commit (a hand-off's task from another
// session, say), the store refuses the answer (ErrStale). Whenever any of
// that fails — the session is new or not cached, a turn of it is stored
// and not yet done, another delivery of it is under way, the message
// starts several turns or none, the chat is a group, the message or the
// reply would hand work on (a hand-off counts against the policy's limits
// as it is admitted, which must happen only for a stored message), the
// answer is stale — the message takes the stored path, as if the instant
// path did not exist (still holding its claims, if it had taken them).

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
	if !ok || !in.Instant() || mayHandOff(roster, bot, turns[0].Text, nil) {
		return nil, false
	}
	return bot, true
}

// deliverInstant answers and stores ev on the instant path. taken is
// false when another delivery of the session is under way: nothing has
// been done, and the event takes the stored path. Once the session is
// claimed, an event that cannot take the instant path after all is
// stored here the stored way, before the claims are let go, so no later
// delivery overtakes it.
func (g *Gateway) deliverInstant(ctx context.Context, ev Event, user UserRef, roster *Roster, bot *Bot, req TurnRequest) (rec Receipt, taken bool, err error) {
	release, ok := g.claims.exclusive(req.Session)
	if !ok {
		return Receipt{}, false, nil
	}
	defer release()
	stored := func() (Receipt, bool, error) {
		rec, err := g.appendStored(ctx, ev, user, []TurnRequest{req})
		return rec, true, err
	}
	// (A turn of the session that ends between this look and the claim
	// below can only have added messages to it, which the store finds
	// when it checks the answer: stale.)
	data, latest, ok := g.store.PeekSession(req.Session, g.historyLimit())
	if !ok || !g.queues.claim(data.Ref.SessionID) {
		return stored()
	}
	// Let go after a stored fallback has queued its turn: the claim's end
	// starts the session's worker.
	defer g.queues.release(data.Ref.SessionID)
	data.Message = Message{
		Platform: ev.Platform, ChatID: ev.ChatID, ChatType: ev.ChatType,
		PlatformMsgID: ev.MessageID, Kind: KindChat,
		From:   Party{Kind: "human", ID: ev.Sender.PlatformID, Name: user.Name},
		UserID: user.ID, Bot: ev.Bot, Text: ev.Text, ReplyTo: ev.ReplyTo, Time: ev.Time,
	}
	data.Text = req.Text
	turnCtx := g.turnCtx
	c, ok := g.ordinaryTurn(turnCtx, with(g.log, "session", data.Ref.SessionID), roster, bot, data)
	if turnCtx.Err() != nil {
		return Receipt{}, true, fmt.Errorf("deliver: %w", ErrStopped)
	}
	if !ok {
		return stored()
	}
	c.OnStored = g.completionStored(&c)
	in := Inbound{Event: ev, UserID: user.ID, UserName: user.Name, Turns: []TurnRequest{req}, OnStored: g.inboundStored(&ev)}
	res, _, err := g.store.AppendAnswered(ctx, in, c, latest)
	if errors.Is(err, ErrStale) {
		return stored()
	}
	if err != nil {
		return Receipt{}, true, fmt.Errorf("deliver: %w", err)
	}
	if !res.Duplicate {
		g.obs.TurnDone(PathInstant)
	}
	return Receipt{MessageID: res.Message.ID, Time: res.Message.Time, Duplicate: res.Duplicate}, true, nil
}

// claims orders the deliveries of each session. A delivery on the
// instant path claims its session exclusively, from its look at the
// session to its commit, and gives up the path if another delivery of
// the session is under way. Deliveries on the stored path share their
// sessions' claims (they are ordered by their commits, and share them by
// group commit), and wait while an instant one holds one of them: stored
// meanwhile, a later message would be stored before an earlier one still
// being answered.
type claims struct {
	mu sync.Mutex
	m  map[SessionKey]*claim
	// waiting counts the stored deliveries waiting for each session: an
	// instant one does not claim it from under them.
	waiting map[SessionKey]int
}

// claim is a session's: n deliveries share it, or one holds it
// exclusively (held), and excl, made by the first delivery that waits
// for it (seldom), is closed when it lets go.
type claim struct {
	n    int
	held bool
	excl chan struct{}
}

// exclusive claims key if no delivery holds it; the returned function
// lets go.
func (c *claims) exclusive(key SessionKey) (func(), bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, held := c.m[key]; held || c.waiting[key] > 0 {
		return nil, false
	}
	if c.m == nil {
		c.m = make(map[SessionKey]*claim)
	}
	cl := &claim{held: true}
	c.m[key] = cl
	return func() {
		c.mu.Lock()
		delete(c.m, key)
		waited := cl.excl
		c.mu.Unlock()
		if waited != nil {
			close(waited)
		}
	}, true
}

// shared waits until no delivery holds one of keys exclusively, then
// shares them all (taken at once, so no two deliveries each hold one key
// while waiting for the other's). The returned function lets go.
func (c *claims) shared(ctx context.Context, keys []SessionKey) (func(), error) {
	for {
		c.mu.Lock()
		var busy chan struct{}
		for _, k := range keys {
			if cl, ok := c.m[k]; ok && cl.held {
				if cl.excl == nil {
					cl.excl = make(chan struct{})
				}
				busy = cl.excl
				break
			}
		}
		if busy == nil {
			if c.m == nil {
				c.m = make(map[SessionKey]*claim)
			}
			for _, k := range keys {
				cl, ok := c.m[k]
				if !ok {
					cl = &claim{}
					c.m[k] = cl
				}
				cl.n++
			}
			c.mu.Unlock()
			return func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				for _, k := range keys {
					if cl := c.m[k]; cl != nil {
						if cl.n--; cl.n == 0 {
							delete(c.m, k)
						}
					}
				}
			}, nil
		}
		if c.waiting == nil {
			c.waiting = make(map[SessionKey]int)
		}
		for _, k := range keys {
			c.waiting[k]++
		}
		c.mu.Unlock()
		var err error
		select {
		case <-busy:
		case <-ctx.Done():
			err = ctx.Err()
		}
		c.mu.Lock()
		for _, k := range keys {
			if c.waiting[k]--; c.waiting[k] == 0 {
				delete(c.waiting, k)
			}
		}
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
}
