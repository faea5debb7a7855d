package gateway

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world/chains"
)

// Bot-to-bot chains (SPEC §10.6). Platforms do not reliably show one
// bot's messages to another (Telegram never does), so the gateway hears
// its own bots itself: once a bot's message in a group is stored, it is
// judged (world/chains) against the chat's stored chain, and the bots
// that answer it get turns on it, in the same transaction as the chain's
// new state. A message with a hand-off in it is a hand-off and is not
// judged. A person's message is answered as ever, whatever the chain.
//
// The turns that answer are chain steps: each knows its step and whether
// it closes the chain (the store keeps both with the turn), which the
// brain sees as .Crossbot.

// DefaultCrossbot is gateway.crossbot when the configuration says
// nothing (config's defaults).
var DefaultCrossbot = chains.Settings{
	Enabled: true, MaxChain: 3, ResponseChance: 0.35, Cooldown: 6 * time.Hour, Burst: 30 * time.Second,
}

// SetCrossbot publishes new chain settings; judgements from now on use
// them.
func (g *Gateway) SetCrossbot(s chains.Settings) { g.crossbot.Store(&s) }

// Crossbot returns the chain settings in force.
func (g *Gateway) Crossbot() chains.Settings { return *g.crossbot.Load() }

// Chains lists the group chats' chains, most recently active first.
func (g *Gateway) Chains(ctx context.Context, limit int) ([]ChainInfo, error) {
	return g.store.Chains(ctx, limit)
}

// chainReply is what the answer of an ordinary turn leaves for its
// judgement once stored: the bot whose message the turn answered in the
// same group ("" for a person's).
type chainReply struct {
	answered string
}

// noteChainReply marks turn t's outcome o, said by bot in a group, for
// judgement once stored (judgeReplies). A reply that hands work on is a
// hand-off, never part of a chain.
func (g *Gateway) noteChainReply(bot *Bot, t sessions.Turn, o sessions.Outcome) {
	if len(o.Handoffs) > 0 || bot.Public || !g.crossbot.Load().Enabled {
		return
	}
	r := chainReply{}
	if m := t.Message; m.From.Kind == chat.Bot && m.Kind == chat.KindChat {
		r.answered = m.From.ID
	}
	for _, p := range o.Posts {
		if p.Message.ChatType == chat.Group {
			g.chainReplies.Store(t.Ref.ID, r)
			return
		}
	}
}

// dropChainReply forgets what noteChainReply left for a turn whose
// outcome will not be stored now.
func (g *Gateway) dropChainReply(turn int64) { g.chainReplies.Delete(turn) }

// judgeReplies judges the group messages a stored outcome said, when its
// turn left them for judgement: the bots that answer get their turns.
func (g *Gateway) judgeReplies(o sessions.Outcome, done sessions.Done) {
	v, ok := g.chainReplies.LoadAndDelete(o.Turn.ID)
	if !ok {
		return
	}
	r := v.(chainReply)
	for i, p := range o.Posts {
		m := p.Message
		if i >= len(done.Outbox) || m.ChatType != chat.Group || m.Kind != chat.KindChat || m.Failed || m.DelegationID != "" {
			continue
		}
		m.ID = done.Outbox[i].MessageID
		answered := ""
		if m.ReplyToID != 0 {
			answered = r.answered
		}
		// Detached: the turn is stored, and so must its judgement be,
		// even as the runner stops.
		ctx, cancel := context.WithTimeout(context.Background(), judgeTimeout)
		g.judge(ctx, m, answered)
		cancel()
	}
}

// judgeTimeout bounds one judgement.
const judgeTimeout = 10 * time.Second

// judgeTries bounds how often a judgement is made again when another
// writer changed the chat's chain meanwhile.
const judgeTries = 5

// judge decides who answers bot message m, stored in a group, which
// answers bot answered's message ("" for none), and queues their turns.
func (g *Gateway) judge(ctx context.Context, m chat.Message, answered string) {
	settings := *g.crossbot.Load()
	if !settings.Enabled {
		return
	}
	log := g.log.With("platform", m.Platform, "chat", m.ChatID, "message", m.ID, "bot", m.Bot)
	roster := g.roster.Load()
	addrs, texts, err := g.chainAddresses(ctx, roster, m, answered)
	if err != nil {
		log.Error("crossbot: who the message addresses", "err", err)
		return
	}
	for range judgeTries {
		st, person, err := g.store.ChainState(ctx, m.Platform, m.ChatID, m.ID)
		if err != nil {
			log.Error("crossbot: chain state", "err", err)
			return
		}
		v := chains.Judge(settings, st, chains.Message{ID: m.ID, Bot: m.Bot, At: m.Time, Addresses: addrs, PersonBefore: person})
		adv := ChainAdvance{State: v.State, Message: m.ID, At: g.now()}
		for _, a := range v.Answers {
			b, _ := roster.Bot(a.Bot)
			adv.Answers = append(adv.Answers, ChainAnswer{
				Session: sessions.KeyFor(b.ID, b.SessionScope, m.Chat(), m.UserID),
				Text:    texts[a.Bot], Step: a.Step, Closing: a.Closing,
			})
		}
		turns, ok, err := g.store.AdvanceChain(ctx, adv)
		if err != nil {
			log.Error("crossbot: store the chain", "err", err)
			return
		}
		if !ok {
			continue // another message of the chat was judged meanwhile
		}
		g.logVerdict(log, v, st)
		woken := make([]string, 0, len(turns))
		for _, t := range turns {
			woken = append(woken, t.SessionID)
		}
		g.runner.Wake(woken...)
		return
	}
	log.Warn("crossbot: the chat's chain kept changing; the message wakes nobody")
}

// logVerdict says what a judgement did, when it did something.
func (g *Gateway) logVerdict(log interface {
	Info(string, ...any)
}, v chains.Verdict, before chains.State) {
	switch {
	case v.Cooldown:
		log.Info("crossbot: no new chain during the cooldown", "until", before.LastAt.Add(g.crossbot.Load().Cooldown))
	case len(v.Answers) > 0:
		for _, a := range v.Answers {
			log.Info("crossbot: a bot answers", "to", a.Bot, "chain", v.State.Chain, "step", a.Step,
				"closing", a.Closing, "by", a.Kind.String(), "sure", a.Sure, "started", v.Started, "folded", v.Folded)
		}
	case v.State.Status == chains.Closed && before.Status == chains.Active:
		log.Info("crossbot: chain closed", "chain", v.State.Chain, "steps", v.State.Steps)
	}
}

// chainAddresses finds the bots of m's chat that m addresses, in the
// order addressed (a reply first), and for each the text its brain would
// see: m's text with its mentions of that bot stripped. Its author,
// public bots and bots not in the chat are left out.
func (g *Gateway) chainAddresses(ctx context.Context, roster *Roster, m chat.Message, answered string) ([]chains.Address, map[string]string, error) {
	type hit struct {
		bot  *Bot
		kind chains.Kind
		cut  [2]int // the mention to strip; {-1,-1} for none
	}
	var hits []hit
	if b, ok := roster.Bot(answered); ok {
		hits = append(hits, hit{b, chains.Reply, [2]int{-1, -1}})
	}
	if name, end := leadingCommand(m.Text); name != "" {
		if b, ok := roster.ByName(name); ok {
			hits = append(hits, hit{b, chains.Mention, [2]int{0, end}})
		}
	}
	for _, mn := range ParseMentions(m.Text) {
		if b, ok := roster.ByName(mn.Name); ok {
			hits = append(hits, hit{b, chains.Mention, [2]int{mn.Start, mn.End}})
		}
	}
	for _, b := range roster.Bots() {
		if NamedIn(m.Text, b.Names()) {
			hits = append(hits, hit{b, chains.Name, [2]int{-1, -1}})
		}
	}

	var addrs []chains.Address
	texts := map[string]string{}
	present := map[string]bool{}
	for _, h := range hits {
		b := h.bot
		if b.ID == m.Bot || b.Public {
			continue
		}
		in, seen := present[b.ID]
		if !seen {
			var err error
			if in, err = g.store.ChatHasBot(ctx, m.Platform, m.ChatID, b.ID); err != nil {
				return nil, nil, err
			}
			present[b.ID] = in
		}
		if !in {
			continue
		}
		addrs = append(addrs, chains.Address{Bot: b.ID, Kind: h.kind})
		if _, done := texts[b.ID]; !done {
			var cuts [][2]int
			for _, o := range hits {
				if o.bot.ID == b.ID && o.cut[0] >= 0 {
					cuts = append(cuts, o.cut)
				}
			}
			texts[b.ID] = stripRanges(m.Text, cuts)
			if texts[b.ID] == "" {
				texts[b.ID] = strings.TrimSpace(m.Text)
			}
		}
	}
	return addrs, texts, nil
}

// NamedIn reports whether text holds one of names (lower-cased, as
// Bot.Names gives them) as a whole word or words: not inside a longer
// word, case-insensitively. "Finn," and "@finn" name finn; "finnish"
// does not.
func NamedIn(text string, names []string) bool {
	lower := strings.ToLower(text)
	for _, name := range names {
		if name == "" {
			continue
		}
		for i := 0; i <= len(lower)-len(name); {
			j := strings.Index(lower[i:], name)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(name)
			if wordEdge(lower, start, true) && wordEdge(lower, end, false) {
				return true
			}
			_, size := utf8.DecodeRuneInString(lower[start:])
			i = start + size
		}
	}
	return false
}

// wordEdge reports whether a word may begin (before) or end at byte i of
// s: the rune on the other side is not part of a word.
func wordEdge(s string, i int, before bool) bool {
	var r rune
	if before {
		if i == 0 {
			return true
		}
		r, _ = utf8.DecodeLastRuneInString(s[:i])
	} else {
		if i >= len(s) {
			return true
		}
		r, _ = utf8.DecodeRuneInString(s[i:])
	}
	return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
}

// chainStepKey is the context key of a turn's chain step.
type chainStepKey struct{}

// withChainStep returns ctx carrying the chain step turn t is, when it
// is one: a turn answering a bot's chat message in a group.
func (g *Gateway) withChainStep(ctx context.Context, t sessions.Turn) context.Context {
	m := t.Message
	if t.Delegation != nil || m.From.Kind != chat.Bot || m.Kind != chat.KindChat || m.ChatType != chat.Group {
		return ctx
	}
	step, ok, err := g.store.ChainTurn(ctx, t.Ref.ID)
	if err != nil && !errors.Is(err, context.Canceled) {
		g.log.Error("crossbot: chain step of a turn", "turn", t.Ref.ID, "err", err)
	}
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, chainStepKey{}, step)
}

// crossbotOf tells a chain step's brain what it is: the chain's length
// with it, whether it closes the chain, and whose message it answers.
// user is the person the turn is for, whose name the step knows when
// users.yaml does not.
func crossbotOf(ctx context.Context, t sessions.Turn, user *brains.User) *brains.Crossbot {
	step, ok := ctx.Value(chainStepKey{}).(ChainStep)
	if !ok {
		return nil
	}
	if user.Name == user.ID && step.Person != "" {
		user.Name = step.Person
	}
	return &brains.Crossbot{Length: step.Step, Closing: step.Closing, From: t.Message.From.Name, FromID: t.Message.From.ID}
}
