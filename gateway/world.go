package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world"
	"github.com/switchboard-chat/switchboard/world/actions"
	"github.com/switchboard-chat/switchboard/world/findings"
)

// The shared world (SPEC §10) as the gateway takes part in it: each
// turn is bound to its space, gets the actions of its bot there and the
// findings its bot may see; findings that become visible are shown to
// the space's people on the platforms that can; people read the board
// and run stages (stage.go).

// ActionBinder binds the action registry (world/actions) to one turn.
type ActionBinder interface {
	Bind(c actions.Caller) *actions.Turn
}

// Findings is the findings board (world/findings.Board) as the gateway
// uses it.
type Findings interface {
	// ForTurn lists what bot viewer sees of space in a turn, oldest
	// first.
	ForTurn(ctx context.Context, space, viewer string) ([]findings.Finding, error)
	// List lists findings as q selects them.
	List(ctx context.Context, q findings.Query) ([]findings.Finding, error)
	// Post posts a finding.
	Post(ctx context.Context, p findings.Post) (findings.Finding, error)
	// StartStage starts a stage, ending the running one.
	StartStage(ctx context.Context, space, name string, isolated bool, key string) (findings.Change, error)
	// Release ends the running stage (findings.ErrNoStage: none).
	Release(ctx context.Context, space, key string) (findings.Change, error)
	// Stages lists the running stages.
	Stages(ctx context.Context) ([]findings.Stage, error)
	// Get returns one finding; an unknown ID wraps findings.ErrNotFound.
	Get(ctx context.Context, id int64) (findings.Finding, error)
}

// FindingWatcher is implemented by platforms that show findings live
// (the web widget's finding frames). platformIDs are the identities of
// the person whose private space it is (none for a group's space: the
// platform knows who is in its rooms). It must not block.
type FindingWatcher interface {
	FindingsVisible(space world.Space, visible []findings.Finding, platformIDs []string)
}

// FindingsVisible tells the platforms that show findings of findings of
// space that became visible; give it to the board (Board.OnVisible).
func (g *Gateway) FindingsVisible(space string, visible []findings.Finding) {
	sp, err := world.Parse(space)
	if err != nil || len(visible) == 0 {
		return
	}
	var ids []string
	if sp.Kind == world.KindUser {
		u, listed := g.users.Load().User(sp.User)
		ids = append(ids, u.Identities...)
		if !listed {
			ids = []string{sp.User}
		}
	}
	g.platformsMu.RLock()
	defer g.platformsMu.RUnlock()
	for _, p := range g.platforms {
		if w, ok := p.(FindingWatcher); ok {
			w.FindingsVisible(sp, visible, ids)
		}
	}
}

// findingNoticed shows a finding another process sharing the database
// made visible (NoticeFinding) to the platforms here that show findings:
// a person's connections may be on any process (SPEC §11).
func (g *Gateway) findingNoticed(ctx context.Context, n Notice) {
	if g.findings == nil {
		return
	}
	f, err := g.findings.Get(ctx, n.ID)
	if err != nil {
		g.log.Warn("cluster: a finding made visible elsewhere could not be read", "finding", n.ID, "err", err)
		return
	}
	if f.Visible {
		g.FindingsVisible(f.Space, []findings.Finding{f})
	}
}

// turnSpace is the space turn t of bot belongs to (SPEC §10): its chat's
// (a group's, or the person's private space), or for a delegated turn
// its record's space, that of the turn its hand-off chain started from.
// A record stored before records had spaces is placed by walking up to
// its chain's first hand-off.
func (g *Gateway) turnSpace(ctx context.Context, t sessions.Turn, user string) world.Space {
	in := t.Message.Chat()
	if d := t.Delegation; d != nil {
		if sp, err := world.Parse(d.Space); err == nil {
			return sp
		}
		root := g.rootDelegation(ctx, *d)
		if root.Origin.Type != chat.Group {
			return world.User(d.UserID)
		}
		in = root.Origin
	}
	if in.Type == chat.Group {
		return world.Chat(in.Platform, in.ID)
	}
	return world.User(user)
}

// maxChain bounds the walk up a hand-off chain (its depth is limited
// far below).
const maxChain = 32

// rootDelegation is the first hand-off of d's chain: the one a person's
// message, a bot's ordinary reply or the API started.
func (g *Gateway) rootDelegation(ctx context.Context, d delegation.Record) delegation.Record {
	for range maxChain {
		if d.ParentID == "" {
			break
		}
		p, err := g.store.Delegation(ctx, d.ParentID)
		if err != nil {
			// Its parent gone (retention): d is as far as it goes.
			g.log.Warn("delegation chain", "delegation", d.ID, "parent", d.ParentID, "err", err)
			break
		}
		d = p
	}
	return d
}

// bindWorld gives turn the shared world of its space: the actions of
// its bot, bound to the turn (its bot, for its person, in its space,
// speaking in where), the findings the bot may see, the space's shared
// context (context.go), the insights of
// other bots it finds (insights.go) and the gossip memories it has of
// the person (gossip.go). A public bot takes no part: it gets
// none of them. The returned actions (nil when none)
// are ended by the caller when the brain is done.
func (g *Gateway) bindWorld(ctx context.Context, log *slog.Logger, roster *Roster, bot *Bot, t sessions.Turn, turn *brains.Turn, where chat.Ref) *actions.Turn {
	if bot.Public {
		return nil
	}
	space := g.turnSpace(ctx, t, turn.User.ID)
	if g.findings != nil {
		fs, err := g.findings.ForTurn(ctx, space.String(), bot.ID)
		if err != nil {
			// The turn goes on without them: a board it cannot read is
			// no reason to leave the person unanswered.
			log.Error("findings for a turn", "space", space.String(), "err", err)
		}
		for _, f := range fs {
			turn.Findings = append(turn.Findings, brains.Finding{
				Bot: roster.Name(f.Bot), BotID: f.Bot, Severity: f.Severity, Text: f.Text, Stage: f.Stage,
			})
		}
	}
	g.sharedContext(ctx, log, roster, turn, space)
	g.findInsights(ctx, log, roster, bot, turn)
	g.gossipMemories(ctx, log, roster, bot, turn)
	if g.actions == nil {
		return nil
	}
	c := actions.Caller{
		Bot: bot.ID, User: turn.User.ID, UserName: turn.User.Name, Space: space.String(),
		Chat: where, Sender: originSender(t, t.Delegation, where),
		Session: t.Ref.SessionID, Turn: t.Ref.ID, Team: turn.Team,
	}
	if d := t.Delegation; d != nil {
		c.Delegation, c.DelegationKind = d.ID, d.Kind
	}
	acts := g.actions.Bind(c)
	turn.Actions = acts
	return acts
}

// FindingsRequest is a person's request for a board (the widget's
// findings frame).
type FindingsRequest struct {
	// Platform and PlatformID are the connection's.
	Platform, PlatformID string
	// Bot names the person's private space (their chat with that bot);
	// Chat a room of Platform. Exactly one is set.
	Bot, Chat string
	Limit     int
}

// Findings returns the visible findings of the space a person asks for,
// oldest first, and the space's name: their own private space, or a room
// they may read (refused like RoomHistory otherwise).
func (g *Gateway) Findings(ctx context.Context, r FindingsRequest) (string, []findings.Finding, error) {
	if g.findings == nil {
		return "", nil, errors.New("findings: no board")
	}
	var space world.Space
	switch {
	case r.Bot != "":
		b, ok := g.roster.Load().Bot(r.Bot)
		if !ok || !b.On(r.Platform) {
			return "", nil, fmt.Errorf("findings: %w: %q", ErrUnknownBot, r.Bot)
		}
		space = world.User(g.Resolve(r.PlatformID).ID)
	default:
		if _, err := g.enterRoom(ctx, r.Platform, r.Chat, r.PlatformID); err != nil {
			return "", nil, g.refused("findings", r.Platform, r.Chat, r.PlatformID, err)
		}
		space = world.Chat(r.Platform, r.Chat)
	}
	fs, err := g.findings.List(ctx, findings.Query{Space: space.String(), Limit: r.Limit})
	return space.String(), fs, err
}

// ErrPublicBot refuses a public bot where the shared world is asked of
// it: public bots take no part in it.
var ErrPublicBot = errors.New("a public bot takes no part in the shared world")

// ListFindings lists findings for the admin API.
func (g *Gateway) ListFindings(ctx context.Context, q findings.Query) ([]findings.Finding, error) {
	if g.findings == nil {
		return nil, nil
	}
	return g.findings.List(ctx, q)
}

// PostFinding posts a finding as bot, for the admin API: bot must be
// configured and not public.
func (g *Gateway) PostFinding(ctx context.Context, p findings.Post) (findings.Finding, error) {
	b, ok := g.roster.Load().Bot(strings.TrimSpace(p.Bot))
	switch {
	case g.findings == nil:
		return findings.Finding{}, errors.New("findings: no board")
	case !ok:
		return findings.Finding{}, fmt.Errorf("%w: bot %q", ErrUnknownBot, p.Bot)
	case b.Public:
		return findings.Finding{}, fmt.Errorf("%s: %w", b.ID, ErrPublicBot)
	}
	p.Bot = b.ID
	return g.findings.Post(ctx, p)
}

// StartStage starts a stage for the admin API.
func (g *Gateway) StartStage(ctx context.Context, space, name string, isolated bool) (findings.Change, error) {
	if g.findings == nil {
		return findings.Change{}, errors.New("findings: no board")
	}
	return g.findings.StartStage(ctx, space, name, isolated, "")
}

// ReleaseStage ends a space's stage for the admin API.
func (g *Gateway) ReleaseStage(ctx context.Context, space string) (findings.Change, error) {
	if g.findings == nil {
		return findings.Change{}, errors.New("findings: no board")
	}
	return g.findings.Release(ctx, space, "")
}

// Stages lists the running stages for the admin API.
func (g *Gateway) Stages(ctx context.Context) ([]findings.Stage, error) {
	if g.findings == nil {
		return nil, nil
	}
	return g.findings.Stages(ctx)
}
