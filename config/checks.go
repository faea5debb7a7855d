package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Some mistakes can only be seen with knowledge config does not have: a
// script template naming a field its data lacks needs the script brain's
// data types. The program that picks the brains passes such checks to
// Load as options, so config imports no brain and the checks cannot
// drift from what the brains do at run time.

// BrainCheck looks at one bot's brain section and returns what it finds.
// Load calls it for every brain of the kind it was given for, after its
// own checks; it must not modify b.
type BrainCheck func(b *Brain) []Finding

// Finding is one problem a BrainCheck found.
type Finding struct {
	// Key is the path of the key inside the brain section:
	// "rules[2].reply", "default".
	Key string
	// Line is the 1-based line within the key's text (a template's own
	// line), or 0 when the problem concerns the key as a whole.
	Line int
	// Message says what is wrong, without the key.
	Message string
	// Warning marks a finding that does not stop the load.
	Warning bool
}

// Option changes what Load checks.
type Option func(*options)

// options are the settings Options make.
type options struct {
	brainChecks map[string][]BrainCheck // by brain kind
}

// newOptions applies opts.
func newOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithBrainCheck adds check for every brain of the given kind. Its
// findings are reported like Load's own, against "bots[N].brain." plus
// the finding's key; one on a key that already has an error is dropped.
func WithBrainCheck(kind string, check BrainCheck) Option {
	return func(o *options) {
		if o.brainChecks == nil {
			o.brainChecks = map[string][]BrainCheck{}
		}
		o.brainChecks[kind] = append(o.brainChecks[kind], check)
	}
}

// runBrainChecks runs the checks given for br's kind; key is br's path.
func runBrainChecks(r *report, o options, br *Brain, key string) {
	checks := o.brainChecks[br.Kind]
	if len(checks) == 0 {
		return
	}
	// The keys config's own checks found errors at (a template that does
	// not parse): a check's finding there would say it again.
	had := map[string]bool{}
	for _, e := range r.errs {
		if !e.Warning && strings.HasPrefix(e.Key, key) {
			had[e.Key] = true
		}
	}
	for _, check := range checks {
		for _, f := range check(br) {
			k := key + "." + f.Key
			if f.Key == "" {
				k = key
			}
			if !f.Warning && had[k] {
				continue
			}
			r.add(Error{Key: k, Line: r.lineWithin(k, f.Line), Message: f.Message, Warning: f.Warning})
		}
	}
}

// lineWithin returns the file line of line n (1-based) of the text at
// key: exact for a literal block (|) or a one-line value, else the key's
// own line.
func (r *report) lineWithin(key string, n int) int {
	line, found, node := r.doc.lookup(key)
	if node = resolve(node); !found || node == nil || n <= 0 || node.Kind != yaml.ScalarNode {
		return line
	}
	switch {
	case node.Style&yaml.LiteralStyle != 0:
		// The text starts on the line after the indicator.
		return node.Line + n
	case n == 1 && !strings.Contains(node.Value, "\n"):
		return node.Line
	}
	return line
}
