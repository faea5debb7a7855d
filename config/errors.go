package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Error is one problem in a configuration file.
type Error struct {
	// File is the file's base name, "bots.yaml" or "users.yaml".
	File string
	// Line is the 1-based line of the offending key, or 0 when unknown.
	Line int
	// Key is the key path, e.g. "bots[1].brain.kind"; empty for problems
	// of the whole file.
	Key string
	// Message says what is wrong.
	Message string
	// Warning marks a problem that does not stop the configuration from
	// loading: something that is valid but probably not what was meant.
	Warning bool
}

// Error formats the problem as "bots.yaml:14: bots[1].brain.kind: message",
// leaving out the line when unknown and the key when empty; a warning's
// message starts with "warning: ".
func (e Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	if e.Warning {
		b.WriteString("warning: ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Errors is every problem found in one Load, sorted by file then line.
// It holds at least one error; warnings found with errors are among them.
type Errors []Error

// Error lists the problems one per line, sorted by file then line.
func (es Errors) Error() string {
	sorted := append(Errors(nil), es...)
	sorted.sort()
	lines := make([]string, len(sorted))
	for i, e := range sorted {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sort orders the problems by file, then line, keeping the order in which
// they were found otherwise.
func (es Errors) sort() {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].File != es[j].File {
			return es[i].File < es[j].File
		}
		return es[i].Line < es[j].Line
	})
}

// report collects the problems of one file. It finds each key's line in the
// parsed document and drops a problem whose key, or an ancestor of it,
// already has a structural one (a value of the wrong type would otherwise
// also be reported as, say, missing).
type report struct {
	file string
	doc  *index
	errs Errors
	// structural holds the keys of type, syntax and unknown-key errors
	// ("" for the file as a whole).
	structural map[string]bool
}

// structuralf records a problem found while checking the file's shape.
func (r *report) structuralf(key string, line int, format string, args ...any) {
	if r.structural == nil {
		r.structural = map[string]bool{}
	}
	r.structural[key] = true
	r.errs = append(r.errs, Error{File: r.file, Line: line, Key: key, Message: fmt.Sprintf(format, args...)})
}

// errorf records a problem with a decoded value at key, unless the key is
// already covered by a structural problem.
func (r *report) errorf(key, format string, args ...any) {
	r.add(Error{Key: key, Line: r.doc.line(key), Message: fmt.Sprintf(format, args...)})
}

// warnf records a warning about a decoded value at key, unless the key is
// already covered by a structural problem.
func (r *report) warnf(key, format string, args ...any) {
	r.add(Error{Key: key, Line: r.doc.line(key), Message: fmt.Sprintf(format, args...), Warning: true})
}

// add records e in the report's file, unless its key is already covered
// by a structural problem.
func (r *report) add(e Error) {
	key := e.Key
	// The key and each of its ancestors ("bots[1].brain", "bots[1]",
	// "bots", ""), looked up rather than compared with every structural
	// problem: a file may have thousands of both.
	for k := key; ; {
		if r.structural[k] {
			return
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			if k == "" {
				break
			}
			i = 0
		}
		k = k[:i]
	}
	e.File = r.file
	r.errs = append(r.errs, e)
}

// split divides problems into errors and warnings.
func (es Errors) split() (errs, warnings Errors) {
	for _, e := range es {
		if e.Warning {
			warnings = append(warnings, e)
		} else {
			errs = append(errs, e)
		}
	}
	return errs, warnings
}
