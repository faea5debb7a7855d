package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world/actions"
)

// Help requests (SPEC §10.3) are delegation records of kind help, made by
// the request_help action and carried by the hand-off machinery: the
// record, the wrapper in the helper's session, the turn it queues, the
// limits and the callback. What differs is where words go. The helper's
// answer is shown to nobody: it stays in the helper's session as a system
// message, and comes back to the asking bot's session as a note with a
// turn of its own (the follow-up), whose reply goes to the chat the
// request came from.

// MaxQuestion bounds a help request's question, in characters.
const MaxQuestion = actions.MaxQuestion

var _ actions.Helper = (*Gateway)(nil)

// RequestHelp asks bot (an ID, a name or an alias, with or without '@')
// question on behalf of a, the caller of a turn's request_help action
// (SPEC §10.3; world/actions.Help). It never waits for the answer: the
// request is stored, with the helper's turn, before it returns, and the
// answer comes back as a turn of a's session. It returns what to tell
// the asking bot. Bad arguments are *actions.ArgumentErrors naming the
// one at fault; a refusal (an unknown bot, a limit of SPEC §5, a public
// bot) wraps brains.ErrActionRefused and is stored as a refused record.
func (g *Gateway) RequestHelp(ctx context.Context, a actions.Caller, bot, question string) (string, error) {
	if g.stopped.Load() {
		return "", ErrStopped
	}
	bot = strings.TrimPrefix(strings.TrimSpace(bot), "@")
	question = strings.TrimSpace(question)
	switch {
	case bot == "":
		return "", &actions.ArgumentError{Action: actions.RequestHelp, Arg: "bot", Problem: "missing: name the bot to ask"}
	case question == "":
		return "", &actions.ArgumentError{Action: actions.RequestHelp, Arg: "question", Problem: "missing"}
	case utf8.RuneCountInString(question) > MaxQuestion:
		return "", &actions.ArgumentError{Action: actions.RequestHelp, Arg: "question", Problem: fmt.Sprintf("longer than %d characters", MaxQuestion)}
	}
	roster := g.roster.Load()
	from, ok := roster.Bot(a.Bot)
	if !ok {
		return "", fmt.Errorf("%w: the asking bot %q is not configured", brains.ErrActionRefused, a.Bot)
	}
	depth, chain := 1, []string(nil)
	if a.Delegation != "" {
		p, err := g.store.Delegation(ctx, a.Delegation)
		if err != nil {
			return "", fmt.Errorf("request_help: the turn's delegation: %w", err)
		}
		depth = p.Depth + 1
		if chain, err = delegation.Chain(ctx, g.store, p); err != nil {
			return "", fmt.Errorf("request_help: %w", err)
		}
	}
	rec := delegation.Record{
		ID: "dlg-" + uuid.NewString(), Kind: delegation.KindHelp, From: from.ID, To: bot,
		UserID: a.User, UserName: a.UserName, Task: question, Depth: depth, Status: delegation.StatusQueued,
		Origin: a.Chat, OriginSender: a.Sender, FromSession: a.Session, Space: a.Space,
	}
	rec.ParentID = a.Delegation
	h := sessions.Handoff{Record: rec}
	target, known := roster.Bot(bot)
	if !known {
		target, known = roster.ByName(bot)
	}
	var refusal *delegation.Refusal
	if !known {
		refusal = &delegation.Refusal{Code: delegation.RefusedUnknown, Reason: delegation.Unknown(bot, "")}
		if p, ok := roster.Parser(from.ID); ok {
			if id := p.Closest(bot); id != "" {
				refusal.Reason = delegation.Unknown(bot, roster.Name(id))
			}
		}
	} else {
		h.Record.To = target.ID
		err := g.policy.Admit(delegation.Request{
			From: from.ID, To: target.ID, FromName: from.Name, ToName: target.Name, User: a.User,
			Chain: chain, Depth: depth, Allowed: from.Allows(target.ID), Public: from.Public || target.Public, Help: true,
		})
		if err != nil && !errors.As(err, &refusal) {
			return "", err
		}
	}
	if refusal != nil {
		h.Record.Status, h.Record.Error = delegation.StatusRefused, refusal.Reason
	} else {
		h.Target = sessions.Key{Bot: target.ID, Scope: sessions.ScopeUser, ScopeID: a.User}
		h.Wrapper = delegation.HelpWrapper(from.Name, a.UserName, question)
	}
	turns, err := g.store.StartDelegations(ctx, []sessions.Handoff{h})
	if err != nil {
		return "", fmt.Errorf("request_help: %w", err)
	}
	g.notify(h.Record)
	for _, t := range turns {
		g.runner.Wake(t.SessionID)
	}
	g.log.Info("help request", "delegation", h.Record.ID, "from", from.ID, "to", h.Record.To, "depth", depth, "status", h.Record.Status)
	if refusal != nil {
		return "", fmt.Errorf("bot %q: %w: %s", bot, brains.ErrActionRefused, refusal.Reason)
	}
	return fmt.Sprintf("Asked %s (@%s) for help. The answer comes back to you in a new turn; carry on meanwhile.", target.Name, target.ID), nil
}

// helpTurn runs the helper's turn on a help request: mark it running,
// ask the brain within the delegation timeout, keep the answer in the
// helper's session (never shown to anyone) and give it to the asking
// bot's session with a follow-up turn.
func (g *Gateway) helpTurn(ctx context.Context, log *slog.Logger, roster *Roster, bot *Bot, t sessions.Turn) sessions.Outcome {
	d := *t.Delegation
	var o sessions.Outcome
	if d.Status == delegation.StatusQueued {
		if !retry(ctx, log, "mark help request running", func() error {
			return g.store.UpdateDelegation(ctx, delegation.Update{ID: d.ID, Status: delegation.StatusRunning})
		}) {
			return o
		}
		d.Status = delegation.StatusRunning
		g.notify(d)
	}
	timeout := g.delegation.Load().Timeout
	if bot.Timeout > 0 && (timeout <= 0 || bot.Timeout < timeout) {
		timeout = bot.Timeout
	}
	// No typing indicator: the person is not waiting on this bot. Its
	// actions act from the chat the request came from (its space).
	reply, asked, err := g.think(ctx, log, bot, t, timeout, d.Origin)
	if ctx.Err() != nil {
		return o
	}
	if err != nil {
		log.Warn("help turn failed", "delegation", d.ID, "bot", bot.ID, "err", err)
		reason := "its brain failed"
		if errors.Is(err, context.DeadlineExceeded) {
			reason = fmt.Sprintf("it ran past the %s time limit", timeout)
		}
		return g.failHelp(ctx, log, o, roster, d, reason)
	}
	answer := strings.TrimSpace(reply.Text)
	if answer == "" {
		return g.failHelp(ctx, log, o, roster, d, "it produced an empty answer")
	}
	if len(asked) > 0 {
		// An answer is said to nobody, so it hands nothing on.
		log.Info("hand-offs in a help answer ignored", "delegation", d.ID, "count", len(asked))
	}
	o.ResumeID = reply.ResumeID
	// Files are kept with the record; they are not shown either.
	o.Artifacts = artifactRecords(reply.Artifacts, bot.ID)
	o.Update = &delegation.Update{ID: d.ID, Status: delegation.StatusDone, Result: answer}
	o.Notes = append(o.Notes, sessions.Note{Session: t.Ref.SessionID, Message: chat.Message{
		Kind: chat.KindSystem, From: chat.Party{Kind: chat.Bot, ID: bot.ID, Name: bot.Name},
		UserID: d.UserID, Bot: bot.ID, Text: answer, Time: g.now(), DelegationID: d.ID,
	}})
	if d.FromSession != "" {
		note := g.callbackNote(d, delegation.HelpCallback(bot.ID, d.Task, answer))
		note.FollowUp = answer
		o.Notes = append(o.Notes, note)
	}
	return o
}

// failHelp closes a help request as failed: the asking bot's session
// learns why (without a turn), and the asking bot tells the chat the
// request came from, if it speaks there.
func (g *Gateway) failHelp(ctx context.Context, log *slog.Logger, o sessions.Outcome, roster *Roster, d delegation.Record, reason string) sessions.Outcome {
	o.Update = &delegation.Update{ID: d.ID, Status: delegation.StatusFailed, Error: reason}
	o.Posts = nil
	if to, ok := g.askedFrom(ctx, log, d); ok {
		d.Origin = to
	}
	return g.callBack(o, roster, d, chat.Ref{},
		delegation.HelpFailedCallback(d.To, d.Task, reason),
		fmt.Sprintf("%s couldn't answer %q: %s.", roster.Name(d.To), delegation.Summary(d.Task, 80), reason))
}

// helpFollowUp runs the asking bot's turn on the answer to its help
// request, and says its reply in the chat the request came from. A
// request made while answering one (from a helper's turn, whose words
// are shown to nobody) keeps the reply in the session as a system
// message, as is the reply to a request from outside any chat.
func (g *Gateway) helpFollowUp(ctx context.Context, log *slog.Logger, roster *Roster, bot *Bot, t sessions.Turn) sessions.Outcome {
	d := *t.Delegation
	var o sessions.Outcome
	to, ok := g.askedFrom(ctx, log, d)
	if !ok {
		return o
	}
	stop := func() {}
	if to.ID != "" {
		stop = g.startTyping(to.Platform, bot.ID, to.ID)
	}
	reply, asked, err := g.think(ctx, log, bot, t, bot.Timeout, d.Origin)
	stop()
	if ctx.Err() != nil {
		return o
	}
	text := strings.TrimSpace(reply.Text)
	if to.ID == "" {
		if err != nil {
			log.Warn("help follow-up failed", "delegation", d.ID, "bot", bot.ID, "err", err)
			return o
		}
		o.ResumeID = reply.ResumeID
		o.Notes = append(o.Notes, sessions.Note{Session: t.Ref.SessionID, Message: chat.Message{
			Kind: chat.KindSystem, From: chat.Party{Kind: chat.Bot, ID: bot.ID, Name: bot.Name},
			UserID: d.UserID, Bot: bot.ID, Text: text, Time: g.now(), DelegationID: d.ID,
		}})
		return o
	}
	if err != nil {
		log.Warn("brain failed", "bot", bot.ID, "kind", bot.BrainKind, "err", err)
		p := g.post(bot, t, to, apology(bot), "")
		p.Message.Failed = true
		o.Posts = append(o.Posts, p)
		return o
	}
	o.ResumeID = reply.ResumeID
	o.Artifacts = artifactRecords(reply.Artifacts, bot.ID)
	if text != "" || len(o.Artifacts) > 0 {
		o.Posts = append(o.Posts, g.post(bot, t, to, cmp.Or(text, attachedNote(o.Artifacts)), ""))
	}
	// The reply may hand work on, one deeper than the request.
	if note, hs, ok := g.handOffs(ctx, roster, bot, handoffAsk{t: t, text: text, extra: asked, parent: &d, to: to, fromReply: true, made: o.Artifacts}); ok {
		o.Handoffs = hs
		if note != "" {
			o.Posts = append(o.Posts, g.post(bot, t, to, note, ""))
		}
	}
	return o
}

// askedFrom is the chat where the asking bot of help request d speaks:
// the chat the request came from, unless the asking bot asked while
// answering a help request itself, whose words are shown to nobody (then
// none). ok is false when ctx ended first.
func (g *Gateway) askedFrom(ctx context.Context, log *slog.Logger, d delegation.Record) (to chat.Ref, ok bool) {
	if d.ParentID == "" {
		return d.Origin, true
	}
	var parent delegation.Record
	if !retry(ctx, log, "read the parent of a help request", func() (err error) {
		parent, err = g.store.Delegation(ctx, d.ParentID)
		return err
	}) {
		return chat.Ref{}, false
	}
	if parent.Kind == delegation.KindHelp && parent.To == d.From {
		return chat.Ref{}, true
	}
	return d.Origin, true
}

// helpOf is what the brain of turn t, on help request d, is told of it.
func (g *Gateway) helpOf(roster *Roster, bot *Bot, d delegation.Record, t sessions.Turn) *brains.Help {
	if bot.ID == d.From {
		return &brains.Help{ID: d.ID, From: roster.Name(d.To), FromID: d.To, Question: d.Task, Answer: d.Result}
	}
	return &brains.Help{ID: d.ID, From: roster.Name(d.From), FromID: d.From, Question: d.Task, Wrapper: t.Message.Text}
}

// isFollowUp reports whether turn t of bot is the asking bot's turn on
// the answer to its help request, rather than the helper's turn on it.
func isFollowUp(bot string, t sessions.Turn) bool {
	d := t.Delegation
	return d != nil && d.Kind == delegation.KindHelp && d.From == bot
}
