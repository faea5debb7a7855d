package web

import (
	"slices"
	"strconv"
	"sync"

	"github.com/switchboard-chat/switchboard/gateway"
)

// botsFrame tells a page that the web platform's bots changed (SPEC §7):
// the whole list, in configuration order.
type botsFrame struct {
	Type string            `json:"type"`
	Bots []gateway.BotInfo `json:"bots"`
}

// roster is the list of bots the adapter's connections were last told,
// in hello or a bots frame.
type roster struct {
	// mu orders the lists: a connection's hello is sent under it, and so
	// is each bots frame, so a page never gets an older list after a
	// newer one.
	mu   sync.Mutex
	bots []gateway.BotInfo
	// removed holds the names of the bots that left the web since the
	// adapter started, by ID, for the refusal of a message to one.
	removed map[string]string
}

var _ gateway.RosterWatcher = (*Adapter)(nil)

// RosterChanged implements gateway.RosterWatcher: when the web's bots
// differ from the list last told (one added, removed or renamed), every
// open connection gets a bots frame.
func (a *Adapter) RosterChanged(bots []gateway.BotInfo) {
	r := &a.roster
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.Equal(r.bots, bots) {
		return
	}
	for _, old := range r.bots {
		if !slices.ContainsFunc(bots, func(b gateway.BotInfo) bool { return b.ID == old.ID }) {
			if r.removed == nil {
				r.removed = make(map[string]string)
			}
			r.removed[old.ID] = old.Name
		}
	}
	for _, b := range bots {
		delete(r.removed, b.ID)
	}
	r.bots = slices.Clone(bots)
	f := botsFrame{Type: "bots", Bots: r.bots}
	if f.Bots == nil {
		f.Bots = []gateway.BotInfo{}
	}
	for _, c := range a.connections() {
		if c.v.platform == gateway.PlatformWeb {
			c.send(f)
		}
	}
}

// admit greets c with its hello, listing the web's bots as they are now,
// and only then registers it for the messages of its chats, so nothing
// reaches a page before its hello. (Under the roster's lock: a change
// that lands meanwhile is sent after the hello, never before it.) It
// returns the bots greeted, or false when the adapter is closing.
func (a *Adapter) admit(c *conn) ([]gateway.BotInfo, bool) {
	a.roster.mu.Lock()
	defer a.roster.mu.Unlock()
	user := c.host.Resolve(c.v.platformID)
	bots := c.host.Bots(c.v.platform)
	c.send(helloFrame{Type: "hello", User: user.ID, PlatformID: c.v.platformID, Token: c.v.token, Bots: bots})
	return bots, a.register(c)
}

// unknownBot refuses a frame for a bot that is not on the web, naming a
// bot that was removed while the gateway ran.
func (a *Adapter) unknownBot(bot, clientID string) *frameError {
	a.roster.mu.Lock()
	name, removed := a.roster.removed[bot]
	a.roster.mu.Unlock()
	msg := "no bot " + strconv.Quote(bot) + " on the web"
	if removed {
		msg = name + " is no longer available on the web"
	}
	return &frameError{Code: codeUnknownBot, Message: msg, ClientID: clientID}
}

// unknownBot refuses a frame for a bot that is not on c's platform: the
// web's words on the web, plain ones at the terminal (where every bot
// is).
func (c *conn) unknownBot(bot, clientID string) *frameError {
	if c.v.platform == gateway.PlatformWeb {
		return c.a.unknownBot(bot, clientID)
	}
	return &frameError{Code: codeUnknownBot, Message: "no bot " + strconv.Quote(bot), ClientID: clientID}
}

// connections lists every open connection.
func (a *Adapter) connections() []*conn {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []*conn
	for _, set := range a.byUser {
		for c := range set {
			out = append(out, c)
		}
	}
	return out
}
