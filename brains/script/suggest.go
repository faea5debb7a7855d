package script

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// What the type check says about a name a value does not have: the names
// it does have, the closest of them, and how to describe the value.

// unknownField says why name is not a field of t, with the closest name
// t does have when one is close.
func unknownField(t reflect.Type, name, path, parent, prefix, dotIs string) string {
	d := deref(t)
	if d.Kind() != reflect.Struct && len(names(t)) == 0 {
		what := parent
		if what == "" {
			what = "."
		}
		msg := fmt.Sprintf("unknown field %s: %s is %s, which has no fields", path, what, kindPhrase(d))
		if d.Kind() == reflect.Slice && prefix == "" {
			msg += fmt.Sprintf(" (go through it with {{range %s}}…{{end}})", what)
		}
		if dotIs != "" && parent == "" {
			msg += fmt.Sprintf(" (here . is %s)", dotIs)
		}
		return msg
	}
	msg := "unknown field " + path
	var notes []string
	if dotIs != "" && parent == "" {
		notes = append(notes, "here . is "+dotIs)
	}
	if best := closest(name, names(t)); best != "" {
		notes = append(notes, "did you mean "+parent+"."+best+"?")
	}
	if len(notes) > 0 {
		msg += " (" + strings.Join(notes, "; ") + ")"
	}
	return msg
}

// methodOf finds the exported method name of a value of type t as
// text/template does: on *T as well as T, since the values it reaches
// through the data are addressable.
func methodOf(t reflect.Type, name string) (reflect.Method, bool) {
	if t.Kind() == reflect.Interface {
		return reflect.Method{}, false
	}
	d := deref(t)
	if d.Kind() == reflect.Interface {
		return reflect.Method{}, false
	}
	return reflect.PointerTo(d).MethodByName(name)
}

// names lists the exported fields and methods a template can reach on
// a value of type t.
func names(t reflect.Type) []string {
	d := deref(t)
	var out []string
	if d.Kind() == reflect.Struct {
		for _, f := range reflect.VisibleFields(d) {
			if f.IsExported() && !f.Anonymous {
				out = append(out, f.Name)
			}
		}
	}
	if d.Kind() != reflect.Interface {
		p := reflect.PointerTo(d)
		for i := range p.NumMethod() {
			out = append(out, p.Method(i).Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// closest returns the name nearest to an unknown one: the same but for
// case, else within two edits (and at most half its letters), or "".
func closest(name string, known []string) string {
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	best, bestD := "", 3
	for _, k := range known {
		d := editDistance(strings.ToLower(name), strings.ToLower(k))
		if d*2 <= len(k) && d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (field names are ASCII), counting a swap of neighbours as one edit.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64 // never a typo of a field name; skip the work
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// kindPhrase names a kind of value for messages: "a string", "a list".
func kindPhrase(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map:
		return "a map"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct:
		return "a " + t.Name()
	}
	if t.Kind() >= reflect.Int && t.Kind() <= reflect.Uintptr {
		return "a number"
	}
	return "a " + t.Kind().String()
}

// plural is "1 argument", "2 arguments", "no arguments".
func plural(n int, noun string) string {
	switch n {
	case 0:
		return "no " + noun + "s"
	case 1:
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
