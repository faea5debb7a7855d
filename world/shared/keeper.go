package shared

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/world"
)

// Keeper checks and stores what bots add to the shared context of their
// spaces, tells its watchers, and reads a space's context within the
// configured limits. It is safe for concurrent use.
type Keeper struct {
	store Store
	now   func() time.Time

	mu       sync.RWMutex
	limits   Limits
	watchers []func(space string)
}

// NewKeeper returns a Keeper over s, reading within l.
func NewKeeper(s Store, l Limits) *Keeper {
	return &Keeper{store: s, now: time.Now, limits: l}
}

// DefaultLimits are shared.context's defaults.
func DefaultLimits() Limits {
	return Limits{Events: DefaultEvents, Entities: DefaultEntities, Facts: DefaultFacts, MinConfidence: DefaultMinConfidence, Chain: DefaultChain}
}

// SetLimits replaces the limits of ForTurn (a config reload).
func (k *Keeper) SetLimits(l Limits) {
	k.mu.Lock()
	k.limits = l
	k.mu.Unlock()
}

// Limits returns the limits of ForTurn.
func (k *Keeper) Limits() Limits {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.limits
}

// OnChange calls fn, which must not block, with the space whenever its
// context changes through the Keeper. Register watchers before use.
func (k *Keeper) OnChange(fn func(space string)) {
	k.mu.Lock()
	k.watchers = append(k.watchers, fn)
	k.mu.Unlock()
}

// changed tells the watchers that space's context changed.
func (k *Keeper) changed(space string) {
	k.mu.RLock()
	ws := k.watchers
	k.mu.RUnlock()
	for _, fn := range ws {
		fn(space)
	}
}

// AddEvent adds an entry to space's timeline, as bot.
func (k *Keeper) AddEvent(ctx context.Context, space, bot, text string) (Event, error) {
	text = strings.TrimSpace(text)
	if err := checkSpace(space); err != nil {
		return Event{}, err
	}
	if err := checkText("text", text, MaxEventText); err != nil {
		return Event{}, err
	}
	e, err := k.store.AddEvent(ctx, Event{Space: space, Bot: bot, Text: text, Time: k.now().UTC()})
	if err != nil {
		return Event{}, fmt.Errorf("shared context: add event: %w", err)
	}
	k.changed(space)
	return e, nil
}

// AddEntity merges attrs, a JSON object, into the attributes of space's
// entity name, as bot, and returns the entity with its attributes
// merged and their keys sorted.
func (k *Keeper) AddEntity(ctx context.Context, space, bot, name string, attrs json.RawMessage) (Entity, error) {
	name = strings.TrimSpace(name)
	if err := checkSpace(space); err != nil {
		return Entity{}, err
	}
	if err := checkLine("name", name, MaxName); err != nil {
		return Entity{}, err
	}
	obj, err := Attributes(attrs)
	if err != nil {
		return Entity{}, err
	}
	e, err := k.store.MergeEntity(ctx, Entity{Space: space, Name: name, Attributes: obj, UpdatedBy: bot, UpdatedAt: k.now().UTC()})
	if err != nil {
		return Entity{}, fmt.Errorf("shared context: add entity: %w", err)
	}
	k.changed(space)
	return e, nil
}

// AddFact states a fact in space, as bot, replacing the one with the
// same subject and predicate.
func (k *Keeper) AddFact(ctx context.Context, f Fact) (Fact, error) {
	f.Subject, f.Predicate, f.Object = strings.TrimSpace(f.Subject), strings.TrimSpace(f.Predicate), strings.TrimSpace(f.Object)
	if err := checkSpace(f.Space); err != nil {
		return Fact{}, err
	}
	for _, part := range []struct{ field, text string }{{"subject", f.Subject}, {"predicate", f.Predicate}, {"object", f.Object}} {
		if err := checkLine(part.field, part.text, MaxFactPart); err != nil {
			return Fact{}, err
		}
	}
	if math.IsNaN(f.Confidence) || f.Confidence < 0 || f.Confidence > 1 {
		return Fact{}, world.Invalid("confidence", "must be from 0 to 1, got %v", f.Confidence)
	}
	f.Time = k.now().UTC()
	out, err := k.store.PutFact(ctx, f)
	if err != nil {
		return Fact{}, fmt.Errorf("shared context: add fact: %w", err)
	}
	k.changed(f.Space)
	return out, nil
}

// ForTurn reads space's context within the configured limits, for a
// turn's prompt.
func (k *Keeper) ForTurn(ctx context.Context, space string) (Context, error) {
	return k.Read(ctx, space, k.Limits())
}

// Read reads space's context within l, in the forms the Store
// promises.
func (k *Keeper) Read(ctx context.Context, space string, l Limits) (Context, error) {
	if err := checkSpace(space); err != nil {
		return Context{}, err
	}
	c, err := k.store.SharedContext(ctx, space, l)
	if err != nil {
		return Context{}, fmt.Errorf("shared context of %s: %w", space, err)
	}
	return c, nil
}

// Attributes checks that raw is a JSON object of at most MaxAttributes
// bytes and returns it in the stores' written form (CanonicalAttributes).
func Attributes(raw json.RawMessage) (json.RawMessage, error) {
	out, err := CanonicalAttributes(raw)
	if err != nil {
		return nil, err
	}
	if len(out) > MaxAttributes {
		return nil, world.Invalid("attributes", "must be at most %d bytes of JSON, got %d", MaxAttributes, len(out))
	}
	return out, nil
}

// checkSpace refuses a space that is not one.
func checkSpace(s string) error {
	if _, err := world.Parse(s); err != nil {
		return world.Invalid("space", "%v", err)
	}
	return nil
}

// checkLine refuses what checkText does, and a text of more than one
// line or with control characters: a name or a part of a fact is shown
// on one line of a prompt, which it must not break.
func checkLine(field, text string, max int) error {
	if err := checkText(field, text, max); err != nil {
		return err
	}
	if strings.IndexFunc(text, unicode.IsControl) >= 0 {
		return world.Invalid(field, "must be one line, without control characters")
	}
	return nil
}

// checkText refuses an empty text, or one longer than max characters.
func checkText(field, text string, max int) error {
	switch n := utf8.RuneCountInString(text); {
	case n == 0:
		return world.Invalid(field, "must not be empty")
	case n > max:
		return world.Invalid(field, "must be at most %d characters, got %d", max, n)
	}
	return nil
}
