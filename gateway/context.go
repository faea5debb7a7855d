package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/world"
	"github.com/switchboard-chat/switchboard/world/actions"
	"github.com/switchboard-chat/switchboard/world/shared"
)

// The shared context of spaces (SPEC §10.7) as the gateway takes part in
// it: each turn sees its space's context and may read the files of its
// artifact chain; a hand-off records its space, so that it becomes a
// step of the chain when it ends; a delegated turn reports progress;
// people and the operator read a space's context, and the platforms
// that can show it live are told when it changes.

// SpaceContext is the shared context of spaces (world/shared.Keeper) as
// the gateway uses it.
type SpaceContext interface {
	// ForTurn reads a space's context within shared.context.
	ForTurn(ctx context.Context, space string) (shared.Context, error)
	// Read reads a space's context within l.
	Read(ctx context.Context, space string, l shared.Limits) (shared.Context, error)
}

// ContextWatcher is implemented by platforms that show a room's shared
// context live (the web widget's context frames). Neither method may
// block.
type ContextWatcher interface {
	// Watching reports whether a connection here shows space's context.
	Watching(space world.Space) bool
	// ContextChanged shows c, space's context now.
	ContextChanged(space world.Space, c shared.Context)
}

// viewLimits bound the context people and the operator read: more than a
// prompt holds, every fact whatever its confidence.
func viewLimits(n int) shared.Limits {
	return shared.Limits{Events: n, Entities: n, Facts: n, Chain: n}
}

// MaxContextView is the most of each list a read for people or the API
// returns; DefaultContextView what it returns when not told.
const (
	MaxContextView     = 500
	DefaultContextView = 50
)

// contextPush holds the rooms whose context changed and is not yet
// shown. One goroutine at a time shows them, reading each room's context
// after taking it off the list, so the last frame a room gets is its
// newest context however the changes raced.
type contextPush struct {
	mu      sync.Mutex
	pending []string
	running bool
}

// ContextChanged has the platforms that show a group's context live
// show space's anew; give it to the keeper (Keeper.OnChange). It returns
// at once: the read and the frames happen on a goroutine of the
// gateway's, once for any number of changes made meanwhile, and only
// when a connection shows that room. A person's own space is read on
// request only.
func (g *Gateway) ContextChanged(space string) {
	sp, err := world.Parse(space)
	if err != nil || sp.Kind != world.KindChat || g.sharedCtx == nil {
		return
	}
	p := &g.contextPush
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.pending, space) {
		p.pending = append(p.pending, space)
	}
	if p.running {
		return
	}
	p.running = g.goBackground(g.pushContexts)
}

// pushContexts shows the pending rooms' contexts until none is left.
func (g *Gateway) pushContexts() {
	p := &g.contextPush
	for {
		p.mu.Lock()
		if len(p.pending) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		space := p.pending[0]
		p.pending = p.pending[1:]
		p.mu.Unlock()
		g.pushContext(space)
	}
}

// pushContext reads a room's context and shows it to the platforms
// that have a connection showing it.
func (g *Gateway) pushContext(space string) {
	sp, _ := world.Parse(space)
	var ws []ContextWatcher
	g.platformsMu.RLock()
	for _, p := range g.platforms {
		if w, ok := p.(ContextWatcher); ok && w.Watching(sp) {
			ws = append(ws, w)
		}
	}
	g.platformsMu.RUnlock()
	if len(ws) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), noticeTimeout)
	defer cancel()
	c, err := g.sharedCtx.Read(ctx, space, viewLimits(DefaultContextView))
	if err != nil {
		g.log.Warn("shared context to show", "space", space, "err", err)
		return
	}
	for _, w := range ws {
		w.ContextChanged(sp, c)
	}
}

// sharedContext gives turn its space's shared context, with display
// names, and the files of its chain. A context it cannot read leaves the
// turn without one: no reason to leave the person unanswered.
func (g *Gateway) sharedContext(ctx context.Context, log *slog.Logger, roster *Roster, turn *brains.Turn, space world.Space) {
	if g.sharedCtx == nil {
		return
	}
	c, err := g.sharedCtx.ForTurn(ctx, space.String())
	if err != nil {
		log.Error("shared context for a turn", "space", space.String(), "err", err)
		return
	}
	if c.Empty() {
		return
	}
	sc := &brains.SharedContext{}
	for _, e := range c.Events {
		sc.Events = append(sc.Events, brains.ContextEvent{Bot: roster.Name(e.Bot), BotID: e.Bot, Text: e.Text, Time: e.Time})
	}
	for _, e := range c.Entities {
		sc.Entities = append(sc.Entities, brains.ContextEntity{Name: e.Name, Attributes: string(e.Attributes)})
	}
	for _, f := range c.Facts {
		sc.Facts = append(sc.Facts, brains.ContextFact{
			Subject: f.Subject, Predicate: f.Predicate, Object: f.Object, Confidence: f.Confidence, Bot: roster.Name(f.Bot), BotID: f.Bot,
		})
	}
	files := chainFiles{store: g.store}
	for _, st := range c.Chain {
		step := brains.ChainStep{Step: st.Step, Producer: roster.Name(st.Producer), ProducerID: st.Producer, Task: st.Task, Status: st.Status}
		for _, f := range st.Inputs {
			step.Inputs = append(step.Inputs, brains.Artifact{ID: f.ID, Name: f.Name})
			files.ids = append(files.ids, f.ID)
		}
		for _, f := range st.Outputs {
			step.Outputs = append(step.Outputs, brains.Artifact{ID: f.ID, Name: f.Name})
			files.ids = append(files.ids, f.ID)
		}
		sc.Chain = append(sc.Chain, step)
	}
	turn.Shared = sc
	if len(files.ids) > 0 {
		turn.Files = files
	}
}

// chainFiles reads the artifacts of a turn's chain, and no others.
type chainFiles struct {
	store Store
	ids   []string
}

// ReadFile implements brains.Files.
func (f chainFiles) ReadFile(ctx context.Context, id string) ([]byte, error) {
	if !slices.Contains(f.ids, id) {
		return nil, fmt.Errorf("artifact %q is not in this turn's chain", id)
	}
	arts, err := f.store.Artifacts(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	return arts[0].Content, nil
}

// resolveInputs maps what a delegate action names as inputs (file names,
// or artifact IDs) to artifacts: the files the turn itself produced
// first, then those it was handed, then the outputs of its space's chain,
// the newest first. A name found nowhere is an error naming it.
func (g *Gateway) resolveInputs(ctx context.Context, names []string, made []chat.Artifact, parent *delegation.Record, space string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var known []shared.File
	for _, a := range made {
		known = append(known, shared.File{ID: a.ID, Name: a.Name})
	}
	if parent != nil && len(parent.Inputs) > 0 {
		arts, err := g.store.Artifacts(ctx, parent.Inputs)
		if err != nil {
			return nil, fmt.Errorf("the task's inputs: %w", err)
		}
		for _, a := range arts {
			known = append(known, shared.File{ID: a.ID, Name: a.Name})
		}
	}
	if g.sharedCtx != nil {
		c, err := g.sharedCtx.Read(ctx, space, shared.Limits{Chain: MaxContextView})
		if err != nil {
			return nil, err
		}
		for _, st := range slices.Backward(c.Chain) {
			known = append(known, st.Outputs...)
			known = append(known, st.Inputs...)
		}
	}
	var ids []string
	for _, name := range names {
		i := slices.IndexFunc(known, func(f shared.File) bool { return f.Name == name || f.ID == name })
		if i < 0 {
			return nil, &inputError{name: name}
		}
		if !slices.Contains(ids, known[i].ID) {
			ids = append(ids, known[i].ID)
		}
	}
	return ids, nil
}

// inputError is an input a hand-off names that is not there.
type inputError struct{ name string }

func (e *inputError) Error() string {
	return fmt.Sprintf("there is no file %q in this conversation's artifact chain", e.name)
}

// ReportProgress implements actions.Reporter: it sets the progress of
// the running hand-off c's turn works for, and pushes the change.
func (g *Gateway) ReportProgress(ctx context.Context, c actions.Caller, p delegation.Progress) error {
	d, err := g.store.Delegation(ctx, c.Delegation)
	if err != nil {
		return fmt.Errorf("progress: the task: %w", err)
	}
	if d.Kind != delegation.KindHandoff || d.To != c.Bot {
		return fmt.Errorf("%w: progress: this turn works on no task handed to %s", brains.ErrActionRefused, c.Bot)
	}
	err = g.store.SetDelegationProgress(ctx, d.ID, p)
	if errors.Is(err, delegation.ErrNotRunning) {
		return fmt.Errorf("%w: progress: the task is %s, not running", brains.ErrActionRefused, d.Status)
	}
	if err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	d.Progress = &p
	g.notify(d)
	return nil
}

// ContextRequest is a person's request for a space's shared context
// (the widget's context frame).
type ContextRequest struct {
	// Platform and PlatformID are the connection's.
	Platform, PlatformID string
	// Bot names the person's private space (their chat with that bot);
	// Chat a room of Platform. Exactly one is set.
	Bot, Chat string
	Limit     int
}

// Context returns the shared context of the space a person asks for and
// the space's name: their own private space, or a room they may read
// (refused like RoomHistory otherwise).
func (g *Gateway) Context(ctx context.Context, r ContextRequest) (string, shared.Context, error) {
	if g.sharedCtx == nil {
		return "", shared.Context{}, errors.New("shared context: none kept")
	}
	var space world.Space
	switch {
	case r.Bot != "":
		b, ok := g.roster.Load().Bot(r.Bot)
		if !ok || !b.On(r.Platform) {
			return "", shared.Context{}, fmt.Errorf("context: %w: %q", ErrUnknownBot, r.Bot)
		}
		space = world.User(g.Resolve(r.PlatformID).ID)
	default:
		if _, err := g.enterRoom(ctx, r.Platform, r.Chat, r.PlatformID); err != nil {
			return "", shared.Context{}, g.refused("context", r.Platform, r.Chat, r.PlatformID, err)
		}
		space = world.Chat(r.Platform, r.Chat)
	}
	c, err := g.sharedCtx.Read(ctx, space.String(), viewLimits(clampView(r.Limit)))
	return space.String(), c, err
}

// SpaceContext reads a space's shared context for the admin API, at most
// limit of each list (default 50, at most 500).
func (g *Gateway) SpaceContext(ctx context.Context, space string, limit int) (shared.Context, error) {
	if _, err := world.Parse(space); err != nil {
		return shared.Context{}, fmt.Errorf("%w: space: %v", ErrBadRequest, err)
	}
	if g.sharedCtx == nil {
		return shared.Context{}, errors.New("shared context: none kept")
	}
	return g.sharedCtx.Read(ctx, space, viewLimits(clampView(limit)))
}

// clampView is a requested list length within bounds.
func clampView(n int) int {
	if n <= 0 {
		return DefaultContextView
	}
	return min(n, MaxContextView)
}
