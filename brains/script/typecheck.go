package script

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"text/template"
	tparse "text/template/parse"
)

// This file checks a template's field chains (.User.Name,
// $e.Text, (index .History 0).From) against the Go types the template
// really runs on, walking its parse tree the way text/template walks it
// at run time: the dot changes in range and with, variables live to the
// end of their block, {{template}} runs another template on a new dot.
// Every branch is walked, whichever a turn would take.

// dataType is the type of the dot of every template a rule runs.
var dataType = reflect.TypeFor[*data]()

// scope is what names mean at one point of a template.
type scope struct {
	// dot is the type of ".", nil when it cannot be known here (an
	// interface, the result of call).
	dot reflect.Type
	// dotIs describes "." for messages when it is not the template's
	// data: "an element of .History", ".Delegation".
	dotIs string
	// vars are the variables in scope, innermost last.
	vars []variable
}

// variable is a template variable and its type (nil: unknown).
type variable struct {
	name string
	typ  reflect.Type
}

// rootScope is the scope a rule's template starts in.
func rootScope() *scope {
	return &scope{dot: dataType, vars: []variable{{"$", dataType}}}
}

// lookupVar returns the type of the innermost variable called name.
func (s *scope) lookupVar(name string) reflect.Type {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			return s.vars[i].typ
		}
	}
	return nil // parse has already refused undefined variables
}

// typeChecker walks one parsed template and those it invokes.
type typeChecker struct {
	tmpl     *template.Template
	text     string
	findings []Finding
	// walked records the (template, dot type) pairs already walked, so
	// a template invoked many times, or recursively, is walked once each.
	walked map[string]map[reflect.Type]bool
	// unbounded is set when running the template could take very long:
	// it invokes templates, or ranges over numbers or deeply over lists.
	unbounded bool
	// width is the product of the sample lengths of the ranges around
	// the node being walked; listLen is the length assumed for each list.
	width, listLen int
}

// maxSampleWidth bounds the product of the lengths of nested ranges a
// sample run may go through.
const maxSampleWidth = 10_000

// newTypeChecker starts a walk of tmpl, parsed from text, whose longest
// list in the sample data has listLen elements.
func newTypeChecker(tmpl *template.Template, text string, listLen int) *typeChecker {
	return &typeChecker{tmpl: tmpl, text: text, walked: map[string]map[reflect.Type]bool{}, width: 1, listLen: max(listLen, 1)}
}

// report records a problem at node.
func (c *typeChecker) report(node tparse.Node, format string, args ...any) {
	line := 0
	if node != nil {
		line = lineOf(c.text, node.Position())
	}
	c.findings = append(c.findings, Finding{Line: line, Message: fmt.Sprintf(format, args...)})
}

// walkTemplate walks the named template with the dot of s, once per dot
// type.
func (c *typeChecker) walkTemplate(name string, s *scope) {
	t := c.tmpl.Lookup(name)
	if t == nil || t.Tree == nil || t.Tree.Root == nil {
		return
	}
	if c.walked[name] == nil {
		c.walked[name] = map[reflect.Type]bool{}
	}
	if c.walked[name][s.dot] {
		return
	}
	c.walked[name][s.dot] = true
	c.list(t.Tree.Root, s)
}

// list walks a list of nodes; variables declared in it end with it.
func (c *typeChecker) list(l *tparse.ListNode, s *scope) {
	if l == nil {
		return
	}
	mark := len(s.vars)
	for _, n := range l.Nodes {
		c.node(n, s)
	}
	s.vars = s.vars[:mark]
}

// node walks one node of a list.
func (c *typeChecker) node(n tparse.Node, s *scope) {
	switch n := n.(type) {
	case *tparse.ActionNode:
		c.pipe(n.Pipe, s)
	case *tparse.IfNode:
		mark := len(s.vars)
		c.pipe(n.Pipe, s)
		c.list(n.List, s)
		c.list(n.ElseList, s)
		s.vars = s.vars[:mark]
	case *tparse.WithNode:
		mark := len(s.vars)
		t := c.pipe(n.Pipe, s)
		inner := &scope{dot: t, dotIs: n.Pipe.String(), vars: s.vars}
		c.list(n.List, inner)
		c.list(n.ElseList, s)
		s.vars = s.vars[:mark]
	case *tparse.RangeNode:
		c.rangeNode(n, s)
	case *tparse.TemplateNode:
		// Running one template from another can recurse without end
		// before writing anything: never run such a template on samples.
		c.unbounded = true
		var t reflect.Type
		if n.Pipe != nil {
			t = c.pipe(n.Pipe, s)
		}
		if c.tmpl.Lookup(n.Name) == nil {
			c.report(n, "no template named %q is defined", n.Name)
			return
		}
		c.walkTemplate(n.Name, &scope{dot: t, dotIs: fmt.Sprintf("the data given to template %q", n.Name), vars: []variable{{"$", t}}})
	}
	// Text, comments, break and continue name no fields.
}

// rangeNode walks {{range}}: its body with the dot (and variables) of an
// element, its else with the dot unchanged.
func (c *typeChecker) rangeNode(n *tparse.RangeNode, s *scope) {
	mark := len(s.vars)
	t := c.pipeTypes(n.Pipe, s)
	var key, elem reflect.Type
	if t != nil {
		switch d := deref(t); d.Kind() {
		case reflect.Slice, reflect.Array:
			key, elem = reflect.TypeFor[int](), d.Elem()
		case reflect.Map:
			key, elem = d.Key(), d.Elem()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			key, elem = d, d
		case reflect.Chan, reflect.Func, reflect.Interface:
		default:
			c.report(n, "{{range %s}}: %s is %s, which range cannot go through", n.Pipe, n.Pipe, kindPhrase(d))
		}
	}
	// Only lists of the sample data are known to be short.
	if t == nil || (deref(t).Kind() != reflect.Slice && deref(t).Kind() != reflect.Array && deref(t).Kind() != reflect.Map) {
		c.unbounded = true
	}
	if !n.Pipe.IsAssign {
		switch len(n.Pipe.Decl) {
		case 1:
			s.vars = append(s.vars, variable{n.Pipe.Decl[0].Ident[0], elem})
		case 2:
			s.vars = append(s.vars, variable{n.Pipe.Decl[0].Ident[0], key}, variable{n.Pipe.Decl[1].Ident[0], elem})
		}
	}
	outer := c.width
	if c.width *= c.listLen; c.width > maxSampleWidth {
		c.unbounded = true
	}
	c.list(n.List, &scope{dot: elem, dotIs: "an element of " + n.Pipe.String(), vars: s.vars})
	c.width = outer
	c.list(n.ElseList, s)
	s.vars = s.vars[:mark]
}

// pipe walks a pipeline outside range, declares its variables and
// returns the type of its value.
func (c *typeChecker) pipe(p *tparse.PipeNode, s *scope) reflect.Type {
	t := c.pipeTypes(p, s)
	if !p.IsAssign {
		for _, v := range p.Decl {
			s.vars = append(s.vars, variable{v.Ident[0], t})
		}
	}
	return t
}

// pipeTypes walks a pipeline's commands and returns the type of its
// value, without declaring its variables.
func (c *typeChecker) pipeTypes(p *tparse.PipeNode, s *scope) reflect.Type {
	if p == nil {
		return nil
	}
	var t reflect.Type
	for i, cmd := range p.Cmds {
		t = c.command(cmd, s, i > 0, t)
	}
	return t
}

// command walks one command of a pipeline and returns the type of its
// value. piped says the previous command's value is passed as the last
// argument, of type prev.
func (c *typeChecker) command(cmd *tparse.CommandNode, s *scope, piped bool, prev reflect.Type) reflect.Type {
	args := len(cmd.Args) - 1
	if piped {
		args++
	}
	// The arguments are values of their own; walking them finds their
	// misspelt fields too.
	argTypes := make([]reflect.Type, 0, args)
	for _, a := range cmd.Args[1:] {
		argTypes = append(argTypes, c.arg(a, s))
	}
	if piped {
		argTypes = append(argTypes, prev)
	}
	switch n := cmd.Args[0].(type) {
	case *tparse.FieldNode:
		return c.chain(n, s.dot, "", s.dotIs, n.Ident, args)
	case *tparse.VariableNode:
		return c.chain(n, s.lookupVar(n.Ident[0]), n.Ident[0], "", n.Ident[1:], args)
	case *tparse.ChainNode:
		base := c.arg(n.Node, s)
		return c.chain(n, base, "("+n.Node.String()+")", "", n.Field, args)
	case *tparse.IdentifierNode:
		return funcResult(n.Ident, argTypes)
	}
	return c.arg(cmd.Args[0], s)
}

// arg walks one operand and returns its type.
func (c *typeChecker) arg(n tparse.Node, s *scope) reflect.Type {
	switch n := n.(type) {
	case *tparse.DotNode:
		return s.dot
	case *tparse.FieldNode:
		return c.chain(n, s.dot, "", s.dotIs, n.Ident, 0)
	case *tparse.VariableNode:
		return c.chain(n, s.lookupVar(n.Ident[0]), n.Ident[0], "", n.Ident[1:], 0)
	case *tparse.ChainNode:
		base := c.arg(n.Node, s)
		return c.chain(n, base, "("+n.Node.String()+")", "", n.Field, 0)
	case *tparse.PipeNode:
		return c.pipe(n, s)
	case *tparse.IdentifierNode:
		return funcResult(n.Ident, nil)
	case *tparse.StringNode:
		return reflect.TypeFor[string]()
	case *tparse.BoolNode:
		return reflect.TypeFor[bool]()
	case *tparse.NumberNode:
		switch {
		case n.IsInt:
			return reflect.TypeFor[int]()
		case n.IsFloat:
			return reflect.TypeFor[float64]()
		}
	}
	return nil
}

// chain follows the field and method names idents from a value of type
// t, reporting the first name that does not resolve. prefix is what the
// chain starts from as written ("", "$", "$e", "(index .History 0)"),
// dotIs what "." is when prefix is "". args is the number of arguments
// the last name is called with. It returns the chain's type, nil when
// unknown.
func (c *typeChecker) chain(node tparse.Node, t reflect.Type, prefix, dotIs string, idents []string, args int) reflect.Type {
	for i, name := range idents {
		if t == nil || deref(t).Kind() == reflect.Interface {
			return nil
		}
		path := prefix + "." + strings.Join(idents[:i+1], ".")
		parent := prefix + "." + strings.Join(idents[:i], ".")
		if i == 0 {
			parent = prefix
		}
		last := i == len(idents)-1
		if m, ok := methodOf(t, name); ok {
			want := m.Type.NumIn() - 1 // less the receiver
			variadic := m.Type.IsVariadic()
			switch {
			case !last && want > 0:
				c.report(node, "%s takes %s, so it can only end a chain", path, plural(want, "argument"))
				return nil
			case last && !variadic && args != want, last && variadic && args < want-1:
				c.report(node, "%s takes %s, got %d", path, plural(want, "argument"), args)
				return nil
			case m.Type.NumOut() == 0:
				return nil
			}
			t = m.Type.Out(0)
			continue
		}
		d := deref(t)
		if d.Kind() == reflect.Struct {
			if f, ok := d.FieldByName(name); ok && f.IsExported() {
				if last && args > 0 {
					c.report(node, "%s is a field, not a method: it takes no arguments", path)
					return nil
				}
				t = f.Type
				continue
			}
		}
		if d.Kind() == reflect.Map && d.Key().Kind() == reflect.String {
			t = d.Elem()
			continue
		}
		c.report(node, "%s", unknownField(t, name, path, parent, prefix, dotIs))
		return nil
	}
	return t
}

// funcResult is the type a function call gives, from the functions'
// own signatures (funcs) or text/template's documented builtins; nil
// when it depends on values (call, and, or with mixed operands).
func funcResult(name string, args []reflect.Type) reflect.Type {
	if f, ok := funcs[name]; ok {
		ft := reflect.TypeOf(f)
		if ft.NumOut() == 0 {
			return nil
		}
		return ft.Out(0)
	}
	switch name {
	case "len":
		return reflect.TypeFor[int]()
	case "print", "printf", "println", "html", "js", "urlquery":
		return reflect.TypeFor[string]()
	case "not", "eq", "ne", "lt", "le", "gt", "ge":
		return reflect.TypeFor[bool]()
	case "slice":
		if len(args) > 0 {
			return args[0]
		}
	case "index":
		if len(args) == 0 {
			return nil
		}
		t := args[0]
		for range args[1:] {
			if t == nil {
				return nil
			}
			switch d := deref(t); d.Kind() {
			case reflect.Slice, reflect.Array, reflect.Map:
				t = d.Elem()
			case reflect.String:
				t = reflect.TypeFor[byte]()
			default:
				return nil
			}
		}
		return t
	case "and", "or":
		if len(args) > 0 && args[0] != nil && !slices.ContainsFunc(args, func(a reflect.Type) bool { return a != args[0] }) {
			return args[0]
		}
	}
	return nil
}

// deref strips pointers from t, as text/template does from values.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
