package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/sessions"
)

// delegatedTurn runs a bot's turn on a task handed to it: mark it
// running, ask the brain within the delegation timeout, check the
// expected outputs, deliver the reply (SPEC §3 routing), record the
// result and call back the asking bot's session.
func (g *Gateway) delegatedTurn(ctx context.Context, log *slog.Logger, roster *Roster, bot *Bot, t sessions.Turn) sessions.Outcome {
	d := *t.Delegation
	var o sessions.Outcome
	if d.Status == delegation.StatusQueued {
		if !retry(ctx, log, "mark delegation running", func() error {
			return g.store.UpdateDelegation(ctx, delegation.Update{ID: d.ID, Status: delegation.StatusRunning})
		}) {
			return o // stopping: the turn runs again on the next start
		}
		d.Status = delegation.StatusRunning
		g.notify(d)
	}
	to, err := g.routeDelegated(ctx, bot, d)
	if err != nil {
		return g.failDelegation(o, roster, d, err.Error())
	}
	timeout := g.delegation.Load().Timeout
	if bot.Timeout > 0 && (timeout <= 0 || bot.Timeout < timeout) {
		timeout = bot.Timeout
	}
	stop := g.startTyping(to.Platform, bot.ID, to.ID)
	reply, asked, err := g.think(ctx, log, bot, t, timeout, to)
	stop()
	if ctx.Err() != nil {
		return o
	}
	if err != nil {
		log.Warn("delegated turn failed", "delegation", d.ID, "bot", bot.ID, "err", err)
		reason := "its brain failed"
		if errors.Is(err, context.DeadlineExceeded) {
			reason = fmt.Sprintf("it ran past the %s time limit", timeout)
		}
		return g.failDelegation(o, roster, d, reason)
	}
	text := strings.TrimSpace(reply.Text)
	o.ResumeID = reply.ResumeID
	arts := artifactRecords(reply.Artifacts, bot.ID)

	if problems := checkOutputs(d.Expected, reply.Artifacts); len(problems) > 0 {
		if d.Retries == 0 {
			log.Info("delegation outputs invalid; one corrective retry", "delegation", d.ID, "problems", len(problems))
			o.Retry = delegation.Corrective(d.Task, problems)
			o.Update = &delegation.Update{ID: d.ID, Status: delegation.StatusRunning, Retry: true}
			// The attempt stays in the session, so the retry sees it.
			o.Notes = []sessions.Note{{Session: t.Ref.SessionID, Message: chat.Message{
				Kind: chat.KindSystem, From: chat.Party{Kind: chat.Bot, ID: bot.ID, Name: bot.Name},
				UserID: d.UserID, Bot: bot.ID, Text: text, Time: g.now(), DelegationID: d.ID,
			}}}
			return o
		}
		// What it produced is kept with the record and its step of the
		// chain, beside the reason, so the person and the operator can
		// see what was wrong.
		o.Artifacts = arts
		return g.failDelegation(o, roster, d, "the outputs are still missing or invalid after one corrective retry: "+strings.Join(problems, "; "))
	}
	if text == "" && len(arts) == 0 {
		return g.failDelegation(o, roster, d, "it produced an empty reply")
	}

	o.Artifacts = arts
	// A reply of files alone is shown, and reported back, by their names.
	shown := cmp.Or(text, attachedNote(arts))
	o.Posts = append(o.Posts, g.post(bot, t, to, shown, d.ID))
	o.Update = &delegation.Update{ID: d.ID, Status: delegation.StatusDone, Result: text}
	d.Status = delegation.StatusDone
	o = g.callBack(o, roster, d, to, delegation.Callback(bot.ID, d.Task, arts, shown), delegation.Finished(bot.Name, shown))

	// The reply may hand work on: a nested delegation at depth + 1.
	if text != "" || len(asked) > 0 {
		if note, hs, ok := g.handOffs(ctx, roster, bot, handoffAsk{t: t, text: text, extra: asked, parent: &d, to: to, fromReply: true, made: arts}); ok {
			o.Handoffs = hs
			if note != "" {
				o.Posts = append(o.Posts, g.post(bot, t, to, note, ""))
			}
		}
	}
	return o
}

// failDelegation closes d as failed: the asking bot's session learns why,
// and the asking bot says so in the chat the hand-off came from.
func (g *Gateway) failDelegation(o sessions.Outcome, roster *Roster, d delegation.Record, reason string) sessions.Outcome {
	o.Update = &delegation.Update{ID: d.ID, Status: delegation.StatusFailed, Error: reason}
	o.Posts = nil
	name := roster.Name(d.To)
	return g.callBack(o, roster, d, chat.Ref{},
		delegation.FailedCallback(d.To, d.Task, reason),
		fmt.Sprintf("%s couldn't finish %q: %s.", name, delegation.Summary(d.Task, 80), reason))
}

// callBack puts the result note into the asking bot's session and, when
// the answer went elsewhere than the chat the hand-off came from (or
// there was none), has the asking bot post notice there.
func (g *Gateway) callBack(o sessions.Outcome, roster *Roster, d delegation.Record, answeredIn chat.Ref, note, notice string) sessions.Outcome {
	if d.FromSession != "" {
		o.Notes = append(o.Notes, g.callbackNote(d, note))
	}
	from, ok := roster.Bot(d.From)
	if d.Origin.ID == "" || !ok || (answeredIn.Platform == d.Origin.Platform && answeredIn.ID == d.Origin.ID) {
		return o
	}
	// The notice shows what the hand-off made, so the person can open
	// it where they asked.
	o.Posts = append(o.Posts, sessions.Post{Session: d.FromSession, ShowsArtifacts: true, Message: chat.Message{
		Platform: d.Origin.Platform, ChatID: d.Origin.ID, ChatType: d.Origin.Type, Kind: chat.KindChat,
		From: chat.Party{Kind: chat.Bot, ID: from.ID, Name: from.Name}, UserID: d.UserID, Bot: from.ID,
		Text: notice, Time: g.now(), DelegationID: d.ID,
	}})
	return o
}

// callbackNote is the system message with text that tells the asking
// bot's session how d ended.
func (g *Gateway) callbackNote(d delegation.Record, text string) sessions.Note {
	return sessions.Note{Session: d.FromSession, Message: chat.Message{
		Kind: chat.KindSystem, From: chat.Party{Kind: chat.System, ID: d.To, Name: "delegation"},
		UserID: d.UserID, Bot: d.From, Text: text, Time: g.now(), DelegationID: d.ID,
	}}
}

// checkOutputs compares a reply's artifacts with a delegation's expected
// outputs.
func checkOutputs(expected []delegation.Expected, arts []brains.Artifact) []string {
	if len(expected) == 0 {
		return nil
	}
	got := make([]delegation.Produced, 0, len(arts))
	for _, a := range arts {
		got = append(got, delegation.Produced{Name: a.Name, MediaType: a.MediaType, Content: a.Content})
	}
	return delegation.CheckOutputs(expected, got)
}

// settleOpenDelegations fails the hand-offs a restart left without a turn
// to finish them, with the reason, so none is silently lost.
func (g *Gateway) settleOpenDelegations(ctx context.Context) error {
	open, err := g.store.OpenDelegations(ctx)
	if err != nil {
		return err
	}
	roster := g.roster.Load()
	for _, d := range open {
		reason := "it was interrupted by a restart before it could start"
		o := g.failDelegation(sessions.Outcome{}, roster, d, reason)
		if d.Kind == delegation.KindHelp {
			o = g.failHelp(ctx, g.log, sessions.Outcome{}, roster, d, reason)
		}
		done, err := g.sessions.CompleteTurn(ctx, o)
		if err != nil {
			return err
		}
		g.outbox.Enqueue(done.Outbox...)
		d.Status = delegation.StatusFailed
		g.notify(d)
		g.log.Warn("delegation failed after restart", "delegation", d.ID)
	}
	return nil
}

// Store failures inside a turn are retried, holding the session so its
// order is kept, with this backoff until the gateway stops.
const (
	retryMin = 50 * time.Millisecond
	retryMax = 5 * time.Second
)

// retry runs fn until it succeeds or ctx ends; false means ctx ended.
func retry(ctx context.Context, log *slog.Logger, what string, fn func() error) bool {
	wait := retryMin
	for {
		err := fn()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		log.Error(what+" failed; retrying", "err", err, "wait", wait)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
	}
}
