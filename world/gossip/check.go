package gossip

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
)

// Checking a message: the patterns, then the classifier, then the rules
// that block news, then who hears it; the event is stored with its
// deliveries, and the deliverer woken.

// checkLoop checks heard messages one at a time (a classifier's brain
// runs one turn at a time), until closing, then the ones left.
func (g *Grapevine) checkLoop(ctx context.Context) {
	for {
		select {
		case h := <-g.heard:
			g.check(ctx, h)
		case <-g.closing:
			for {
				select {
				case h := <-g.heard:
					g.check(ctx, h)
				default:
					return
				}
			}
		case <-ctx.Done():
			return
		}
	}
}

// check decides what h is, stores it as an event when it is news, and
// wakes the deliverer for its memories.
func (g *Grapevine) check(ctx context.Context, h Heard) {
	if n := g.full.Swap(0); n > 1 {
		g.log.Warn("gossip: messages went unchecked, the queue being full", "count", n)
	}
	s := g.settings.Load()
	if !s.Enabled {
		return
	}
	cast := g.cast.Load()
	bots := cast.GossipBots()
	source, ok := botByID(bots, h.Bot)
	if !ok {
		return // removed from bots.yaml meanwhile
	}
	// The copies of one group message (one per bot it addresses, on
	// Telegram and Discord) make one event: the first decided is it,
	// and the classifier is not asked again.
	if g.decided.has(h.Key) {
		return
	}
	person := cast.GossipPerson(h.User)
	e := Event{
		User: h.User, UserName: firstOf(h.UserName, person.Name, h.User), SourceBot: source.ID,
		MessageID: h.MessageID, Key: h.Key, Depth: DepthOf(h.Text), CreatedAt: g.now(),
	}
	// These rules block whatever the message says: the classifier is
	// not asked then, so no other bot's brain reads the message.
	reason := blockedFor(e.Depth, source, person)
	topic, summary, matched := Match(s.Patterns, h.Text)
	if !matched && reason == "" && s.Classifier != "" {
		topic, summary, matched = g.classify(ctx, s, bots, source, h, e.UserName)
	}
	if !matched {
		if reason == "" { // no rule of this copy's bot kept it from being read
			g.decided.add(h.Key)
		}
		return
	}
	e.Topic, e.Summary = topic, summary
	if reason == "" {
		if w, ok := Sensitive(s.SensitiveTopics, topic, h.Text+"\n"+summary); ok {
			reason = fmt.Sprintf("sensitive topic %q", w)
		}
	}
	var due []string
	switch {
	case reason != "":
		e.Status, e.Reason = StatusBlocked, reason
	default:
		var err error
		if due, err = g.recipients(ctx, s, bots, e); err != nil {
			g.log.Error("gossip: who knows the person could not be read; the event is dropped", "message", h.MessageID, "err", err)
			return
		}
		e.Status = StatusQueued
		if len(due) == 0 {
			e.Status = StatusDelivered
			e.Reason = fmt.Sprintf("no other bot has %d messages from %s yet (min_messages)", s.MinMessages, e.UserName)
		}
	}
	stored, created, err := g.store.AddGossip(ctx, e, due)
	if err != nil {
		g.log.Error("gossip: event not stored", "message", h.MessageID, "err", err)
		return
	}
	g.decided.add(h.Key)
	if !created {
		return
	}
	g.log.Info("gossip event", "event", stored.ID, "user", stored.User, "source", stored.SourceBot, "topic", stored.Topic,
		"status", stored.Status, "reason", stored.Reason, "due", len(due))
	if len(due) > 0 {
		g.Wake()
	}
}

// blockedFor is why news told to source about person at depth is
// blocked whatever it says, or "".
func blockedFor(depth int, source Bot, person Person) string {
	switch {
	case depth >= 1:
		return fmt.Sprintf("gossip about gossip never travels (depth %d)", depth)
	case source.Public:
		return fmt.Sprintf("told to public bot %s, which takes no part in the shared world", source.ID)
	case person.Invisible:
		return "the person is invisible (invisible: true)"
	case !person.Share:
		return "the person does not share with other bots (share_with_other_bots: false)"
	}
	return ""
}

// recipients are the other non-public bots to which e's person has sent
// at least s.MinMessages messages before e's, in configuration order.
func (g *Grapevine) recipients(ctx context.Context, s *Settings, bots []Bot, e Event) ([]string, error) {
	var candidates []string
	for _, b := range bots {
		if !b.Public && b.ID != e.SourceBot {
			candidates = append(candidates, b.ID)
		}
	}
	if len(candidates) == 0 || s.MinMessages <= 0 {
		return candidates, nil
	}
	counts, err := g.store.MessagesFrom(ctx, e.User, candidates, e.MessageID, s.MinMessages)
	if err != nil {
		return nil, err
	}
	var due []string
	for _, id := range candidates {
		if counts[id] >= s.MinMessages {
			due = append(due, id)
		}
	}
	return due, nil
}

// classify asks the classifier bot about h. A classifier that fails, or
// answers garbage, is logged and taken as none.
func (g *Grapevine) classify(ctx context.Context, s *Settings, bots []Bot, source Bot, h Heard, name string) (topic, summary string, ok bool) {
	c, found := botByID(bots, s.Classifier)
	if !found || c.Public || c.Brain == nil {
		g.log.Warn("gossip: the classifier is no non-public bot with a brain; messages no pattern matches are not news", "classifier", s.Classifier)
		return "", "", false
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := Classify(cctx, c.Brain, brains.Bot{ID: c.ID, Name: c.Name, Persona: c.Persona},
		brains.User{ID: h.User, Name: name}, source.Name, h.Platform, h.Text)
	switch {
	case errors.Is(err, ErrGarbage):
		g.log.Warn("gossip: the classifier's answer is garbage; taken as none", "classifier", c.ID, "message", h.MessageID, "why", err.Error())
		return "", "", false
	case err != nil:
		if ctx.Err() == nil {
			g.log.Warn("gossip: the classifier failed; taken as none", "classifier", c.ID, "message", h.MessageID, "err", err)
		}
		return "", "", false
	case res.None:
		return "", "", false
	}
	return res.Topic, res.Summary, true
}

// recentKeys remembers the newest maxRecentKeys message keys added.
type recentKeys struct {
	set  map[string]bool
	ring []string
	next int
}

// maxRecentKeys bounds recentKeys: the copies of a message arrive
// together, far fewer messages apart.
const maxRecentKeys = 256

func (r *recentKeys) has(key string) bool { return key != "" && r.set[key] }

func (r *recentKeys) add(key string) {
	if key == "" || r.has(key) {
		return
	}
	if r.set == nil {
		r.set, r.ring = map[string]bool{}, make([]string, maxRecentKeys)
	}
	delete(r.set, r.ring[r.next])
	r.ring[r.next] = key
	r.set[key] = true
	r.next = (r.next + 1) % maxRecentKeys
}
