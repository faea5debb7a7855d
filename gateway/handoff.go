package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/delegation"
)

// mayHandOff reports whether handOffs could find a hand-off in text said
// by bot in a private chat, or in a brain's extra hand-offs: it looks for
// triggers without admitting anything.
func mayHandOff(roster *Roster, bot *Bot, text string, extra []brains.Handoff) bool {
	if len(extra) > 0 {
		return true
	}
	parser, found := roster.Parser(bot.ID)
	return found && len(parser.Find(text)) > 0
}

// handOffs turns the triggers in text, said by bot in the turn data, into
// delegations (SPEC §5). parent is the delegation the turn works for (nil
// for a person's message or an ordinary reply); to is the chat where the
// bot speaks, which becomes the hand-off's origin.
//
// It returns what the bot should say about them — for a person's message
// the acknowledgements and refusals, for a bot's own reply (fromReply)
// only the refusals, since the reply already says what it hands on — and
// ok false when text holds no trigger at all.
func (g *Gateway) handOffs(ctx context.Context, roster *Roster, bot *Bot, data TurnData, text string, extra []brains.Handoff, parent *Delegation, to ChatRef, fromReply bool) (say string, ds []NewDelegation, ok bool) {
	var matches []delegation.Match
	if parser, found := roster.Parser(bot.ID); found {
		matches = parser.Find(text)
	}
	// Hand-offs a brain asked for by tool call go through the same checks.
	for _, h := range extra {
		m := delegation.Match{Written: h.Bot, At: true, Task: strings.TrimSpace(h.Task)}
		if b, ok := roster.Bot(h.Bot); ok {
			m.Bot = b.ID
		} else if b, ok := roster.ByName(h.Bot); ok {
			m.Bot = b.ID
		}
		if m.Task != "" {
			matches = append(matches, m)
		}
	}
	if fromReply && to.Type == ChatGroup {
		matches = append(matches, g.groupAddresses(ctx, roster, bot, text, to)...)
	}
	// One hand-off per target and message.
	seen := map[string]bool{}
	matches = slices.DeleteFunc(matches, func(m delegation.Match) bool {
		key := m.Bot
		if key == "" {
			key = "?" + strings.ToLower(m.Written)
		}
		dup := seen[key]
		seen[key] = true
		return dup
	})
	if len(matches) == 0 {
		return "", nil, false
	}
	user := g.turnUser(bot, data)
	depth, chain := 1, []string(nil)
	if parent != nil {
		depth = parent.Depth + 1
		var err error
		if chain, err = g.chain(ctx, *parent); err != nil {
			g.log.Error("delegation chain", "delegation", parent.ID, "err", err)
			return "", nil, false
		}
	}
	settings := g.delegation.Load()
	wrapperContext := g.wrapperLines(data, text, fromReply, settings.ContextMessages)

	var lines []string
	for _, m := range matches {
		rec := Delegation{
			ID: "dlg-" + uuid.NewString(), From: bot.ID, To: m.Bot, UserID: user.ID, UserName: user.Name,
			Task: m.Task, Depth: depth, Status: StatusQueued, Origin: to, OriginSender: g.originSender(data, parent, to),
			FromSession: data.Ref.SessionID,
		}
		if parent != nil {
			rec.ParentID = parent.ID
		}
		target, known := roster.Bot(m.Bot)
		var refusal *delegation.Refusal
		if !known {
			rec.To = m.Written
			written := m.Written
			if m.At {
				written = "@" + written
			}
			refusal = &delegation.Refusal{Code: delegation.RefusedUnknown, Reason: delegation.Unknown(written, roster.Name(m.Suggest))}
			if m.Suggest == "" {
				refusal.Reason = delegation.Unknown(written, "")
			}
		} else {
			err := g.policy.Admit(delegation.Request{
				From: bot.ID, To: target.ID, FromName: bot.Name, ToName: target.Name, User: user.ID,
				Chain: chain, Depth: depth, Allowed: bot.Allows(target.ID), Public: bot.Public || target.Public,
			})
			if err != nil && !errors.As(err, &refusal) {
				refusal = &delegation.Refusal{Code: "error", Reason: err.Error()}
			}
		}
		nd := NewDelegation{Record: rec}
		if refusal != nil {
			nd.Record.Status, nd.Record.Error = StatusRefused, refusal.Reason
			if !m.Implicit {
				// A bot merely mentioning another ("thanks @matty") is not
				// told off in the group; the refusal is on record.
				lines = append(lines, refusal.Reason)
			}
			g.log.Info("delegation refused", "from", bot.ID, "to", rec.To, "code", refusal.Code, "depth", depth)
		} else {
			nd.Target = SessionKey{Bot: target.ID, Scope: ScopeUser, ScopeID: user.ID}
			nd.Wrapper = delegation.Wrapper(bot.Name, user.Name, m.Task, wrapperContext)
			if !fromReply {
				lines = append(lines, delegation.Acknowledgement(target.Name, m.Task))
			}
			g.log.Info("delegation queued", "delegation", rec.ID, "from", bot.ID, "to", target.ID, "depth", depth)
		}
		ds = append(ds, nd)
	}
	return strings.Join(lines, "\n"), ds, true
}

// groupAddresses finds the other bots a bot's message in a group
// addresses by mention or leading /command. Platforms do not reliably show
// one bot's messages to another (Telegram never does), so the gateway
// routes them itself, as hand-offs: the same gating, the same limits. The
// task is the message with the address stripped.
func (g *Gateway) groupAddresses(ctx context.Context, roster *Roster, bot *Bot, text string, to ChatRef) []delegation.Match {
	type hit struct {
		b          *Bot
		start, end int
	}
	var hits []hit
	if name, end := leadingCommand(text); name != "" {
		if b, ok := roster.ByName(name); ok {
			hits = append(hits, hit{b, 0, end})
		}
	}
	for _, m := range ParseMentions(text) {
		if b, ok := roster.ByName(m.Name); ok {
			hits = append(hits, hit{b, m.Start, m.End})
		}
	}
	var cuts [][2]int
	for _, h := range hits {
		cuts = append(cuts, [2]int{h.start, h.end})
	}
	task := stripRanges(text, cuts)
	var out []delegation.Match
	for _, h := range hits {
		if h.b.ID == bot.ID || task == "" {
			continue
		}
		in, err := g.store.ChatHasBot(ctx, to.Platform, to.ChatID, h.b.ID)
		if err != nil {
			g.log.Error("group membership", "err", err)
			continue
		}
		if in {
			out = append(out, delegation.Match{Bot: h.b.ID, Written: h.b.ID, At: true, Task: task, Implicit: true})
		}
	}
	return out
}

// chain lists the bots that handed work down to parent's target, root
// first, from the stored records (never from message text).
func (g *Gateway) chain(ctx context.Context, parent Delegation) ([]string, error) {
	chain := []string{parent.From}
	for id, hops := parent.ParentID, 0; id != ""; hops++ {
		if hops > 64 {
			return nil, errors.New("delegation chain too long")
		}
		d, err := g.store.GetDelegation(ctx, id)
		if err != nil {
			return nil, err
		}
		chain = append([]string{d.From}, chain...)
		id = d.ParentID
	}
	return chain, nil
}

// originSender is the person's platform ID in the chat a hand-off starts
// from, when known.
func (g *Gateway) originSender(data TurnData, parent *Delegation, to ChatRef) string {
	if data.Message.From.Kind == "human" && data.Message.Platform == to.Platform {
		return data.Message.From.ID
	}
	if parent != nil && parent.Origin.Platform == to.Platform {
		return parent.OriginSender
	}
	if pid, _, ok := SplitPrivateChatID(to.ChatID); ok && to.Platform == PlatformWeb {
		return pid
	}
	return ""
}

// wrapperLines are the recent labelled messages a hand-off carries: the
// session's history, the message being answered and, for a hand-off in a
// bot's reply, the reply itself.
func (g *Gateway) wrapperLines(data TurnData, text string, fromReply bool, n int) []delegation.Line {
	var lines []delegation.Line
	for _, m := range data.History {
		if m.Kind == KindChat && m.From.Kind != "system" {
			lines = append(lines, delegation.Line{Human: m.From.Kind == "human", Name: m.From.Name, Text: m.Text})
		}
	}
	if data.Message.Kind == KindChat {
		lines = append(lines, delegation.Line{Human: data.Message.From.Kind == "human", Name: data.Message.From.Name, Text: data.Message.Text})
	}
	if fromReply {
		lines = append(lines, delegation.Line{Name: g.roster.Load().Name(data.Session.Key.Bot), Text: text})
	}
	if n <= 0 {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// delegatedTurn runs a bot's turn on a task handed to it: mark it running,
// ask the brain within the delegation timeout, check expected outputs,
// deliver the reply (SPEC §3 routing), record the result and call back the
// asking bot's session.
func (g *Gateway) delegatedTurn(ctx context.Context, log logger, roster *Roster, bot *Bot, data TurnData) Completion {
	d := *data.Delegation
	c := Completion{Turn: data.Ref, Session: data.Ref.SessionID}
	if d.Status == StatusQueued {
		if !g.retryStore(ctx, log, "mark delegation running", func() error {
			return g.store.UpdateDelegation(ctx, DelegationUpdate{ID: d.ID, Status: StatusRunning})
		}) {
			return c
		}
		d.Status = StatusRunning
		g.notify(d)
	}
	to, err := g.routeDelegated(ctx, roster, bot, d)
	if err != nil {
		return g.failDelegation(c, roster, d, err.Error())
	}
	timeout := g.delegation.Load().Timeout
	if bot.Timeout > 0 && (timeout <= 0 || bot.Timeout < timeout) {
		timeout = bot.Timeout
	}
	stop := g.startTyping(to.Platform, bot.ID, to.ChatID)
	reply, err := g.think(ctx, bot, data, timeout)
	stop()
	if ctx.Err() != nil {
		return c
	}
	if err != nil {
		log.Warn("delegated turn failed", "delegation", d.ID, "bot", bot.ID, "err", err)
		reason := "its brain failed"
		if errors.Is(err, context.DeadlineExceeded) {
			reason = fmt.Sprintf("it ran past the %s time limit", timeout)
		}
		return g.failDelegation(c, roster, d, reason)
	}
	text := strings.TrimSpace(reply.Text)
	c.ResumeID = reply.ResumeID
	arts := artifactRecords(reply.Artifacts, bot.ID)

	if problems := checkOutputs(d.Expected, reply.Artifacts); len(problems) > 0 {
		if d.Retries == 0 {
			log.Info("delegation outputs invalid; one corrective retry", "delegation", d.ID, "problems", len(problems))
			c.Retry = delegation.Corrective(d.Task, problems)
			c.Update = &DelegationUpdate{ID: d.ID, Status: StatusRunning, Retry: true}
			// Keep the attempt in the session, so the retry sees it.
			c.Notes = []Note{{Session: c.Session, Message: Message{
				Kind: KindSystem, From: Party{Kind: "bot", ID: bot.ID, Name: bot.Name},
				UserID: d.UserID, Bot: bot.ID, Text: text, Time: g.now(), DelegationID: d.ID,
			}}}
			return c
		}
		return g.failDelegation(c, roster, d, "the outputs are still missing or invalid after one corrective retry: "+strings.Join(problems, "; "))
	}
	if text == "" && len(arts) == 0 {
		return g.failDelegation(c, roster, d, "it produced an empty reply")
	}

	c.Artifacts = arts
	if text != "" {
		c.Posts = append(c.Posts, g.post(bot, data, to, text, d.ID))
	}
	c.Update = &DelegationUpdate{ID: d.ID, Status: StatusDone, Result: text}
	d.Status = StatusDone
	c = g.callBack(c, roster, d, to, delegation.Callback(bot.ID, d.Task, text), delegation.Finished(bot.Name, text))

	// The reply may hand work on: a nested delegation at depth + 1.
	if text != "" || len(reply.Handoffs) > 0 {
		if note, ds, ok := g.handOffs(ctx, roster, bot, data, text, reply.Handoffs, &d, to, true); ok {
			c.Delegations = ds
			if note != "" {
				c.Posts = append(c.Posts, g.post(bot, data, to, note, ""))
			}
		}
	}
	return c
}

// failDelegation closes d as failed: the asking bot's session learns why,
// and the asking bot says so in the chat the hand-off came from.
func (g *Gateway) failDelegation(c Completion, roster *Roster, d Delegation, reason string) Completion {
	c.Update = &DelegationUpdate{ID: d.ID, Status: StatusFailed, Error: reason}
	c.Posts = nil
	name := roster.Name(d.To)
	return g.callBack(c, roster, d, ChatRef{},
		delegation.FailedCallback(d.To, d.Task, reason),
		fmt.Sprintf("%s couldn't finish %q: %s.", name, delegation.Summary(d.Task, 80), reason))
}

// callBack puts the result note into the asking bot's session and, when
// the answer went elsewhere than the chat the hand-off came from (or there
// was none), has the asking bot post notice there.
func (g *Gateway) callBack(c Completion, roster *Roster, d Delegation, answeredIn ChatRef, note, notice string) Completion {
	if d.FromSession != "" {
		c.Notes = append(c.Notes, Note{Session: d.FromSession, Message: Message{
			Kind: KindSystem, From: Party{Kind: "system", ID: d.To, Name: "delegation"},
			UserID: d.UserID, Bot: d.From, Text: note, Time: g.now(), DelegationID: d.ID,
		}})
	}
	from, ok := roster.Bot(d.From)
	if d.Origin.ChatID == "" || !ok || (answeredIn.Platform == d.Origin.Platform && answeredIn.ChatID == d.Origin.ChatID) {
		return c
	}
	c.Posts = append(c.Posts, Post{Session: d.FromSession, Message: Message{
		Platform: d.Origin.Platform, ChatID: d.Origin.ChatID, ChatType: d.Origin.Type, Kind: KindChat,
		From: Party{Kind: "bot", ID: from.ID, Name: from.Name}, UserID: d.UserID, Bot: from.ID,
		Text: notice, Time: g.now(), DelegationID: d.ID,
	}})
	return c
}

// checkOutputs compares a reply's artifacts with a delegation's expected
// outputs.
func checkOutputs(expected []ExpectedOutput, arts []brains.Artifact) []string {
	if len(expected) == 0 {
		return nil
	}
	exp := make([]delegation.Expected, 0, len(expected))
	for _, e := range expected {
		exp = append(exp, delegation.Expected{Name: e.Name, MediaType: e.MediaType, Schema: e.Schema})
	}
	got := make([]delegation.Produced, 0, len(arts))
	for _, a := range arts {
		got = append(got, delegation.Produced{Name: a.Name, MediaType: a.MediaType, Content: a.Content})
	}
	return delegation.CheckOutputs(exp, got)
}

// settleOpenDelegations fails hand-offs that a restart left without a
// turn to finish them, with the reason, so none is silently lost.
func (g *Gateway) settleOpenDelegations(ctx context.Context) error {
	open, err := g.store.OpenDelegations(ctx)
	if err != nil {
		return err
	}
	roster := g.roster.Load()
	for _, d := range open {
		c := g.failDelegation(Completion{}, roster, d, "it was interrupted by a restart before it could start")
		c.OnStored = func(done Completed) {
			for _, o := range done.Outbox {
				g.outbox.enqueue(o)
			}
		}
		if _, err := g.store.CompleteTurn(ctx, c); err != nil {
			return err
		}
		d.Status = StatusFailed
		g.notify(d)
		g.log.Warn("delegation failed after restart", "delegation", d.ID)
	}
	return nil
}
