package config

import (
	"slices"
	"time"
)

// Brain kinds of Brain.Kind.
const (
	KindScript = "script"
	KindExec   = "exec"
	KindOpenAI = "openai"
)

// Default brain settings applied when the keys are omitted.
const (
	DefaultScriptTimeout         = 30 * time.Second
	DefaultExecTimeout           = 10 * time.Minute
	DefaultOpenAITimeout         = 2 * time.Minute
	DefaultOpenAIContextMessages = 20
)

// Brain is a bot's brain section (SPEC §6). It holds the keys of every
// kind; the `kinds` tag names the kinds a key belongs to (none: all), and a
// key of another kind is a validation error.
type Brain struct {
	// Kind is "script", "exec" or "openai".
	Kind string `yaml:"kind"`
	// Timeout bounds one turn (default 30s script, 10m exec, 2m openai).
	Timeout time.Duration `yaml:"timeout"`

	// Rules are tried in order; the first whose Match matches answers.
	Rules []Rule `yaml:"rules" kinds:"script"`
	// Default is the reply template when no rule matches; it may be empty.
	Default string `yaml:"default" kinds:"script"`

	// Command is the program and arguments run for a session's first turn;
	// "{session}" stands for the session ID.
	Command []string `yaml:"command" kinds:"exec"`
	// ResumeCommand is run for later turns (default: Command).
	ResumeCommand []string `yaml:"resume_command" kinds:"exec"`
	// Env names the gateway environment variables passed to the command.
	Env []string `yaml:"env" kinds:"exec"`
	// RunAs, a user name or numeric user ID, runs the command as that
	// user (SPEC §12); the gateway must run as root. Empty: the
	// gateway's own user.
	RunAs string `yaml:"run_as" kinds:"exec"`

	// BaseURL is the OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1.
	BaseURL string `yaml:"base_url" kinds:"openai"`
	// Model is the model name sent with each request.
	Model string `yaml:"model" kinds:"openai"`
	// APIKeyEnv names the environment variable holding the API key; empty
	// means no key is sent.
	APIKeyEnv string `yaml:"api_key_env" kinds:"openai"`
	// ContextMessages is the history window in messages (default 20).
	ContextMessages int `yaml:"context_messages" kinds:"openai"`
	// Temperature is sent when set; nil leaves it to the server.
	Temperature *float64 `yaml:"temperature" kinds:"openai"`
	// MaxTokens is sent when positive.
	MaxTokens int `yaml:"max_tokens" kinds:"openai"`
}

// Rule is one script brain rule.
type Rule struct {
	// Match is a Go regular expression tried against the message text.
	Match string `yaml:"match"`
	// Reply is a Go text/template producing the reply.
	Reply string `yaml:"reply"`
	// Artifacts are files the rule produces alongside the reply.
	Artifacts []ArtifactTemplate `yaml:"artifacts"`
	// Actions are what the rule does in the shared world once its reply
	// is made (SPEC §10.1), in order: each item names one action with
	// its arguments, {post_finding: {text: '{{index .Match 1}}', severity:
	// high}}, each argument a Go text/template.
	Actions []ActionCall `yaml:"actions"`
}

// ActionCall is one item of a rule's actions list: one action's name
// with its arguments. Validation refuses an item naming no action or
// several.
type ActionCall map[string]map[string]ArgText

// Name and Args are the item's action and arguments; ok is false when it
// does not name exactly one action.
func (a ActionCall) Name() (name string, args map[string]ArgText, ok bool) {
	if len(a) != 1 {
		return "", nil, false
	}
	for n, as := range a {
		name, args = n, as
	}
	return name, args, true
}

// ArgText is an action argument as written: a template. A YAML number or
// boolean is taken as its text ("0.9", "true"), which the action parses
// as its type asks.
type ArgText string

// ArtifactTemplate describes one artifact a script rule produces.
type ArtifactTemplate struct {
	// Name is the artifact's file name.
	Name string `yaml:"name"`
	// MediaType is the artifact's media type (default text/plain).
	MediaType string `yaml:"media_type"`
	// Content is a Go text/template producing the artifact's content.
	Content string `yaml:"content"`
}

// DefaultArtifactMediaType is an artifact's media type when omitted.
const DefaultArtifactMediaType = "text/plain"

// brainKinds lists the valid kinds in the order error messages name them.
var brainKinds = []string{KindScript, KindExec, KindOpenAI}

// defaultBrainTimeout returns the timeout of a kind whose timeout is
// omitted.
func defaultBrainTimeout(kind string) time.Duration {
	switch kind {
	case KindExec:
		return DefaultExecTimeout
	case KindOpenAI:
		return DefaultOpenAITimeout
	}
	return DefaultScriptTimeout
}

// knownKind reports whether kind is a brain kind.
func knownKind(kind string) bool { return slices.Contains(brainKinds, kind) }
