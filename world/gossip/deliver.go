package gossip

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
)

// The delivery queue: an event's memories wait in the store as pending
// deliveries, and the deliverer carries them out one at a time, each in
// a transaction of its own that claims it (DeliverMemory). A restart, or
// another gateway on the same database, finds what is left and carries
// it out; a delivery two of them reach at once is carried out by one.

// deliveryBatch is how many deliveries one read of the queue takes.
const deliveryBatch = 64

// Wake asks the deliverer to read the queue now.
func (g *Grapevine) Wake() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// deliverLoop reads the queue at start, whenever woken, and every poll,
// until ctx ends.
func (g *Grapevine) deliverLoop(ctx context.Context) {
	t := time.NewTicker(g.poll)
	defer t.Stop()
	for {
		g.deliverPending(ctx)
		select {
		case <-ctx.Done():
			return
		case <-g.wake:
		case <-t.C:
		}
	}
}

// deliverPending carries out the deliveries that wait, a batch at a
// time, until none is left or a batch makes no progress (the store is
// failing: the next poll tries again).
func (g *Grapevine) deliverPending(ctx context.Context) {
	for ctx.Err() == nil {
		ds, err := g.store.PendingDeliveries(ctx, deliveryBatch)
		if err != nil {
			if ctx.Err() == nil {
				g.log.Error("gossip: the delivery queue could not be read", "err", err)
			}
			return
		}
		progress := false
		for _, d := range ds {
			if ctx.Err() != nil {
				return
			}
			if g.deliver(ctx, d) {
				progress = true
			}
		}
		if !progress || len(ds) < deliveryBatch {
			return
		}
	}
}

// deliver carries out d, or settles it otherwise: a person who has
// meanwhile opted out or become invisible blocks the event, a recipient
// no longer configured (or now public) is dropped. It reports whether d
// left the queue.
func (g *Grapevine) deliver(ctx context.Context, d Delivery) bool {
	if g.before != nil {
		if err := g.before(ctx, d); err != nil {
			return false
		}
	}
	cast := g.cast.Load()
	bots := cast.GossipBots()
	log := g.log.With("event", d.Event.ID, "bot", d.Bot)
	if reason := blockedFor(0, Bot{}, cast.GossipPerson(d.Event.User)); reason != "" {
		if err := g.store.BlockGossip(ctx, d.Event.ID, reason+" before delivery", g.now()); err != nil {
			log.Error("gossip: blocking an event failed", "err", err)
			return false
		}
		log.Info("gossip event blocked before delivery", "reason", reason)
		return true
	}
	to, ok := botByID(bots, d.Bot)
	var drop string
	switch {
	case !ok:
		drop = fmt.Sprintf("%s is no longer configured", d.Bot)
	case to.Public:
		drop = fmt.Sprintf("%s is public now", d.Bot)
	}
	if drop != "" {
		if err := g.store.DropDelivery(ctx, d, drop, g.now()); err != nil {
			log.Error("gossip: dropping a delivery failed", "err", err)
			return false
		}
		log.Info("gossip delivery dropped", "reason", drop)
		return true
	}
	done, err := g.store.DeliverMemory(ctx, d, g.note(bots, d))
	if err != nil {
		if ctx.Err() == nil {
			log.Error("gossip: delivery failed; it stays queued", "err", err)
		}
		return false
	}
	if done {
		log.Info("gossip memory delivered", "user", d.Event.User, "source", d.Event.SourceBot)
	}
	return true
}

// note is the system message a memory of d puts in its recipient's
// session, from the bot that was told (named as bots name it now).
func (g *Grapevine) note(bots []Bot, d Delivery) chat.Message {
	from := d.Event.SourceBot
	if b, ok := botByID(bots, from); ok && b.Name != "" {
		from = b.Name
	}
	return chat.Message{
		Kind: chat.KindSystem, From: chat.Party{Kind: chat.System, ID: d.Event.SourceBot, Name: NoteFrom},
		UserID: d.Event.User, Bot: d.Bot, Text: NoteText(from, d.Event), Time: g.now(),
	}
}
