package gateway

import (
	"context"
	"time"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/outbox"
)

// Several gateway processes may share one database (SPEC §11). What they
// need of each other is here: which of them holds a bot's connection to a
// platform (Leader), and news of what another one stored that this one's
// connections may have to show (Notice, handled by Noticed). A gateway
// alone on its database has none of it: a nil Leader leads everything,
// and no notices come.

// Leader decides which process holds each bot's connection to a platform
// (Telegram polling, the Discord gateway): exactly one at a time.
type Leader interface {
	// Lead blocks until this process leads bot on platform, or ctx ends
	// (then it returns ctx's error). A task that one process runs at a
	// time (retention) is led with its name as platform and no bot. The context it returns ends when
	// the lead is lost (the process lost its database connection, say);
	// the lead is given up when ctx ends.
	Lead(ctx context.Context, platform, bot string) (context.Context, error)
}

// Lead is a bot's connection to a platform, as a process leads it.
type Lead struct {
	Bot      string `json:"bot"`
	Platform string `json:"platform"`
}

// Instance is one live gateway process on a shared database.
type Instance struct {
	ID          string    `json:"id"`
	Address     string    `json:"address"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	Leads       []Lead    `json:"leads"`
}

// NoticeKind says what a Notice is about.
type NoticeKind string

// Kinds of notices.
const (
	// NoticeEntry: an outbox entry (ID) for a chat of a platform whose
	// deliveries go to connections held by one process.
	NoticeEntry NoticeKind = "entry"
	// NoticeMessage: a person's message (ID) in a chat of a platform
	// whose connections one process holds, from User.
	NoticeMessage NoticeKind = "message"
	// NoticeDelegation: a delegation record (Delegation) changed.
	NoticeDelegation NoticeKind = "delegation"
	// NoticeFinding: a finding (ID) of Space became visible.
	NoticeFinding NoticeKind = "finding"
	// NoticeContext: the shared context of Space, a group's, changed.
	NoticeContext NoticeKind = "context"
)

// Notice is news from another process sharing the database: it carries
// IDs, and the data is read from the store.
type Notice struct {
	Kind       NoticeKind
	ID         int64
	Delegation string
	// New marks a delegation just stored (not a change of one).
	New      bool
	Platform string
	ChatID   string
	// User is who wrote a message (the master user ID, else the
	// platform ID); Group says its chat is a group.
	User  string
	Group bool
	// Space is a finding's space.
	Space string
}

// SharedStore is what a gateway on a shared database reads to show its
// connections what other processes stored, and to take over the work of
// processes that died.
type SharedStore interface {
	// OutboxEntries returns the entries with the given IDs, whatever
	// their status, in the order of their messages.
	OutboxEntries(ctx context.Context, ids []int64) ([]outbox.Entry, error)
	// PendingEntries returns the undelivered entries of some chats of a
	// platform that other processes stored.
	PendingEntries(ctx context.Context, platform string, chatIDs []string) ([]outbox.Entry, error)
	// OrphanedOutbox takes over the undelivered entries of processes
	// that died and returns them.
	OrphanedOutbox(ctx context.Context) ([]outbox.Entry, error)
	// Message returns one stored message; an unknown ID is an error
	// wrapping ErrUnknownChat.
	Message(ctx context.Context, id int64) (chat.Message, error)
}

// Holder is implemented by platforms whose deliveries go to connections
// that one process holds (the web widget, the terminal): a message for
// such a chat that another process stored reaches the connections here.
type Holder interface {
	// Holds says whether this process has a connection that receives
	// the messages of chatID on platform.
	Holds(platform, chatID string) bool
	// ShowInbound shows a person's message in a group chat, stored by
	// another process, to the connections here in that chat.
	ShowInbound(m chat.Message)
}

// RateSharer is implemented by platforms that limit how many messages a
// person sends a second (the web widget and the terminal): a message the
// person sent through another process counts here too.
type RateSharer interface {
	SpentElsewhere(person string)
}

// Noticed handles news from another process sharing the database: an
// outbox entry for a chat held here is delivered here too, a person's
// message counts against their rate here and reaches a room's
// connections here, and a changed delegation is shown to whoever watches
// it here (a new one counts against the hand-off limits). It must not block: the
// reading happens on a goroutine of the gateway's.
func (g *Gateway) Noticed(n Notice) {
	if g.shared == nil {
		return
	}
	// What needs no reading is settled here, at once: most notices are
	// of chats with no connection here.
	var show Holder
	switch n.Kind {
	case NoticeEntry:
		if !g.held(n.Platform, n.ChatID) {
			return
		}
	case NoticeMessage:
		if p, ok := g.platform(n.Platform); ok {
			if r, ok := p.(RateSharer); ok {
				r.SpentElsewhere(n.User)
			}
		}
		if show = g.holder(n.Platform, n.ChatID); !n.Group || show == nil {
			return
		}
	case NoticeContext:
		// Only the platforms here need telling (ContextChanged reads on
		// a goroutine of its own); the keeper's readers read the store.
		g.ContextChanged(n.Space)
		return
	}
	g.goBackground(func() {
		ctx, cancel := context.WithTimeout(context.Background(), noticeTimeout)
		defer cancel()
		switch n.Kind {
		case NoticeEntry:
			entries, err := g.shared.OutboxEntries(ctx, []int64{n.ID})
			if err != nil {
				g.log.Warn("cluster: an entry stored elsewhere could not be read", "entry", n.ID, "err", err)
				return
			}
			g.outbox.Enqueue(entries...)
		case NoticeMessage:
			m, err := g.shared.Message(ctx, n.ID)
			if err != nil {
				g.log.Warn("cluster: a message stored elsewhere could not be read", "message", n.ID, "err", err)
				return
			}
			show.ShowInbound(m)
		case NoticeDelegation:
			d, err := g.store.Delegation(ctx, n.Delegation)
			if err != nil {
				g.log.Warn("cluster: a delegation changed elsewhere could not be read", "delegation", n.Delegation, "err", err)
				return
			}
			if n.New && d.Status != delegation.StatusRefused {
				// Admitted elsewhere: it counts against the limits here.
				g.policy.Note(d.From, d.To, d.UserID, d.CreatedAt, d.Origin.Platform == "")
			}
			g.notify(d)
		case NoticeFinding:
			g.findingNoticed(ctx, n)
		}
	})
}

// noticeTimeout bounds the reads a notice causes.
const noticeTimeout = 10 * time.Second

// held says whether a platform here holds a connection for chatID.
func (g *Gateway) held(platform, chatID string) bool {
	return g.holder(platform, chatID) != nil
}

// holder returns the platform named platform when it is a Holder with a
// connection for chatID, else nil.
func (g *Gateway) holder(platform, chatID string) Holder {
	g.platformsMu.RLock()
	p := g.platforms[platform]
	g.platformsMu.RUnlock()
	if h, ok := p.(Holder); ok && h.Holds(platform, chatID) {
		return h
	}
	return nil
}

// Resync catches up after notices may have been missed (the process's
// listening connection was lost): every chat held here gets what is
// still undelivered for it.
func (g *Gateway) Resync(ctx context.Context) {
	if g.shared == nil {
		return
	}
	g.platformsMu.RLock()
	var hs []chatHolder
	for _, p := range g.platforms {
		if h, ok := p.(chatHolder); ok {
			hs = append(hs, h)
		}
	}
	g.platformsMu.RUnlock()
	for _, h := range hs {
		for platform, chats := range h.HeldChats() {
			g.catchUp(ctx, platform, chats)
		}
	}
}

// chatHolder is a Holder that can list its chats, by platform.
type chatHolder interface {
	HeldChats() map[string][]string
}

// catchUp queues the undelivered entries of chats, whichever process
// stored them.
func (g *Gateway) catchUp(ctx context.Context, platform string, chatIDs []string) {
	if len(chatIDs) == 0 {
		return
	}
	entries, err := g.shared.PendingEntries(ctx, platform, chatIDs)
	if err != nil {
		g.log.Warn("cluster: undelivered entries could not be read", "platform", platform, "err", err)
		return
	}
	g.outbox.Enqueue(entries...)
}

// TakeOver runs the work that processes which died left: the sessions
// whose turns they held and the entries they had not delivered. A
// process on a shared database calls it every few seconds.
func (g *Gateway) TakeOver(ctx context.Context) error {
	if g.shared == nil {
		return nil
	}
	if _, err := g.runner.Start(ctx); err != nil {
		return err
	}
	entries, err := g.shared.OrphanedOutbox(ctx)
	if err != nil {
		return err
	}
	g.outbox.Enqueue(entries...)
	return nil
}
