package gateway

import (
	"slices"
	"strings"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
)

// Bot is a bot as the gateway runs it: its identity, its brain and the
// settings the pipeline acts on. Bots are immutable once in a Roster.
type Bot struct {
	ID      string
	Name    string
	Aliases []string
	// Public bots never merge identities and take no part in delegation.
	Public  bool
	Persona string
	Brain   brains.Brain
	// BrainKind labels metrics and logs (script, exec, openai).
	BrainKind string
	// Timeout bounds one brain turn.
	Timeout time.Duration
	// HistoryWindow is how many earlier session messages a turn sees.
	HistoryWindow int
	// Platforms lists the platforms the bot is on.
	Platforms []string
	// SessionScope is ScopeUser or ScopeGroup for group chats.
	SessionScope string
}

// On reports whether the bot is present on platform.
func (b *Bot) On(platform string) bool { return slices.Contains(b.Platforms, platform) }

// Names returns every name that addresses the bot, lower-cased: its ID,
// display name, the display name's first word and its aliases.
func (b *Bot) Names() []string {
	names := []string{strings.ToLower(b.ID), strings.ToLower(b.Name)}
	if first, _, ok := strings.Cut(b.Name, " "); ok {
		names = append(names, strings.ToLower(first))
	}
	for _, a := range b.Aliases {
		names = append(names, strings.ToLower(a))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Roster is an immutable set of bots in configuration order.
type Roster struct {
	order []*Bot
	byID  map[string]*Bot
}

// NewRoster indexes bots; later duplicates of an ID are ignored
// (configuration validation rejects them first).
func NewRoster(bots []*Bot) *Roster {
	r := &Roster{byID: make(map[string]*Bot, len(bots))}
	for _, b := range bots {
		if _, dup := r.byID[b.ID]; dup {
			continue
		}
		r.byID[b.ID] = b
		r.order = append(r.order, b)
	}
	return r
}

// Bot returns the bot with id.
func (r *Roster) Bot(id string) (*Bot, bool) {
	if r == nil {
		return nil, false
	}
	b, ok := r.byID[id]
	return b, ok
}

// Bots returns every bot in configuration order.
func (r *Roster) Bots() []*Bot {
	if r == nil {
		return nil
	}
	return slices.Clone(r.order)
}

// ByName finds the bot addressed by name (ID, display name, first name or
// alias), case-insensitively.
func (r *Roster) ByName(name string) (*Bot, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	if r == nil || name == "" {
		return nil, false
	}
	if b, ok := r.byID[name]; ok {
		return b, true
	}
	for _, b := range r.order {
		if slices.Contains(b.Names(), name) {
			return b, true
		}
	}
	return nil, false
}
