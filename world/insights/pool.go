package insights

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/world"
)

// Settings are shared.insights (SPEC §10): whether turns find insights,
// how confident an insight must be to be found, and how many a turn
// finds at most.
type Settings struct {
	Enabled bool
	// Threshold is the least confidence of an insight a turn finds.
	Threshold float64
	// Limit is how many a turn finds at most; 0 finds none.
	Limit int
}

// DefaultSettings are shared.insights when bots.yaml leaves it out.
var DefaultSettings = Settings{Enabled: true, Threshold: DefaultThreshold, Limit: DefaultLimit}

// Pool is the insights bots leave about people: it stores them through
// its Store and finds the ones a turn should see. It is safe for
// concurrent use.
type Pool struct {
	store    Store
	now      func() time.Time
	settings atomic.Pointer[Settings]
}

// Options configure a Pool.
type Options struct {
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// New returns a pool over s with DefaultSettings until Configure says
// otherwise.
func New(s Store, opts Options) *Pool {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	p := &Pool{store: s, now: opts.Now}
	p.Configure(DefaultSettings)
	return p
}

// Configure sets what turns find from their next lookup on (a live
// change of shared.insights). Remembering is not affected: a disabled
// pool still stores what bots remember.
func (p *Pool) Configure(s Settings) {
	s.Limit = max(s.Limit, 0)
	p.settings.Store(&s)
}

// Settings returns the settings in force.
func (p *Pool) Settings() Settings { return *p.settings.Load() }

// Note is an insight to remember.
type Note struct {
	// User is the person it is about; Bot the ID of the bot that
	// writes it.
	User, Bot string
	// Kind is one of Kinds.
	Kind string
	Text string
	// Confidence is from 0 to 1.
	Confidence float64
}

// Remember checks n and stores it as an insight. A bad note is an error
// wrapping world.ErrInvalid that names the field at fault and the rule.
func (p *Pool) Remember(ctx context.Context, n Note) (Insight, error) {
	text := strings.TrimSpace(n.Text)
	switch l := utf8.RuneCountInString(text); {
	case strings.TrimSpace(n.User) == "":
		return Insight{}, world.Invalid("user", "an insight needs the person it is about")
	case strings.TrimSpace(n.Bot) == "":
		return Insight{}, world.Invalid("bot", "an insight needs the bot that writes it")
	case !slices.Contains(Kinds, n.Kind):
		return Insight{}, world.Invalid("kind", "must be one of %s", strings.Join(Kinds, ", "))
	case !utf8.ValidString(text):
		return Insight{}, world.Invalid("text", "not valid UTF-8")
	case l == 0:
		return Insight{}, world.Invalid("text", "an insight needs a text")
	case l > MaxText:
		return Insight{}, world.Invalid("text", "%d characters, over the limit of %d", l, MaxText)
	case math.IsNaN(n.Confidence) || n.Confidence < 0 || n.Confidence > 1:
		return Insight{}, world.Invalid("confidence", "must be a number from 0 to 1")
	}
	in, err := p.store.AddInsight(ctx, Insight{
		User: n.User, Bot: n.Bot, Kind: n.Kind, Text: text, Confidence: n.Confidence, CreatedAt: p.now(),
	})
	if err != nil {
		return Insight{}, fmt.Errorf("remember: %w", err)
	}
	return in, nil
}

// ForTurn returns what bot viewer's turn for person user finds, given
// the turn's message: user's insights by other bots that share a word
// with message, stop words aside, of at least the threshold's
// confidence, the Limit most relevant, in the order SPEC §10.1 lists
// the shared world: oldest first. Nothing when the pool is disabled.
// The caller asks only for a person whose privacy settings let their
// insights be shared, and never for a public bot.
func (p *Pool) ForTurn(ctx context.Context, user, viewer, message string) ([]Insight, error) {
	s := p.Settings()
	if !s.Enabled || s.Limit == 0 || user == "" {
		return nil, nil
	}
	words := Words(message)
	if len(words) == 0 {
		return nil, nil
	}
	found, err := p.store.SearchInsights(ctx, Search{
		User: user, Viewer: viewer, Words: words, MinConfidence: s.Threshold, Limit: s.Limit,
	})
	if err != nil {
		return nil, fmt.Errorf("insights for a turn: %w", err)
	}
	slices.SortFunc(found, func(a, b Insight) int { return cmp.Compare(a.ID, b.ID) })
	return found, nil
}

// List lists insights as q selects them, oldest first.
func (p *Pool) List(ctx context.Context, q Query) ([]Insight, error) {
	q.Limit = max(q.Limit, 1)
	return p.store.Insights(ctx, q)
}

// Forget deletes one insight (an error wrapping ErrNotFound for none).
func (p *Pool) Forget(ctx context.Context, id int64) error {
	return p.store.DeleteInsight(ctx, id)
}
