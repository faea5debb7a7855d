package config

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// index answers questions about the parsed YAML document by key path
// ("bots[1].brain.kind"): on which line a key is, and whether it was
// written at all, which decoded Go values cannot tell (an omitted
// max_depth and `max_depth: 0` both decode to 0).
type index struct {
	root *yaml.Node // the top-level mapping; nil for an unusable document
}

// entry is one key of a mapping, after merge keys (<<) are resolved.
type entry struct {
	key   string
	k, v  *yaml.Node
	dupOf *yaml.Node // for a repeated key: the key node of its first use
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent or an explicit null.
func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// entries lists the keys of mapping n. Keys written in n come first, in
// order; a key repeated in n is returned again with dupOf set. Keys merged
// in with `<<: *anchor` follow, unless n writes them itself.
func entries(n *yaml.Node) []entry { return entriesAt(n, 0) }

// maxMergeDepth bounds merges of merges; an anchor may be merged into
// itself, which would otherwise never end.
const maxMergeDepth = 8

// entriesAt is entries for a mapping merged depth levels deep.
func entriesAt(n *yaml.Node, depth int) []entry {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var own, merged []entry
	first := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			if depth < maxMergeDepth {
				merged = append(merged, mergeEntries(v, depth+1)...)
			}
			continue
		}
		e := entry{key: k.Value, k: k, v: v}
		if prev, ok := first[k.Value]; ok {
			e.dupOf = prev
		} else {
			first[k.Value] = k
		}
		own = append(own, e)
	}
	for _, e := range merged {
		if _, ok := first[e.key]; !ok {
			first[e.key] = e.k
			own = append(own, e)
		}
	}
	return own
}

// mergeEntries returns the entries a merge key's value brings in: one
// mapping or a list of them, earlier ones winning.
func mergeEntries(v *yaml.Node, depth int) []entry {
	v = resolve(v)
	if v == nil {
		return nil
	}
	if v.Kind == yaml.MappingNode {
		return entriesAt(v, depth)
	}
	var out []entry
	if v.Kind == yaml.SequenceNode {
		for _, m := range v.Content {
			if m = resolve(m); m != v && m != nil && m.Kind == yaml.MappingNode {
				out = append(out, entriesAt(m, depth)...)
			}
		}
	}
	return out
}

// segment is one step of a key path: a mapping key, or a list index when
// key is empty.
type segment struct {
	key   string
	index int
}

// splitPath turns "bots[1].brain.kind" into its segments.
func splitPath(path string) []segment {
	var segs []segment
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			segs = append(segs, segment{key: name})
		}
		for rest != "" {
			num, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if err != nil {
				break
			}
			segs = append(segs, segment{index: i})
			_, rest, _ = strings.Cut(after, "[")
		}
	}
	return segs
}

// lookup walks path from the root. It returns the line of the deepest
// step that exists (a key's own line, or a list item's line) and whether
// the whole path exists, together with the node at its end.
func (x *index) lookup(path string) (line int, found bool, node *yaml.Node) {
	if x == nil || x.root == nil {
		return 0, false, nil
	}
	n := x.root
	line = n.Line
	for _, s := range splitPath(path) {
		n = resolve(n)
		var next *yaml.Node
		if s.key != "" {
			for _, e := range entries(n) {
				if e.key == s.key && e.dupOf == nil {
					line, next = e.k.Line, e.v
					break
				}
			}
		} else if n != nil && n.Kind == yaml.SequenceNode && s.index >= 0 && s.index < len(n.Content) {
			next = n.Content[s.index]
			line = resolve(next).Line
		}
		if next == nil {
			return line, false, nil
		}
		n = next
	}
	return line, true, n
}

// line returns the line of path, or of its deepest existing ancestor.
func (x *index) line(path string) int {
	l, _, _ := x.lookup(path)
	return l
}

// has reports whether the key at path is written, even with a null value.
func (x *index) has(path string) bool {
	_, found, _ := x.lookup(path)
	return found
}

// set reports whether the key at path is written with a non-null value.
func (x *index) set(path string) bool {
	_, found, n := x.lookup(path)
	return found && !isNull(n)
}
