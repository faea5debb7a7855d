package gateway

import (
	"slices"
	"strings"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/delegation"
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
	// SessionScope is sessions.ScopeUser or sessions.ScopeGroup: how the
	// bot keeps its sessions in group chats.
	SessionScope string
	// Allow lists the bots this bot may hand work to ("*": any).
	Allow []string
	// Triggers are the bot's hand-off phrases; empty means the defaults.
	Triggers []string
}

// Allows reports whether the bot may hand work to bot id.
func (b *Bot) Allows(id string) bool {
	return slices.Contains(b.Allow, "*") || slices.Contains(b.Allow, id)
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

// Roster is an immutable set of bots in configuration order, with each
// bot's hand-off trigger parser.
type Roster struct {
	order   []*Bot
	byID    map[string]*Bot
	parsers map[string]*delegation.Parser
	// historyLimit is the longest history window of any bot, which
	// turns are loaded with; teams holds each bot's team
	// (brains.Turn.Team), shared by its turns, which only read it.
	historyLimit int
	teams        map[string][]brains.Mate
}

// defaultHistoryWindow is the history a bot's turns see when it sets no
// window of its own.
const defaultHistoryWindow = 20

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
	targets := make([]delegation.Bot, 0, len(r.order))
	for _, b := range r.order {
		targets = append(targets, delegation.Bot{ID: b.ID, Name: b.Name, Names: b.Names()})
	}
	r.parsers = make(map[string]*delegation.Parser, len(r.order))
	for _, b := range r.order {
		// Triggers were validated with the configuration; a bot whose
		// triggers do not compile simply hands nothing off.
		if p, err := delegation.NewParser(b.Triggers, targets); err == nil {
			r.parsers[b.ID] = p
		}
	}
	r.historyLimit = defaultHistoryWindow
	r.teams = make(map[string][]brains.Mate, len(r.order))
	for _, bot := range r.order {
		r.historyLimit = max(r.historyLimit, bot.HistoryWindow)
		var team []brains.Mate
		for _, b := range r.order {
			if b.ID != bot.ID && !b.Public && !bot.Public && bot.Allows(b.ID) {
				summary, _, _ := strings.Cut(strings.TrimSpace(b.Persona), "\n")
				team = append(team, brains.Mate{ID: b.ID, Name: b.Name, Summary: summary})
			}
		}
		r.teams[bot.ID] = slices.Clip(team) // an append by a turn cannot write into it
	}
	return r
}

// team lists the bots bot id may hand work to, for its turns. The slice
// is shared: read it, do not write into it.
func (r *Roster) team(id string) []brains.Mate {
	if r == nil {
		return nil
	}
	return r.teams[id]
}

// Parser returns the trigger parser of bot id.
func (r *Roster) Parser(id string) (*delegation.Parser, bool) {
	if r == nil {
		return nil, false
	}
	p, ok := r.parsers[id]
	return p, ok
}

// Name returns the display name of bot id, or id itself.
func (r *Roster) Name(id string) string {
	if b, ok := r.Bot(id); ok {
		return b.Name
	}
	return id
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
