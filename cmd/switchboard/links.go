package main

import (
	"os"
	"sync"
	"time"

	"github.com/switchboard-chat/switchboard/api"
	"github.com/switchboard-chat/switchboard/config"
	"github.com/switchboard-chat/switchboard/gateway"
)

// linkBoard records how each bot's platforms stand, for the admin API's
// GET /api/v1/platforms and the dashboard. The wiring decides what is
// skipped and why (configure); the Telegram and Discord platforms report
// the rest as it happens (report). The web widget is served by this
// process, so a bot on the web is connected while the gateway runs.
type linkBoard struct {
	now func() time.Time

	mu    sync.Mutex
	order []linkKey
	links map[linkKey]linkState
}

type linkKey struct{ bot, platform string }

type linkState struct {
	state, reason string
	since         time.Time
}

var _ api.Platforms = (*linkBoard)(nil)

func newLinkBoard() *linkBoard {
	return &linkBoard{now: time.Now, links: make(map[linkKey]linkState)}
}

// configure sets the bots and platforms of cfg. It runs before the
// platforms are configured with cfg, so what they report about the new
// settings lands on the new entries. A link that stays configured keeps
// its state; one that is new, or was skipped before, starts connecting;
// one whose token variable is unset is skipped, with that reason.
func (b *linkBoard) configure(cfg *config.Config) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	next := make(map[linkKey]linkState, len(b.links))
	var order []linkKey
	set := func(k linkKey, want linkState) {
		if old, ok := b.links[k]; ok && old.state == want.state && old.reason == want.reason {
			want = old
		} else if ok && want.state == gateway.LinkConnecting && old.state != gateway.LinkSkipped {
			// Still configured: the platform reports any change.
			want = old
		} else {
			want.since = now
		}
		next[k] = want
		order = append(order, k)
	}
	for _, bot := range cfg.Bots {
		if bot.Platforms.Web != nil {
			set(linkKey{bot.ID, gateway.PlatformWeb}, linkState{state: gateway.LinkConnected})
		}
		if t := bot.Platforms.Telegram; t != nil {
			set(linkKey{bot.ID, gateway.PlatformTelegram}, tokenLink(t.TokenEnv))
		}
		if d := bot.Platforms.Discord; d != nil {
			set(linkKey{bot.ID, gateway.PlatformDiscord}, tokenLink(d.TokenEnv))
		}
	}
	b.links, b.order = next, order
}

// tokenLink is the starting state of a link that needs the token in the
// variable env: skipped when it is unset (telegramBots and discordBots
// leave such a bot out), else connecting.
func tokenLink(env string) linkState {
	switch {
	case env == "":
		return linkState{state: gateway.LinkSkipped, reason: "no token_env is set"}
	case os.Getenv(env) == "":
		return linkState{state: gateway.LinkSkipped, reason: env + " is unset"}
	}
	return linkState{state: gateway.LinkConnecting}
}

// report returns the LinkReport a platform calls with its bots' states.
// A report about a bot the board does not hold on that platform, or holds
// as skipped (a connection stopping after an edit), is ignored.
func (b *linkBoard) report(platform string) gateway.LinkReport {
	return func(bot, state string, err error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		k := linkKey{bot, platform}
		old, ok := b.links[k]
		if !ok || old.state == gateway.LinkSkipped {
			return
		}
		reason := ""
		if err != nil {
			reason = err.Error()
		}
		if old.state == state && old.reason == reason {
			return
		}
		since := old.since
		if old.state != state {
			since = b.now()
		}
		b.links[k] = linkState{state: state, reason: reason, since: since}
	}
}

// PlatformLinks implements api.Platforms.
func (b *linkBoard) PlatformLinks() []api.PlatformLink {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]api.PlatformLink, 0, len(b.order))
	for _, k := range b.order {
		l := b.links[k]
		out = append(out, api.PlatformLink{Bot: k.bot, Platform: k.platform, State: l.state, Reason: l.reason, Since: l.since})
	}
	return out
}
