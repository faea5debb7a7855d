package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The shape check walks the YAML document beside the Go type it decodes
// into and reports, with key path and line, every unknown or repeated key,
// every value of the wrong type and every brain key of another kind. It is
// stricter than the decoder: a string field takes only a YAML string, a
// duration only a string such as "30s", so `max_depth: "3"` and
// `cooldown: 30` (30 nanoseconds to the decoder) are reported.

var (
	durationType = reflect.TypeOf(time.Duration(0))
	brainType    = reflect.TypeOf(Brain{})
)

// maxVisits bounds the walk, so a document of aliases that expand
// exponentially is refused rather than walked.
const maxVisits = 100_000

// shapeChecker holds the state of one walk.
type shapeChecker struct {
	r      *report
	visits int
}

// checkShape walks root as a value of type t and records problems in r.
func checkShape(r *report, root *yaml.Node, t reflect.Type) {
	c := &shapeChecker{r: r}
	c.value(root, t, "")
}

// value checks node n, found at path, against type t.
func (c *shapeChecker) value(n *yaml.Node, t reflect.Type, path string) {
	c.visits++
	if c.visits == maxVisits {
		c.r.structuralf("", 0, "the document is too large (aliases expand to more than %d values)", maxVisits)
	}
	if c.visits >= maxVisits {
		return
	}
	n = resolve(n)
	if isNull(n) {
		return // an omitted value: the zero value, then defaults
	}
	switch {
	case t == durationType:
		c.duration(n, path)
	case t.Kind() == reflect.Pointer:
		c.value(n, t.Elem(), path)
	case t == argTextType:
		// An action's argument: text, a number or boolean taken as its
		// text, or a list of those taken as a JSON list. A mapping is
		// written as JSON text: loading lower-cases a mapping's keys.
		c.argText(n, path)
	case t.Kind() == reflect.Struct:
		c.mapping(n, t, path)
	case t.Kind() == reflect.Map:
		c.dict(n, t, path)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			c.wrong(n, path, "a list")
			return
		}
		for i, item := range n.Content {
			c.value(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case t.Kind() == reflect.String:
		c.scalar(n, path, "a string", "!!str")
	case t.Kind() == reflect.Bool:
		c.scalar(n, path, "true or false", "!!bool")
	case t.Kind() == reflect.Int:
		c.scalar(n, path, "a whole number", "!!int")
	case t.Kind() == reflect.Float64:
		c.scalar(n, path, "a number", "!!int", "!!float")
	default:
		panic("config: no shape check for " + t.String())
	}
}

// argText checks an action argument: a scalar of text, a number or a
// boolean, or a list of them.
func (c *shapeChecker) argText(n *yaml.Node, path string) {
	const want = "a string, a number, true or false, or a list of them (write a mapping as JSON text in quotes, " +
		`such as '{"pricing": "$99/month"}', so its keys keep their case)`
	scalar := func(n *yaml.Node) bool {
		n = resolve(n)
		return n.Kind == yaml.ScalarNode && slices.Contains([]string{"!!str", "!!int", "!!float", "!!bool"}, n.ShortTag())
	}
	if n.Kind == yaml.SequenceNode {
		for _, item := range n.Content {
			if !scalar(item) {
				c.wrong(item, path, want)
				return
			}
		}
		return
	}
	if !scalar(n) {
		c.wrong(n, path, want)
	}
}

// scalar checks that n is a scalar with one of the YAML tags.
func (c *shapeChecker) scalar(n *yaml.Node, path, want string, tags ...string) {
	if n.Kind != yaml.ScalarNode || !slices.Contains(tags, n.ShortTag()) {
		c.wrong(n, path, want)
	}
}

// duration accepts a string ParseDuration understands, or a bare 0.
func (c *shapeChecker) duration(n *yaml.Node, path string) {
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!str":
			if _, err := ParseDuration(n.Value); err == nil {
				return
			}
		case "!!int":
			if n.Value == "0" {
				return
			}
		}
	}
	c.wrong(n, path, `a duration such as "30s", "5m", "6h" or "30d"`)
}

// wrong reports that n is not the wanted kind of value.
func (c *shapeChecker) wrong(n *yaml.Node, path, want string) {
	c.r.structuralf(path, n.Line, "expected %s, got %s", want, describe(n))
}

// describe names a YAML value for an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:37] + "..."
	}
	if n.ShortTag() == "!!str" {
		return fmt.Sprintf("the string %q", v)
	}
	return v
}

// mapping checks n as the struct type t: every key must name a field (by
// its yaml tag), once.
func (c *shapeChecker) mapping(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		c.wrong(n, path, "a mapping")
		return
	}
	fields := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name := yamlName(f); name != "" {
			fields[name] = f
		}
	}
	kind := ""
	if t == brainType {
		kind = brainKindOf(n)
	}
	for _, e := range entries(n) {
		key := joinKey(path, e.key)
		if e.k.Kind != yaml.ScalarNode {
			c.r.structuralf(path, e.k.Line, "a key must be a plain name, got %s", describe(e.k))
			continue
		}
		if e.dupOf != nil {
			c.r.structuralf(key, e.k.Line, "duplicate key (first set on line %d)", e.dupOf.Line)
			continue
		}
		f, ok := fields[e.key]
		if !ok {
			c.r.structuralf(key, e.k.Line, "unknown key%s", suggest(e.key, fields))
			continue
		}
		if kinds := f.Tag.Get("kinds"); kind != "" && kinds != "" && !slices.Contains(strings.Split(kinds, ","), kind) {
			c.r.structuralf(key, e.k.Line, "not a key of brain kind %s (it belongs to kind %s)", kind, kinds)
			continue
		}
		c.value(e.v, f.Type, key)
	}
}

// dict checks n as the map type t: any plain keys, each once, whose
// values are checked against t's element type.
func (c *shapeChecker) dict(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		c.wrong(n, path, "a mapping")
		return
	}
	for _, e := range entries(n) {
		key := joinKey(path, e.key)
		switch {
		case e.k.Kind != yaml.ScalarNode:
			c.r.structuralf(path, e.k.Line, "a key must be a plain name, got %s", describe(e.k))
		case e.dupOf != nil:
			c.r.structuralf(key, e.k.Line, "duplicate key (first set on line %d)", e.dupOf.Line)
		default:
			c.value(e.v, t.Elem(), key)
		}
	}
}

// brainKindOf returns the brain's kind when it is written as a known kind,
// so keys of other kinds can be reported; otherwise "".
func brainKindOf(n *yaml.Node) string {
	for _, e := range entries(n) {
		if v := resolve(e.v); e.key == "kind" && v.Kind == yaml.ScalarNode && knownKind(v.Value) {
			return v.Value
		}
	}
	return ""
}

// yamlName returns the key a struct field is written as.
func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

// joinKey appends a mapping key to a key path.
func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// suggest returns " (did you mean x?)" for the known key closest to an
// unknown one, when one is close enough to be a likely typo: two edits,
// three for longer keys (identity → identities).
func suggest(key string, fields map[string]reflect.StructField) string {
	best, bestDist := "", 3
	if len(key) >= 6 {
		bestDist = 4
	}
	for name := range fields {
		if d := editDistance(strings.ToLower(key), name); d < bestDist || (d == bestDist && name < best) {
			best, bestDist = name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64 // long keys are never typos of ours; skip the work
	}
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
