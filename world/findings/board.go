package findings

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/world"
)

// Board is the findings board of every space. It is safe for concurrent
// use.
type Board struct {
	store  Store
	now    func() time.Time
	inject atomic.Int64

	mu       sync.RWMutex
	watchers []func(space string, visible []Finding)
}

// Options configure a Board.
type Options struct {
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// New returns a board over s, injecting DefaultInject findings until
// SetInject says otherwise.
func New(s Store, opts Options) *Board {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	b := &Board{store: s, now: opts.Now}
	b.inject.Store(DefaultInject)
	return b
}

// SetInject sets how many of a space's newest findings a turn sees
// (shared.findings.inject); 0 shows none.
func (b *Board) SetInject(n int) { b.inject.Store(int64(max(n, 0))) }

// Inject is how many findings a turn sees.
func (b *Board) Inject() int { return int(b.inject.Load()) }

// OnVisible registers fn, called with the findings of one space that
// became visible (posted outside an isolated stage, or released), oldest
// first, once they are stored. It runs on the goroutine that made them
// visible and must not block.
func (b *Board) OnVisible(fn func(space string, visible []Finding)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.watchers = append(b.watchers, fn)
}

// visible tells the watchers.
func (b *Board) visible(space string, fs []Finding) {
	if len(fs) == 0 {
		return
	}
	b.mu.RLock()
	watchers := slices.Clone(b.watchers)
	b.mu.RUnlock()
	for _, fn := range watchers {
		fn(space, fs)
	}
}

// Post is a finding to post.
type Post struct {
	Space string
	// Bot is the posting bot's ID.
	Bot  string
	Text string
	// Severity is one of Severities; "" is Medium.
	Severity string
}

// Post checks p and stores it as a finding of its space's running stage.
// A bad request is an error wrapping world.ErrInvalid that names the field at
// fault.
func (b *Board) Post(ctx context.Context, p Post) (Finding, error) {
	space, err := world.Parse(p.Space)
	if err != nil {
		return Finding{}, world.Invalid("space", "%v", err)
	}
	text := strings.TrimSpace(p.Text)
	severity := p.Severity
	if severity == "" {
		severity = Medium
	}
	switch n := utf8.RuneCountInString(text); {
	case strings.TrimSpace(p.Bot) == "":
		return Finding{}, world.Invalid("bot", "a finding needs the bot that posts it")
	case n == 0:
		return Finding{}, world.Invalid("text", "a finding needs a text")
	case n > MaxText:
		return Finding{}, world.Invalid("text", "%d characters, over the limit of %d", n, MaxText)
	case !utf8.ValidString(text):
		return Finding{}, world.Invalid("text", "not valid UTF-8")
	case !slices.Contains(Severities, severity):
		return Finding{}, world.Invalid("severity", "must be one of %s", strings.Join(Severities, ", "))
	}
	f, err := b.store.AddFinding(ctx, Finding{
		Space: space.String(), Bot: p.Bot, Text: text, Severity: severity, CreatedAt: b.now(),
	})
	if err != nil {
		return Finding{}, fmt.Errorf("post finding: %w", err)
	}
	if f.Visible {
		b.visible(f.Space, []Finding{f})
	}
	return f, nil
}

// ForTurn lists what bot viewer sees of space in a turn: the newest
// Inject findings visible to it, oldest first.
func (b *Board) ForTurn(ctx context.Context, space, viewer string) ([]Finding, error) {
	n := b.Inject()
	if n == 0 {
		return nil, nil
	}
	return b.store.Findings(ctx, Query{Space: space, Viewer: viewer, Limit: n})
}

// List lists findings as q selects them. A bad space is an error
// wrapping world.ErrInvalid.
func (b *Board) List(ctx context.Context, q Query) ([]Finding, error) {
	if q.Space != "" {
		if _, err := world.Parse(q.Space); err != nil {
			return nil, world.Invalid("space", "%v", err)
		}
	}
	q.Limit = max(q.Limit, 1)
	return b.store.Findings(ctx, q)
}

// Get returns the finding with ID id (an error wrapping ErrNotFound for
// none).
func (b *Board) Get(ctx context.Context, id int64) (Finding, error) {
	return b.store.Finding(ctx, id)
}

// Stages lists the running stages, the newest first.
func (b *Board) Stages(ctx context.Context) ([]Stage, error) { return b.store.RunningStages(ctx) }

// Running returns the stage running in space, if any.
func (b *Board) Running(ctx context.Context, space string) (Stage, bool, error) {
	return b.store.RunningStage(ctx, space)
}

// StartStage starts stage name in space, ending (and releasing) the
// running one. key names the command that asks, for commands that may
// arrive twice ("" for none). A bad space or name is an error wrapping
// world.ErrInvalid.
func (b *Board) StartStage(ctx context.Context, space, name string, isolated bool, key string) (Change, error) {
	sp, err := world.Parse(space)
	if err != nil {
		return Change{}, world.Invalid("space", "%v", err)
	}
	if err := CheckStageName(name); err != nil {
		return Change{}, err
	}
	c, err := b.store.StartStage(ctx, StageStart{Space: sp.String(), Name: name, Isolated: isolated, Key: key, At: b.now()})
	if err != nil {
		return Change{}, fmt.Errorf("start stage: %w", err)
	}
	if !c.Repeat {
		b.visible(sp.String(), c.Released)
	}
	return c, nil
}

// Release ends the stage running in space and makes its hidden findings
// visible at once. With none running it is an error wrapping ErrNoStage.
func (b *Board) Release(ctx context.Context, space, key string) (Change, error) {
	sp, err := world.Parse(space)
	if err != nil {
		return Change{}, world.Invalid("space", "%v", err)
	}
	c, err := b.store.EndStage(ctx, sp.String(), key, b.now())
	if err != nil {
		return Change{}, fmt.Errorf("release stage: %w", err)
	}
	if c.Ended == nil {
		return Change{}, fmt.Errorf("%w in %s", ErrNoStage, sp)
	}
	if !c.Repeat {
		b.visible(sp.String(), c.Released)
	}
	return c, nil
}

// CheckStageName refuses a stage name that is empty, longer than
// MaxStageName characters, or holds white space or control characters
// (an error wrapping world.ErrInvalid).
func CheckStageName(name string) error {
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		return world.Invalid("name", "a stage needs a name")
	case n > MaxStageName:
		return world.Invalid("name", "longer than %d characters", MaxStageName)
	case !utf8.ValidString(name):
		return world.Invalid("name", "not valid UTF-8")
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return world.Invalid("name", "a stage name is one word, without spaces")
	}
	return nil
}
