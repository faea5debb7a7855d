// Package script is the rule-based brain, Switchboard's embedded default:
// ordered rules of a Go regexp and a text/template reply, and a default
// reply. It needs no network and answers deterministically, which makes
// scripted bot-to-bot flows testable: a reply may contain a delegation
// trigger and a rule may produce artifacts.
//
// Templates see the turn as .Text (on a delegated turn, the task),
// .User.ID, .User.Name, .Bot.ID, .Bot.Name, .Platform, .Group, .History
// (each with .Kind, .From, .Text and .Time), .Findings (the shared
// findings the bot may see, oldest first, each with .Bot, .BotID,
// .Severity, .Text and .Stage), .Insights (what other bots noticed
// about the person that relates to the message, oldest first, each with
// .Bot, .BotID, .Kind, .Text and .Confidence), .Memories (the gossip
// memories the bot has of the person, oldest first, each with .From, the
// name of the bot that was told, and .Text), .Context (the shared
// context of the turn's space, SPEC §10.7: .Context.Events, each with
// .Bot, .BotID, .Text and .Time; .Context.Entities, each with .Name and
// .Attributes, a JSON object as text; .Context.Facts, each with
// .Subject, .Predicate, .Object, .Confidence, .Bot and .BotID;
// .Context.Chain, each step with .Step, .Producer, .ProducerID, .Task,
// .Inputs and .Outputs (file names) and .Status, done or failed; every
// list oldest first, empty but never missing when the space holds
// nothing), .Match (the winning rule's submatches, index 0 the whole
// match; empty for the default reply) and .Delegation. .Delegation is nil unless the turn was handed over by
// another bot, so {{if .Delegation}} tests for it; when set it has .ID,
// .From (the delegating bot's name), .FromID, .Task, .Depth and .Inputs
// (each with .ID, .Name, .MediaType and .Content as a string). Reaching
// into .Delegation on an ordinary turn fails the turn with an error that
// says to guard it, never a panic. .Help is likewise nil unless the turn
// answers a help request (.From is the bot that asks, .Question) or is
// the asking bot's follow-up (.From is the bot that answered, .Question,
// .Answer; .Text is the answer) (SPEC §10.3). Besides text/template's builtins
// (len, index, printf, ...) templates may call lower, upper, trim
// (strings.TrimSpace) and join (strings.Join: {{join .Match ", "}}).
//
// A rule may also act in the shared world (SPEC §10.1): its actions list
// names actions with templated string arguments, run in order through
// the turn's actions once the reply is made. A number argument's text is
// parsed as a number, an object's as JSON (brains.ActionArgs). An action
// that fails is logged, naming the argument at fault, and does not fail
// the reply.
//
// The dot holds no maps, so a misspelt field such as {{.Usr}} is an
// execution error at Reply, not an empty string. Check finds such
// mistakes before any turn: `switchboard check` and every config load
// run it.
package script

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/switchboard-chat/switchboard/brains"
)

// Config is a script brain's rule set, as written under a bot's brain key.
type Config struct {
	// Rules are tried in order; the first whose Match matches the turn's
	// text answers.
	Rules []Rule `yaml:"rules" mapstructure:"rules"`
	// Default is the reply template used when no rule matches. Left
	// empty, an unmatched turn fails with brains.ErrEmptyReply.
	Default string `yaml:"default" mapstructure:"default"`
	// Logger receives the failures of rules' actions; nil means
	// slog.Default().
	Logger *slog.Logger `yaml:"-" mapstructure:"-"`
}

// Rule is one pattern and what to answer when it matches.
type Rule struct {
	// Match is a Go regexp (RE2 syntax) searched for in the turn's text;
	// use ^ and $ to anchor it. It must not be empty: write '.*' to match
	// every message.
	Match string `yaml:"match" mapstructure:"match"`
	// Reply is a text/template for the reply text. Surrounding white
	// space is trimmed from the result.
	Reply string `yaml:"reply" mapstructure:"reply"`
	// Artifacts are files the rule produces along with the reply.
	Artifacts []ArtifactTemplate `yaml:"artifacts" mapstructure:"artifacts"`
	// Actions are what the rule does in the shared world, in order, once
	// its reply is made.
	Actions []ActionTemplate `yaml:"actions" mapstructure:"actions"`
}

// ActionTemplate is one action a rule takes: the action's name and its
// arguments, each a text/template executed on the same data as the
// reply.
type ActionTemplate struct {
	Name string
	Args map[string]string
}

// ArtifactTemplate describes one artifact a rule produces. All three
// fields are text/templates executed on the same data as the reply.
type ArtifactTemplate struct {
	// Name is the artifact's file name; surrounding white space is
	// trimmed, and an empty result fails the turn.
	Name string `yaml:"name" mapstructure:"name"`
	// MediaType is the artifact's MIME type; an empty result stands for
	// DefaultMediaType.
	MediaType string `yaml:"media_type" mapstructure:"media_type"`
	// Content is the artifact's body, kept byte for byte.
	Content string `yaml:"content" mapstructure:"content"`
}

// DefaultMediaType is the media type of an artifact whose MediaType
// template gives nothing: template output is always text.
const DefaultMediaType = "text/plain; charset=utf-8"

// Brain answers turns from a compiled rule set. It is immutable after New
// and safe for concurrent use.
type Brain struct {
	rules []rule
	// fallback is the compiled Default; its match is nil.
	fallback rule
	log      *slog.Logger
}

var _ brains.Brain = (*Brain)(nil)

// rule is a compiled Rule. field is its path in the config ("rules[2]",
// or "default" for the fallback) and replyField its reply's ("rules[2].reply",
// or "default" again); they name errors.
type rule struct {
	field      string
	replyField string
	match      *regexp.Regexp
	reply      *template.Template
	artifacts  []artifact
	actions    []action
}

// action is a compiled ActionTemplate; field is its path
// ("rules[0].actions[1].post_finding").
type action struct {
	field string
	name  string
	args  []arg
}

// arg is one compiled argument of an action.
type arg struct {
	name  string
	field string
	tmpl  *template.Template
}

// artifact is a compiled ArtifactTemplate.
type artifact struct {
	field                    string
	name, mediaType, content *template.Template
}

// errEmptyMatch and errEmptyName are the causes of FieldErrors for a rule
// without a pattern and an artifact without a name.
var (
	errEmptyMatch = errors.New("empty pattern; use '.*' to match every message")
	errEmptyName  = errors.New("artifact name is empty")
)

// New compiles cfg's regexps and templates once. An error is a
// *FieldError naming the first field that does not compile, such as
// "rules[2].match".
func New(cfg Config) (*Brain, error) {
	b := &Brain{rules: make([]rule, 0, len(cfg.Rules)), log: cfg.Logger}
	if b.log == nil {
		b.log = slog.Default()
	}
	for i, r := range cfg.Rules {
		field := fmt.Sprintf("rules[%d]", i)
		if r.Match == "" {
			return nil, &FieldError{Field: field + ".match", Err: errEmptyMatch}
		}
		re, err := regexp.Compile(r.Match)
		if err != nil {
			return nil, &FieldError{Field: field + ".match", Err: err}
		}
		c, err := compile(field, field+".reply", r.Reply, r.Artifacts)
		if err != nil {
			return nil, err
		}
		if c.actions, err = compileActions(field, r.Actions); err != nil {
			return nil, err
		}
		c.match = re
		b.rules = append(b.rules, c)
	}
	var err error
	if b.fallback, err = compile("default", "default", cfg.Default, nil); err != nil {
		return nil, err
	}
	return b, nil
}

// compile parses a reply template and its artifact templates.
func compile(field, replyField, reply string, arts []ArtifactTemplate) (rule, error) {
	r := rule{field: field, replyField: replyField}
	var err error
	if r.reply, err = parse(replyField, reply); err != nil {
		return rule{}, err
	}
	for j, a := range arts {
		af := fmt.Sprintf("%s.artifacts[%d]", field, j)
		c := artifact{field: af}
		if c.name, err = parse(af+".name", a.Name); err != nil {
			return rule{}, err
		}
		if c.mediaType, err = parse(af+".media_type", a.MediaType); err != nil {
			return rule{}, err
		}
		if c.content, err = parse(af+".content", a.Content); err != nil {
			return rule{}, err
		}
		r.artifacts = append(r.artifacts, c)
	}
	return r, nil
}

// compileActions parses the argument templates of a rule's actions.
func compileActions(field string, acts []ActionTemplate) ([]action, error) {
	var out []action
	for j, a := range acts {
		af := fmt.Sprintf("%s.actions[%d].%s", field, j, a.Name)
		if strings.TrimSpace(a.Name) == "" {
			return nil, &FieldError{Field: fmt.Sprintf("%s.actions[%d]", field, j), Err: errNoAction}
		}
		c := action{field: af, name: a.Name}
		names := make([]string, 0, len(a.Args))
		for name := range a.Args {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			t, err := parse(af+"."+name, a.Args[name])
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, arg{name: name, field: af + "." + name, tmpl: t})
		}
		out = append(out, c)
	}
	return out, nil
}

// errNoAction is the cause of a FieldError for an action without a name.
var errNoAction = errors.New("an action needs a name, such as post_finding")

// Reply answers t with the first rule whose pattern matches its text, or
// with the default, then takes the rule's actions (act). It returns
// ctx.Err() if ctx is already done or ends while a template runs
// (checked at each write of template output), a *FieldError naming the
// template that failed to execute, or brains.ErrEmptyReply when the
// reply is blank, there are no artifacts and no action was taken.
func (b *Brain) Reply(ctx context.Context, t brains.Turn) (brains.Reply, error) {
	if err := ctx.Err(); err != nil {
		return brains.Reply{}, err
	}
	r, match := b.pick(turnText(t))
	dt := newData(t, match)
	text, err := execute(ctx, r.replyField, r.reply, dt)
	if err != nil {
		return brains.Reply{}, err
	}
	var arts []brains.Artifact
	for _, a := range r.artifacts {
		art, err := a.render(ctx, dt)
		if err != nil {
			return brains.Reply{}, err
		}
		arts = append(arts, art)
	}
	text = strings.TrimSpace(text)
	acted := b.act(ctx, r, dt, t)
	if err := ctx.Err(); err != nil {
		return brains.Reply{}, err
	}
	if text == "" && len(arts) == 0 && acted == 0 {
		return brains.Reply{}, brains.ErrEmptyReply
	}
	return brains.Reply{Text: text, Artifacts: arts}, nil
}

// act takes rule r's actions in order through the turn's actions, each
// with its arguments rendered on dt, and returns how many succeeded. A
// failure (an argument's template, an argument the action refuses, the
// action itself) is logged, naming the argument, and the next action
// runs: a reply never fails for its actions. A turn without actions (a
// public bot's) takes none.
func (b *Brain) act(ctx context.Context, r *rule, dt *data, t brains.Turn) (acted int) {
	if len(r.actions) == 0 {
		return 0
	}
	log := b.log.With("brain", "script", "session", t.SessionID)
	if t.Actions == nil {
		log.Info("rule's actions not taken: the bot takes no part in the shared world", "rule", r.field)
		return 0
	}
	specs := t.Actions.Specs()
	for _, a := range r.actions {
		if ctx.Err() != nil {
			return acted
		}
		text := make(map[string]string, len(a.args))
		var err error
		for _, g := range a.args {
			if text[g.name], err = execute(ctx, g.field, g.tmpl, dt); err != nil {
				break
			}
		}
		var raw []byte
		if err == nil {
			spec := brains.ActionSpec{Name: a.name}
			if i := slices.IndexFunc(specs, func(s brains.ActionSpec) bool { return s.Name == a.name }); i >= 0 {
				spec = specs[i]
			}
			raw, err = brains.ActionArgs(spec, text)
		}
		var out string
		if err == nil {
			out, err = t.Actions.Call(ctx, a.name, raw)
		}
		if err != nil {
			log.Warn("rule's action failed", "action", a.field, "err", err)
			continue
		}
		acted++
		log.Debug("rule's action taken", "action", a.field, "result", out)
	}
	return acted
}

// pick returns the first rule matching text and its submatches, or the
// fallback and nil.
func (b *Brain) pick(text string) (*rule, []string) {
	for i := range b.rules {
		if m := b.rules[i].match.FindStringSubmatch(text); m != nil {
			return &b.rules[i], m
		}
	}
	return &b.fallback, nil
}

// render executes an artifact's three templates.
func (a *artifact) render(ctx context.Context, dt *data) (brains.Artifact, error) {
	name, err := execute(ctx, a.field+".name", a.name, dt)
	if err != nil {
		return brains.Artifact{}, err
	}
	if name = strings.TrimSpace(name); name == "" {
		return brains.Artifact{}, &FieldError{Field: a.field + ".name", Err: errEmptyName}
	}
	mediaType, err := execute(ctx, a.field+".media_type", a.mediaType, dt)
	if err != nil {
		return brains.Artifact{}, err
	}
	if mediaType = strings.TrimSpace(mediaType); mediaType == "" {
		mediaType = DefaultMediaType
	}
	content, err := execute(ctx, a.field+".content", a.content, dt)
	if err != nil {
		return brains.Artifact{}, err
	}
	return brains.Artifact{Name: name, MediaType: mediaType, Content: []byte(content)}, nil
}
