// Package chains decides bot-to-bot talk in group chats (SPEC §10.6,
// seed 000): which bots answer another bot's message, and how far one
// chain of such answers may run.
//
// A group chat has one State. A chain starts with the first bot message
// after a person's message that addresses another bot; each bot answer to
// a bot message is one step; the step that reaches Settings.MaxChain is a
// closing turn, and after it no bot message wakes another until a person
// speaks. A person's message ends a chain; after a chain of at least one
// step no new chain starts in the chat for Settings.Cooldown. A bot that
// posts several messages within Settings.Burst has posted one message: a
// bot it woke is not woken again by the rest of the burst.
//
// Judge is pure: the gateway reads the chat's State from the store,
// judges a bot's message, and stores the State it returns together with
// the answers' turns, in one transaction that fails if another process
// changed the State meanwhile (State.Version). So a chain's limits hold
// across restarts and across gateways sharing one database.
package chains

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"time"
)

// Settings are gateway.crossbot.
type Settings struct {
	// Enabled turns chains on; off, Judge wakes nobody.
	Enabled bool
	// MaxChain is the most steps of one chain.
	MaxChain int
	// ResponseChance is the probability that a bot mentioned in another
	// bot's message answers it; a name in plain text gets NameFactor
	// times it.
	ResponseChance float64
	// Cooldown is how long after a chain with a step no chain starts.
	Cooldown time.Duration
	// Burst is the time within which one bot's consecutive messages
	// count as one.
	Burst time.Duration
	// Seeded makes the draws reproducible, from Seed.
	Seeded bool
	Seed   int64
}

// NameFactor scales ResponseChance for a bot named in plain text rather
// than mentioned.
const NameFactor = 0.3

// The statuses of a chat's chain (State.Status).
const (
	// None: no chain has run in the chat yet.
	None = ""
	// Active: a chain runs; its bots' messages may wake others.
	Active = "active"
	// Closed: the chain reached MaxChain steps; no bot message wakes
	// another until a person speaks.
	Closed = "closed"
	// Ended: a person spoke after the chain. The next bot message that
	// addresses another bot starts a new chain, cooldown permitting.
	Ended = "ended"
)

// State is one group chat's chain.
type State struct {
	Platform string
	Chat     string
	// Chain numbers the chains started in the chat; this State is the
	// latest (0: none yet).
	Chain int64
	// Status is None, Active, Closed or Ended.
	Status string
	// Steps counts the chain's steps: bot answers queued to bot messages.
	Steps int
	// StartedAt is when the chain started; LastAt when its latest step
	// was queued (the cooldown counts from there).
	StartedAt time.Time
	LastAt    time.Time
	// Mark is the ID of the newest bot message judged: a person's message
	// with a greater ID ends the chain.
	Mark int64
	// Burst is the newest judged message's burst.
	Burst Burst
	// Draws counts the draws made in the chat: the next draw's index.
	Draws int64
	// Version is the store's version of this State, 0 when it has none
	// yet; the store changes it on every write.
	Version int64
	// UpdatedAt is when the State was last written.
	UpdatedAt time.Time
}

// Burst is a run of one bot's consecutive messages, each within
// Settings.Burst of the one before.
type Burst struct {
	// Bot wrote it; At is the time of its newest message.
	Bot string
	At  time.Time
	// First says the burst is its chain's first message: the bots it
	// addresses answer for sure.
	First bool
	// Woke lists the bots it woke, in order.
	Woke []string
}

// Kind says how a bot message addresses a bot.
type Kind int

// The kinds of address, weakest first.
const (
	// Name: the bot's ID, name, first name or alias as a whole word.
	Name Kind = iota + 1
	// Mention: "@name" or a leading "/name" command.
	Mention
	// Reply: the message answers one of the bot's messages.
	Reply
)

// String names the kind for logs.
func (k Kind) String() string {
	switch k {
	case Name:
		return "name"
	case Mention:
		return "mention"
	case Reply:
		return "reply"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Address is a bot a message addresses, and how.
type Address struct {
	Bot  string
	Kind Kind
}

// Message is the bot message being judged.
type Message struct {
	// ID is the stored message's ID; IDs grow with time in a chat.
	ID int64
	// Bot wrote it, at At.
	Bot string
	At  time.Time
	// Addresses are the bots of the chat it addresses, in the order they
	// are addressed; the author and public bots are left out by the
	// caller, and Judge leaves out the author again.
	Addresses []Address
	// PersonBefore is the ID of the newest person's message in the chat
	// before this one (0: none).
	PersonBefore int64
}

// Answer is a bot that answers the judged message: one step of the
// chain.
type Answer struct {
	Bot string
	// Step is the chain's length with this answer (SPEC's
	// .Crossbot.Length); Closing is set on the step that reaches
	// MaxChain.
	Step    int
	Closing bool
	// Kind is how the message addressed the bot; Sure says it answers
	// for sure (a reply to it, or the chain's first message) rather than
	// by a draw.
	Kind Kind
	Sure bool
}

// Verdict is what Judge decided.
type Verdict struct {
	// State is the chat's State after the message.
	State State
	// Answers are the bots that answer, in order.
	Answers []Answer
	// Started says the message started a chain; Folded that it belongs
	// to the burst before it.
	Started, Folded bool
	// Cooldown says the message would have started a chain but the
	// cooldown of the last one had not passed.
	Cooldown bool
}

// Judge decides who answers bot message m in a chat whose chain is st.
// With settings off it changes nothing.
func Judge(s Settings, st State, m Message) Verdict {
	v := Verdict{State: st}
	if !s.Enabled {
		return v
	}
	ns := &v.State
	ns.Burst.Woke = append([]string(nil), st.Burst.Woke...) // st's slice is the caller's

	// A person spoke since the last bot message judged: the chain ends,
	// and with it any burst.
	if m.PersonBefore > ns.Mark {
		if ns.Status == Active || ns.Status == Closed {
			ns.Status = Ended
		}
		ns.Burst = Burst{}
	}
	ns.Mark = max(ns.Mark, m.ID)
	addrs := eligible(m)

	// A message within the burst of its bot's previous one is part of
	// that message: what the burst did stands, and it may add to it.
	v.Folded = ns.Burst.Bot == m.Bot && s.Burst > 0 && within(m.At, ns.Burst.At, s.Burst)
	if v.Folded {
		ns.Burst.At = m.At
	} else {
		ns.Burst = Burst{Bot: m.Bot, At: m.At}
	}
	first := ns.Burst.First && ns.Status == Active
	if (ns.Status == None || ns.Status == Ended) && len(addrs) > 0 {
		if ns.Steps > 0 && m.At.Before(ns.LastAt.Add(s.Cooldown)) {
			v.Cooldown = true
			return v
		}
		ns.Chain++
		ns.Status, ns.Steps = Active, 0
		ns.StartedAt, ns.LastAt = m.At, m.At
		ns.Burst.First, first, v.Started = true, true, true
	}
	if ns.Status != Active {
		return v
	}
	for _, a := range addrs {
		if ns.Steps >= s.MaxChain {
			break
		}
		if containsBot(ns.Burst.Woke, a.Bot) {
			continue // the burst woke it already
		}
		sure := first || a.Kind == Reply
		if !sure {
			p := s.ResponseChance
			if a.Kind == Name {
				p *= NameFactor
			}
			if !draw(s, ns, p) {
				continue
			}
		}
		ns.Steps++
		ns.LastAt = m.At
		ns.Burst.Woke = append(ns.Burst.Woke, a.Bot)
		v.Answers = append(v.Answers, Answer{Bot: a.Bot, Step: ns.Steps, Closing: ns.Steps == s.MaxChain, Kind: a.Kind, Sure: sure})
	}
	if ns.Steps >= s.MaxChain {
		ns.Status = Closed
	}
	return v
}

// eligible is m's addresses without its author, each bot once with the
// strongest way it is addressed, in the order first addressed.
func eligible(m Message) []Address {
	var out []Address
	for _, a := range m.Addresses {
		if a.Bot == "" || a.Bot == m.Bot {
			continue
		}
		seen := false
		for i := range out {
			if out[i].Bot == a.Bot {
				out[i].Kind = max(out[i].Kind, a.Kind)
				seen = true
			}
		}
		if !seen {
			out = append(out, a)
		}
	}
	return out
}

// within reports whether a and b are at most d apart.
func within(a, b time.Time, d time.Duration) bool {
	diff := a.Sub(b)
	if diff < 0 {
		diff = -diff
	}
	return diff <= d
}

func containsBot(bots []string, bot string) bool {
	for _, b := range bots {
		if b == bot {
			return true
		}
	}
	return false
}

// draw reports whether a draw with probability p succeeds. Certain and
// impossible outcomes take no draw; others take the chat's next one.
func draw(s Settings, st *State, p float64) bool {
	switch {
	case p >= 1:
		return true
	case !(p > 0):
		return false
	}
	n := st.Draws
	st.Draws++
	return Uniform(s, st.Platform, st.Chat, n) < p
}

// Uniform is the chat's n-th draw, in [0, 1): with a seed, the same for
// the same seed, chat and n, in every process; without one, random.
func Uniform(s Settings, platform, chat string, n int64) float64 {
	if !s.Seeded {
		return rand.Float64()
	}
	h := sha256.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(s.Seed))
	h.Write(b[:])
	h.Write([]byte(platform))
	h.Write([]byte{0})
	h.Write([]byte(chat))
	h.Write([]byte{0})
	binary.BigEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
	sum := h.Sum(nil)
	// The top 53 bits, as math/rand makes a float64.
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
}
