package gateway

import (
	"context"
	"errors"
	"log/slog"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/world/insights"
)

// Insights (SPEC §10.4) as the gateway takes part in them: each turn of
// a bot for a person finds what other bots noticed about that person
// that relates to the turn's message, unless the person's privacy
// settings keep them out of the shared world; the operator lists and
// forgets insights through the admin API.

// Insights is the insights pool (world/insights.Pool) as the gateway
// uses it.
type Insights interface {
	// ForTurn returns what bot viewer's turn for person user finds,
	// given its message, oldest first.
	ForTurn(ctx context.Context, user, viewer, message string) ([]insights.Insight, error)
	// List lists insights as q selects them, oldest first.
	List(ctx context.Context, q insights.Query) ([]insights.Insight, error)
	// Forget deletes one (insights.ErrNotFound: no such insight).
	Forget(ctx context.Context, id int64) error
}

// findInsights gives turn of bot the insights other bots left about its
// person that share a word with its message (on a delegated turn the
// task, on a help request's turns the question or the answer). A person
// who does not share with other bots (share_with_other_bots: false) or
// is invisible gets none shared: their insights are still stored, but
// no turn finds them. The caller has left public bots out.
func (g *Gateway) findInsights(ctx context.Context, log *slog.Logger, roster *Roster, bot *Bot, turn *brains.Turn) {
	if g.insights == nil || turn.User.ID == "" {
		return
	}
	if u, _ := g.users.Load().User(turn.User.ID); u.Invisible || !u.ShareWithOtherBots {
		return
	}
	found, err := g.insights.ForTurn(ctx, turn.User.ID, bot.ID, turn.Text)
	if err != nil {
		// The turn goes on without them, as without findings.
		log.Error("insights for a turn", "user", turn.User.ID, "err", err)
		return
	}
	for _, in := range found {
		turn.Insights = append(turn.Insights, brains.Insight{
			Bot: roster.Name(in.Bot), BotID: in.Bot, Kind: in.Kind, Text: in.Text, Confidence: in.Confidence,
		})
	}
}

// errNoInsights answers the admin API of a gateway made without them.
var errNoInsights = errors.New("insights: none kept by this gateway")

// ListInsights lists insights for the admin API, oldest first.
func (g *Gateway) ListInsights(ctx context.Context, q insights.Query) ([]insights.Insight, error) {
	if g.insights == nil {
		return nil, nil
	}
	return g.insights.List(ctx, q)
}

// ForgetInsight deletes one insight for the admin API (an error wrapping
// insights.ErrNotFound for none).
func (g *Gateway) ForgetInsight(ctx context.Context, id int64) error {
	if g.insights == nil {
		return errNoInsights
	}
	return g.insights.Forget(ctx, id)
}
