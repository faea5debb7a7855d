package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/sessions"
)

// Focus (SPEC §10.3): in a group chat, "/focus BOT" sends the person's
// following unaddressed messages there to BOT as if addressed, "/focus"
// alone focuses the bot that spoke last there, "/unfocus" ends it. A
// focus is stored per person (platform ID) and chat, and ends after
// FocusTTL without a message of that person there. The focused bot
// confirms each command in one line, as its answer to the command: a
// turn like any other, so it comes in its order.
//
// On platforms where each bot of a group receives its own copy of a
// message (Telegram, Discord), each copy decides for its bot alone: the
// copy of the bot a command names handles it, and a focused person's
// unaddressed message is a turn of the focused bot's copy only.

// FocusTTL is how long a focus lasts without a message of its person in
// its chat.
const FocusTTL = 24 * time.Hour

// focusCommand is a parsed focus command.
type focusCommand struct {
	// unfocus is set for /unfocus.
	unfocus bool
	// name is what /focus NAME names, "" for /focus alone.
	name string
}

// parseFocus recognises "/focus", "/focus NAME" and "/unfocus" at the
// start of text, each word also with Telegram's "@username" suffix
// ("/focus@matty_bot finn"). NAME may be several words (a display name)
// and start with '@'.
func parseFocus(text string) (focusCommand, bool) {
	text = strings.TrimSpace(text)
	for _, word := range []string{"/focus", "/unfocus"} {
		rest, ok := strings.CutPrefix(text, word)
		if !ok {
			continue
		}
		if strings.HasPrefix(rest, "@") {
			// The bot's username that a Telegram client appends.
			i := strings.IndexFunc(rest, unicode.IsSpace)
			if i < 0 {
				i = len(rest)
			}
			if i == 1 {
				return focusCommand{}, false
			}
			rest = rest[i:]
		}
		if rest != "" && !unicode.IsSpace([]rune(rest)[0]) {
			return focusCommand{}, false // "/focusing", "/focus-mode"
		}
		if word == "/unfocus" {
			return focusCommand{unfocus: true}, true
		}
		// "@Finn Shipley", with any run of '@'s and spaces before it.
		name := strings.TrimLeft(strings.Join(strings.Fields(rest), " "), "@ ")
		return focusCommand{name: name}, true
	}
	return focusCommand{}, false
}

// applyFocus applies focus to a person's message ev in a group chat
// whose bots (or, on a platform of per-bot copies, this copy's bot) are
// present, and addrs its addresses by §4. A focus command is answered by
// the bot it concerns, and nothing else of the message is; an
// unaddressed message goes to the bot its sender focused. It returns
// the addresses and, when the sender keeps a focus there, its key, for
// the message to date it.
func (g *Gateway) applyFocus(ctx context.Context, ev Event, roster *Roster, present []string, addrs []address) ([]address, *FocusKey, error) {
	key := FocusKey{Platform: ev.Platform, ChatID: ev.ChatID, Person: ev.Sender.PlatformID}
	f, ok, err := g.store.Focus(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	var focused *Bot
	if ok && g.now().Sub(f.Seen) < FocusTTL {
		focused, _ = roster.Bot(f.Bot)
	}
	var seen *FocusKey
	if focused != nil {
		seen = &key
	}
	here := func(b *Bot) bool { return b != nil && slices.Contains(present, b.ID) }

	cmd, isCmd := parseFocus(ev.Text)
	switch {
	case !isCmd:
		if len(addrs) == 0 && here(focused) {
			addrs = []address{{bot: focused, text: strings.TrimSpace(ev.Text)}}
		}
		return addrs, seen, nil
	case cmd.unfocus:
		if !here(focused) {
			// Nothing focused, or another copy's bot is.
			return nil, seen, nil
		}
		if err := g.store.SetFocus(ctx, key, "", ev.Time); err != nil {
			return nil, nil, err
		}
		g.log.Info("focus ended", "platform", ev.Platform, "chat", ev.ChatID, "bot", focused.ID)
		return []address{{bot: focused, text: strings.TrimSpace(ev.Text)}}, nil, nil
	}
	var target *Bot
	if cmd.name == "" {
		if target, err = g.lastSpoke(ctx, ev.Chat(), roster); err != nil {
			return nil, nil, err
		}
	} else {
		target, _ = roster.ByName(cmd.name)
	}
	if !here(target) {
		// No such bot here (or another copy's): the command is kept as
		// the group's history, answered by nobody.
		return nil, seen, nil
	}
	if err := g.store.SetFocus(ctx, key, target.ID, ev.Time); err != nil {
		return nil, nil, err
	}
	g.log.Info("focus set", "platform", ev.Platform, "chat", ev.ChatID, "bot", target.ID)
	return []address{{bot: target, text: strings.TrimSpace(ev.Text)}}, nil, nil
}

// lastSpoke is the bot whose message is the newest of a group chat
// among its recent ones; nil when none spoke lately.
func (g *Gateway) lastSpoke(ctx context.Context, in chat.Ref, roster *Roster) (*Bot, error) {
	msgs, err := g.store.ChatMessages(ctx, in.Platform, in.ID, groupHistory)
	if err != nil {
		return nil, err
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.From.Kind == chat.Bot {
			if b, ok := roster.Bot(m.From.ID); ok {
				return b, nil
			}
		}
	}
	return nil, nil
}

// focusConfirmation is bot's one-line answer to a focus command in turn
// t, when t's message is one.
func (g *Gateway) focusConfirmation(bot *Bot, t sessions.Turn) (string, bool) {
	m := t.Message
	if m.From.Kind != chat.Human || m.ChatType != chat.Group || t.Delegation != nil {
		return "", false
	}
	cmd, ok := parseFocus(m.Text)
	if !ok {
		return "", false
	}
	who := g.turnUser(bot, t).Name
	if who == "" {
		who = m.From.Name
	}
	if cmd.unfocus {
		return fmt.Sprintf("OK %s: your messages here no longer come to me (%s); address a bot by name to talk to it.", who, bot.Name), true
	}
	return fmt.Sprintf("Got it, %s: your messages here come to me (%s) until you say /unfocus.", who, bot.Name), true
}
