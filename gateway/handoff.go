package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/sessions"
)

// handoffAsk is what may hand work on: a person's message or a bot's
// reply, said by a bot in a turn.
type handoffAsk struct {
	t sessions.Turn
	// text is where triggers are looked for; extra are the hand-offs the
	// turn's delegate actions asked for.
	text  string
	extra []brains.Handoff
	// parent is the delegation the turn works for (nil for a person's
	// message or an ordinary reply).
	parent *delegation.Record
	// to is the chat where the bot speaks, which becomes the hand-offs'
	// origin.
	to chat.Ref
	// fromReply is set for a bot's own reply.
	fromReply bool
	// made are the files the turn produced: a delegate action may name
	// them as inputs.
	made []chat.Artifact
}

// handOffs turns the triggers in a.text and the delegate actions in
// a.extra, said by bot, into delegations (SPEC §5).
//
// It returns what the bot should say about them — for a person's message
// the acknowledgements and refusals, for a bot's own reply (fromReply)
// only the refusals, since the reply already says what it hands on — and
// ok false when there is no hand-off at all.
func (g *Gateway) handOffs(ctx context.Context, roster *Roster, bot *Bot, a handoffAsk) (say string, hs []sessions.Handoff, ok bool) {
	t, text, parent, to, fromReply := a.t, a.text, a.parent, a.to, a.fromReply
	var matches []delegation.Match
	if parser, found := roster.Parser(bot.ID); found {
		matches = parser.Find(text)
	}
	// Hand-offs the turn's delegate actions asked for go through the same
	// checks.
	for _, h := range a.extra {
		m := delegation.Match{Written: h.Bot, At: true, Task: strings.TrimSpace(h.Task), Inputs: h.Inputs}
		for _, e := range h.Expected {
			m.Expected = append(m.Expected, delegation.Expected{Name: e.Name, MediaType: e.MediaType, Schema: e.Schema})
		}
		if b, ok := roster.Bot(h.Bot); ok {
			m.Bot = b.ID
		} else if b, ok := roster.ByName(h.Bot); ok {
			m.Bot = b.ID
		}
		if m.Task != "" {
			matches = append(matches, m)
		}
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
	user := g.turnUser(bot, t)
	space := g.turnSpace(ctx, t, user.ID).String() // the hand-off works where its turn does
	depth, chain := 1, []string(nil)
	if parent != nil {
		depth = parent.Depth + 1
		var err error
		if chain, err = delegation.Chain(ctx, g.store, *parent); err != nil {
			g.log.Error("delegation chain", "delegation", parent.ID, "err", err)
			return "", nil, false
		}
	}
	settings := g.delegation.Load()
	wrapperContext := g.wrapperLines(t, text, fromReply, settings.ContextMessages)

	var lines []string
	for _, m := range matches {
		rec := delegation.Record{
			ID: "dlg-" + uuid.NewString(), Kind: delegation.KindHandoff, From: bot.ID, To: m.Bot,
			UserID: user.ID, UserName: user.Name, Task: m.Task, Depth: depth, Status: delegation.StatusQueued,
			Origin: to, OriginSender: originSender(t, parent, to), FromSession: t.Ref.SessionID, Expected: m.Expected,
			Space: space,
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
		} else if problem := g.handoffInputs(ctx, &rec, m.Inputs, a.made, parent); problem != "" {
			refusal = &delegation.Refusal{Code: delegation.RefusedInputs, Reason: fmt.Sprintf("I can't hand that to %s: %s.", target.Name, problem)}
		} else {
			err := g.policy.Admit(delegation.Request{
				From: bot.ID, To: target.ID, FromName: bot.Name, ToName: target.Name, User: user.ID,
				Chain: chain, Depth: depth, Allowed: bot.Allows(target.ID), Public: bot.Public || target.Public,
			})
			if err != nil && !errors.As(err, &refusal) {
				refusal = &delegation.Refusal{Code: "error", Reason: err.Error()}
			}
		}
		h := sessions.Handoff{Record: rec}
		if refusal != nil {
			h.Record.Status, h.Record.Error = delegation.StatusRefused, refusal.Reason
			lines = append(lines, refusal.Reason)
			g.log.Info("delegation refused", "from", bot.ID, "to", rec.To, "code", refusal.Code, "depth", depth)
		} else {
			h.Target = sessions.Key{Bot: target.ID, Scope: sessions.ScopeUser, ScopeID: user.ID}
			h.Wrapper = delegation.Wrapper(bot.Name, user.Name, m.Task, wrapperContext)
			if !fromReply {
				lines = append(lines, delegation.Acknowledgement(target.Name, m.Task))
			}
			g.log.Info("delegation queued", "delegation", rec.ID, "from", bot.ID, "to", target.ID, "depth", depth)
		}
		hs = append(hs, h)
	}
	return strings.Join(lines, "\n"), hs, true
}

// handoffInputs sets rec's inputs to the files names names (see
// resolveInputs), and returns why it cannot ("" when it can): a name
// found nowhere. A store that fails is tried again, holding the turn,
// until the gateway stops.
func (g *Gateway) handoffInputs(ctx context.Context, rec *delegation.Record, names []string, made []chat.Artifact, parent *delegation.Record) string {
	var missing *inputError
	read := retry(ctx, g.log, "delegation inputs", func() error {
		ids, err := g.resolveInputs(ctx, names, made, parent, rec.Space)
		if errors.As(err, &missing) {
			return nil
		}
		rec.Inputs = ids
		return err
	})
	switch {
	case missing != nil:
		return missing.Error()
	case !read:
		return "its input files could not be read before the gateway stopped"
	}
	return ""
}

// originSender is the person's platform ID in the chat a hand-off starts
// from, when known.
func originSender(t sessions.Turn, parent *delegation.Record, to chat.Ref) string {
	if t.Message.From.Kind == chat.Human && t.Message.Platform == to.Platform {
		return t.Message.From.ID
	}
	if parent != nil && parent.Origin.Platform == to.Platform {
		return parent.OriginSender
	}
	if pid, _, ok := SplitPrivateChatID(to.ID); ok && to.Platform == PlatformWeb && to.Type == chat.Private {
		return pid
	}
	return ""
}

// wrapperLines are the recent labelled messages a hand-off carries: the
// session's history, the message being answered and, for a hand-off in a
// bot's reply, the reply itself.
func (g *Gateway) wrapperLines(t sessions.Turn, text string, fromReply bool, n int) []delegation.Line {
	var lines []delegation.Line
	for _, m := range t.History {
		if m.Kind == chat.KindChat && m.From.Kind != chat.System {
			lines = append(lines, delegation.Line{Human: m.From.Kind == chat.Human, Name: m.From.Name, Text: m.Text})
		}
	}
	if t.Message.Kind == chat.KindChat {
		lines = append(lines, delegation.Line{Human: t.Message.From.Kind == chat.Human, Name: t.Message.From.Name, Text: t.Message.Text})
	}
	if fromReply {
		lines = append(lines, delegation.Line{Name: g.roster.Load().Name(t.Session.Key.Bot), Text: text})
	}
	if n <= 0 {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
