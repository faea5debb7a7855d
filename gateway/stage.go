package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world"
	"github.com/switchboard-chat/switchboard/world/findings"
)

// A person runs the stages of a chat's space with commands (SPEC §10.2):
// /stage NAME isolated, /stage NAME and /release. The gateway answers
// them itself, before any bot is addressed, with a system message in
// that chat; the command is kept in the chat's history like any message.

// stageCommand is a parsed /stage or /release.
type stageCommand struct {
	release  bool
	name     string
	isolated bool
	// usage, when set, is what to answer a command that is not well
	// formed.
	usage string
}

// stageUsage is the answer to a malformed command.
const stageUsage = "Usage: /stage NAME starts a stage whose findings every bot sees at once; " +
	"/stage NAME isolated starts one where each bot sees only its own findings until /release; " +
	"/release ends the stage and shows its findings to every bot."

// parseStageCommand reads "/stage NAME [isolated]" or "/release", the
// command in any case and with an "@botname" suffix as Telegram writes
// commands in groups. ok is false for any other text: it is an ordinary
// message.
func parseStageCommand(text string) (cmd stageCommand, ok bool) {
	fields := strings.FieldsFunc(text, unicode.IsSpace)
	if len(fields) == 0 {
		return cmd, false
	}
	word, _, _ := strings.Cut(fields[0], "@")
	switch strings.ToLower(word) {
	case "/stage":
		switch {
		case len(fields) == 2:
			cmd.name = fields[1]
		case len(fields) == 3 && strings.EqualFold(fields[2], "isolated"):
			cmd.name, cmd.isolated = fields[1], true
		default:
			cmd.usage = stageUsage
			return cmd, true
		}
		if err := findings.CheckStageName(cmd.name); err != nil {
			cmd.usage = fmt.Sprintf("That is not a stage name (%v). %s", err, stageUsage)
		}
		return cmd, true
	case "/release":
		cmd.release = true
		if len(fields) > 1 {
			cmd.usage = stageUsage
		}
		return cmd, true
	}
	return cmd, false
}

// stageCommandOf reports whether ev is a person's stage command that the
// gateway answers: a person (not a bot) said it, the board is there, and
// the chat takes part in the shared world (not a public bot's private
// chat).
func (g *Gateway) stageCommandOf(ev Event, roster *Roster) (stageCommand, bool) {
	if g.findings == nil || ev.Sender.IsBot || !strings.HasPrefix(strings.TrimSpace(ev.Text), "/") {
		return stageCommand{}, false
	}
	if ev.ChatType == chat.Private {
		if b, ok := roster.Bot(ev.Bot); !ok || b.Public {
			return stageCommand{}, false
		}
	}
	return parseStageCommand(ev.Text)
}

// runStageCommand carries out a stored stage command and answers it in
// its chat. The command's key (its chat and platform message ID) makes
// the copy another bot of the same group receives act and answer once.
func (g *Gateway) runStageCommand(ctx context.Context, ev Event, user UserRef, msg chat.Message, cmd stageCommand) {
	space := world.User(user.ID)
	if ev.ChatType == chat.Group {
		space = world.Chat(ev.Platform, ev.ChatID)
	}
	key := ev.Platform + ":" + ev.ChatID + ":" + ev.MessageID
	log := g.log.With("space", space.String(), "platform", ev.Platform)
	text := cmd.usage
	if text == "" {
		var c findings.Change
		var err error
		if cmd.release {
			c, err = g.findings.Release(ctx, space.String(), key)
		} else {
			c, err = g.findings.StartStage(ctx, space.String(), cmd.name, cmd.isolated, key)
		}
		switch {
		case errors.Is(err, findings.ErrNoStage):
			text = "No stage is running here; /stage NAME starts one."
		case err != nil:
			log.Error("stage command", "err", err)
			text = "The stage could not be changed just now; please try again."
		case c.Repeat:
			return // the same command, received by another bot: answered once
		default:
			text = stageAnswer(c)
			log.Info("stage changed", "started", c.Started != nil, "ended", c.Ended != nil, "released", len(c.Released))
		}
	}
	m := chat.Message{
		Platform: ev.Platform, ChatID: ev.ChatID, ChatType: ev.ChatType, Kind: chat.KindChat,
		From:   chat.Party{Kind: chat.System, ID: "switchboard", Name: "Switchboard"},
		UserID: user.ID, Bot: ev.Bot, Text: text, Time: g.now(), ReplyTo: ev.MessageID, ReplyToID: msg.ID,
	}
	post := sessions.Post{Message: m}
	if ev.ChatType == chat.Private {
		// The answer joins the session of the chat's bot, when there is
		// one, so its history shows it.
		if s, ok, err := g.sessions.FindSession(ctx, sessions.Key{Bot: ev.Bot, Scope: sessions.ScopeUser, ScopeID: user.ID}); err == nil && ok {
			post.Session = s.ID
		}
	}
	done, err := g.sessions.CompleteTurn(ctx, sessions.Outcome{Posts: []sessions.Post{post}})
	if err != nil {
		log.Error("stage command answer", "err", err)
		return
	}
	g.outbox.Enqueue(done.Outbox...)
}

// stageAnswer says what a stage command did.
func stageAnswer(c findings.Change) string {
	var parts []string
	if e := c.Ended; e != nil {
		parts = append(parts, fmt.Sprintf("Stage %s ended%s.", e.Name, releasedNote(c.Released)))
	}
	if s := c.Started; s != nil {
		if s.Isolated {
			parts = append(parts, fmt.Sprintf("Stage %s started, isolated: each bot sees only its own findings until /release.", s.Name))
		} else {
			parts = append(parts, fmt.Sprintf("Stage %s started: every bot here sees the findings as they are posted.", s.Name))
		}
	}
	return strings.Join(parts, " ")
}

// releasedNote is ": its 3 findings are now shared with every bot", or
// nothing for none.
func releasedNote(released []findings.Finding) string {
	switch len(released) {
	case 0:
		return ""
	case 1:
		return ": its 1 hidden finding is now shared with every bot"
	}
	return fmt.Sprintf(": its %d hidden findings are now shared with every bot", len(released))
}
