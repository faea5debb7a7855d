package script

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestCheckFindsTemplateMistakes: each case is one template with one
// mistake, found on the right field and line with a useful message.
func TestCheckFindsTemplateMistakes(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string
		line  int
		msg   string
	}{
		{
			name:  "misspelt nested field",
			cfg:   Config{Rules: []Rule{{Match: "hi", Reply: "Hi {{.User.Nmae}}"}}},
			field: "rules[0].reply", line: 1,
			msg: "unknown field .User.Nmae (did you mean .User.Name?)",
		},
		{
			name:  "misspelt top-level field",
			cfg:   Config{Default: "{{.Txt}}"},
			field: "default", line: 1,
			msg: "unknown field .Txt (did you mean .Text?)",
		},
		{
			name:  "wrong case",
			cfg:   Config{Default: "{{.bot.name}}"},
			field: "default", line: 1,
			msg: "unknown field .bot (did you mean .Bot?)",
		},
		{
			name:  "field of a string",
			cfg:   Config{Default: "{{.User.Name.First}}"},
			field: "default", line: 1,
			msg: "unknown field .User.Name.First: .User.Name is a string, which has no fields",
		},
		{
			name:  "field of a list",
			cfg:   Config{Default: "{{.History.Text}}"},
			field: "default", line: 1,
			msg: "unknown field .History.Text: .History is a list, which has no fields (go through it with {{range .History}}…{{end}})",
		},
		{
			name: "on a later line of the template",
			cfg: Config{Rules: []Rule{{Match: ".*", Reply: "one\ntwo\n{{if .Group}}in a group{{end}}\n" +
				"{{.Platfom}}"}}},
			field: "rules[0].reply", line: 4,
			msg: "unknown field .Platfom (did you mean .Platform?)",
		},
		{
			name:  "in a branch a turn may never take",
			cfg:   Config{Default: "{{if .Delegation}}{{.Text}}{{else}}{{.Usr.Name}}{{end}}"},
			field: "default", line: 1,
			msg: "unknown field .Usr (did you mean .User?)",
		},
		{
			name:  "method of the delegation",
			cfg:   Config{Default: "{{.Delegation.Tsak}}"},
			field: "default", line: 1,
			msg: "unknown field .Delegation.Tsak (did you mean .Delegation.Task?)",
		},
		{
			name:  "method of the help request",
			cfg:   Config{Default: "{{.Help.Answr}}"},
			field: "default", line: 1,
			msg: "unknown field .Help.Answr (did you mean .Help.Answer?)",
		},
		{
			name:  "method of a chain step",
			cfg:   Config{Default: "{{if .Crossbot}}{{.Crossbot.Lenght}}{{end}}"},
			field: "default", line: 1,
			msg: "unknown field .Crossbot.Lenght (did you mean .Crossbot.Length?)",
		},
		{
			name:  "inside with",
			cfg:   Config{Default: "{{with .Delegation}}{{.From}} asks: {{.Taks}}{{end}}"},
			field: "default", line: 1,
			msg: "unknown field .Taks (here . is .Delegation; did you mean .Task?)",
		},
		{
			name:  "inside range",
			cfg:   Config{Default: "{{range .History}}{{.Form}}: {{.Text}}\n{{end}}"},
			field: "default", line: 1,
			msg: "unknown field .Form (here . is an element of .History; did you mean .From?)",
		},
		{
			name:  "range over the delegation's inputs",
			cfg:   Config{Default: "{{with .Delegation}}{{range .Inputs}}{{.Nmae}}{{end}}{{end}}"},
			field: "default", line: 1,
			msg: "unknown field .Nmae (here . is an element of .Inputs; did you mean .Name?)",
		},
		{
			name:  "range variable",
			cfg:   Config{Default: "{{range $i, $e := .History}}{{$i}} {{$e.Txt}}{{end}}"},
			field: "default", line: 1,
			msg: "unknown field $e.Txt (did you mean $e.Text?)",
		},
		{
			name:  "the root variable inside range",
			cfg:   Config{Default: "{{range .History}}{{$.Bot.Nam}}{{end}}"},
			field: "default", line: 1,
			msg: "unknown field $.Bot.Nam (did you mean $.Bot.Name?)",
		},
		{
			name:  "variable declared in an action",
			cfg:   Config{Default: "{{$u := .User}}{{$u.ID}} {{$u.Id}}"},
			field: "default", line: 1,
			msg: "unknown field $u.Id (did you mean $u.ID?)",
		},
		{
			name:  "field of a function's result",
			cfg:   Config{Default: "{{(index .History 0).Frm}}"},
			field: "default", line: 1,
			msg: "unknown field (index .History 0).Frm (did you mean (index .History 0).From?)",
		},
		{
			name:  "argument of a function",
			cfg:   Config{Default: "{{printf \"%s says %s\" .User.Nme .Text}}"},
			field: "default", line: 1,
			msg: "unknown field .User.Nme (did you mean .User.Name?)",
		},
		{
			name:  "in a pipeline",
			cfg:   Config{Default: "{{.Bot.Nmae | upper}}"},
			field: "default", line: 1,
			msg: "unknown field .Bot.Nmae (did you mean .Bot.Name?)",
		},
		{
			name:  "in a defined template",
			cfg:   Config{Default: "{{define \"who\"}}{{.Nmae}}{{end}}Hi {{template \"who\" .User}}"},
			field: "default", line: 1,
			msg: `unknown field .Nmae (here . is the data given to template "who"; did you mean .Name?)`,
		},
		{
			name:  "undefined template",
			cfg:   Config{Default: "{{template \"footer\" .}}"},
			field: "default", line: 1,
			msg: `no template named "footer" is defined`,
		},
		{
			name:  "method that needs an argument",
			cfg:   Config{Default: "{{range .History}}{{.Time.Format}}{{end}}"},
			field: "default", line: 1,
			msg: ".Time.Format takes 1 argument, got 0",
		},
		{
			name:  "field given arguments",
			cfg:   Config{Default: "{{.User.Name \"x\"}}"},
			field: "default", line: 1,
			msg: ".User.Name is a field, not a method: it takes no arguments",
		},
		{
			name:  "range over a string",
			cfg:   Config{Default: "{{range .Text}}x{{end}}"},
			field: "default", line: 1,
			msg: "{{range .Text}}: .Text is a string, which range cannot go through",
		},
		{
			name:  "helper given the wrong type",
			cfg:   Config{Default: "{{join .Text \", \"}}"},
			field: "default", line: 1,
			msg: "fails on a sample message: at <.Text>: wrong type for value; expected []string; got string",
		},
		{
			name:  "group the pattern does not have",
			cfg:   Config{Rules: []Rule{{Match: `^build (\w+)`, Reply: "Building {{index .Match 2}}"}}},
			field: "rules[0].reply", line: 1,
			msg: "fails on a sample message: at <index .Match 2>: error calling index: reflect: slice index out of range (.Match holds 2 strings here",
		},
		{
			name:  "the default reply has no match",
			cfg:   Config{Default: "You said {{index .Match 0}}"},
			field: "default", line: 1,
			msg: "(.Match holds no strings here",
		},
		{
			name:  "artifact content",
			cfg:   Config{Rules: []Rule{{Match: "report", Artifacts: []ArtifactTemplate{{Name: "r.md", Content: "# {{.Delegation.Tsk}}"}}}}},
			field: "rules[0].artifacts[0].content", line: 1,
			msg: "unknown field .Delegation.Tsk (did you mean .Delegation.Task?)",
		},
		{
			name:  "artifact name template",
			cfg:   Config{Rules: []Rule{{Match: "report", Artifacts: []ArtifactTemplate{{Name: "{{.User.I}}.md", Content: "x"}}}}},
			field: "rules[0].artifacts[0].name", line: 1,
			msg: "unknown field .User.I (did you mean .User.ID?)",
		},
		{
			name:  "artifact media type template",
			cfg:   Config{Rules: []Rule{{Match: "report", Artifacts: []ArtifactTemplate{{Name: "r", MediaType: "{{.Bogus}}", Content: "x"}}}}},
			field: "rules[0].artifacts[0].media_type", line: 1,
			msg: "unknown field .Bogus",
		},
		{
			name:  "artifact name that is a path",
			cfg:   Config{Rules: []Rule{{Match: "report", Artifacts: []ArtifactTemplate{{Name: "../etc/passwd", Content: "x"}}}}},
			field: "rules[0].artifacts[0].name",
			msg:   `artifact name "../etc/passwd": not a plain file name (it contains "..")`,
		},
		{
			name:  "template that does not parse",
			cfg:   Config{Rules: []Rule{{Match: "x", Artifacts: []ArtifactTemplate{{Name: "a\n{{if}}", Content: "x"}}}}},
			field: "rules[0].artifacts[0].name", line: 2,
			msg: "invalid template: missing value for if",
		},
		{
			name:  "pattern that does not compile",
			cfg:   Config{Rules: []Rule{{Match: "(", Reply: "x"}}},
			field: "rules[0].match",
			msg:   "invalid regular expression: missing closing ): `(`",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(tt.cfg)
			if len(got) != 1 {
				t.Fatalf("Check found %d problems, want 1: %+v", len(got), got)
			}
			f := got[0]
			if f.Field != tt.field || f.Line != tt.line || !strings.Contains(f.Message, tt.msg) {
				t.Errorf("got %s line %d: %q\nwant %s line %d: %q", f.Field, f.Line, f.Message, tt.field, tt.line, tt.msg)
			}
		})
	}
}

// TestCheckPassesValidTemplates: templates that work on every turn, or
// on the turns they are meant for, give no finding.
func TestCheckPassesValidTemplates(t *testing.T) {
	for _, tmpl := range []string{
		"",
		"plain text",
		"Hi {{.User.Name}} ({{.User.ID}}), {{.Bot.Name}} ({{.Bot.ID}}) here on {{.Platform}}.",
		"{{if .Group}}in a group{{else}}private{{end}}: {{.Text}}",
		"{{range .History}}[{{.Kind}}] {{.From}}: {{.Text}} at {{.Time.Format \"15:04\"}}\n{{end}}",
		"{{range $i, $e := .History}}{{$i}}. {{$e.From}}{{end}}",
		"{{with .Delegation}}{{.From}} ({{.FromID}}) asks {{.Task}} at depth {{.Depth}}, id {{.ID}}{{range .Inputs}} {{.Name}} {{.MediaType}} {{.Content}} {{.ID}}{{end}}{{end}}",
		"{{if .Delegation}}{{.Delegation.Task}}{{end}}",
		// Meant for delegated turns only: fails on others by design.
		"Task from {{.Delegation.From}}: {{.Delegation.Task}}",
		"{{lower .Text}} {{upper .Bot.Name}} {{trim .Text}} {{len .History}}",
		"{{.Text | printf \"%q\" | upper}}",
		"{{$t := .Text}}{{range .History}}{{$t}} {{$.User.Name}}{{end}}",
		"{{define \"sig\"}}-- {{.Name}}{{end}}{{.Text}}\n{{template \"sig\" .Bot}}",
		"{{block \"greet\" .User}}Hello {{.Name}}{{end}}",
		"{{range .History}}{{if eq .Kind \"bot\"}}{{break}}{{end}}{{.Text}}{{end}}",
		"{{range 3}}.{{end}}",
		"{{(index .History 0).From}}",
		"{{.History}} {{.Match}} {{.Delegation}}",
		"{{if and .Group (gt (len .History) 0)}}x{{end}}",
	} {
		cfg := Config{Rules: []Rule{{Match: `(\w+) (\w+)`, Reply: tmpl,
			Artifacts: []ArtifactTemplate{{Name: "out.txt", Content: tmpl + "{{join .Match \",\"}} {{index .Match 2}}"}}}}}
		if got := Check(cfg); len(got) > 0 {
			t.Errorf("%q: %+v", tmpl, got)
		}
	}
}

// The field check works on the template data itself: what it calls a
// misspelt field fails a real turn the same way.
func TestCheckAgreesWithReply(t *testing.T) {
	for _, tmpl := range []string{"{{.User.Nmae}}", "{{.Txt}}", "{{.History.Text}}", "{{.Delegation.Tsak}}"} {
		cfg := Config{Default: tmpl}
		if len(Check(cfg)) == 0 {
			t.Errorf("%q: Check found nothing", tmpl)
		}
		if _, err := mustNew(t, cfg).Reply(context.Background(), delegated("x")); err == nil {
			t.Errorf("%q: Reply succeeded, Check disagrees", tmpl)
		}
	}
}

// A template whose run has no bound (recursion, a huge range) is checked
// without being run, quickly.
func TestCheckDoesNotRunUnboundedTemplates(t *testing.T) {
	for _, tmpl := range []string{
		`{{define "a"}}{{template "a" .}}{{end}}{{template "a" .}}`,
		`{{define "a"}}{{template "b" .}}{{template "b" .}}{{end}}{{define "b"}}{{template "c" .}}{{template "c" .}}{{end}}{{define "c"}}{{template "a" .}}{{end}}{{template "a" .}}`,
		`{{range 1000000000}}{{end}}`,
		`{{$n := 1000000000}}{{range $n}}{{end}}`,
		`{{range .Match}}{{range $.Match}}{{range $.Match}}{{range $.Match}}{{range $.Match}}{{end}}{{end}}{{end}}{{end}}{{end}}`,
	} {
		start := time.Now()
		if got := Check(Config{Rules: []Rule{{Match: "(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)(l)", Reply: tmpl}}}); len(got) > 0 {
			t.Errorf("%q: %+v", tmpl, got)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%q: Check took %v", tmpl, d)
		}
	}
}

// FuzzCheck: any template text is checked without panicking, quickly.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"{{.User.Nmae}}", "{{range .History}}{{.Txt}}{{end}}", "{{with .Delegation}}{{.Task}}{{end}}",
		"{{define \"x\"}}{{.Y}}{{end}}{{template \"x\" .}}", "{{index .Match 9}}", "{{join .Text}}",
		"{{$x := .}}{{$x.Bot.ID}}", "{{(.User).Name}}", "{{range $k, $v := .Match}}{{$k}}{{end}}",
		"{{.Delegation.Inputs}}", "{{range .Delegation.Inputs}}{{.Content}}{{end}}", "{{if}}",
	} {
		f.Add(s, `(\w+)`)
	}
	f.Fuzz(func(t *testing.T, tmpl, match string) {
		start := time.Now()
		for _, fd := range Check(Config{Rules: []Rule{{Match: match, Reply: tmpl}}, Default: tmpl}) {
			if fd.Field == "" || fd.Message == "" || fd.Line < 0 {
				t.Fatalf("bad finding %+v", fd)
			}
		}
		// A hang detector, not a speed target: Check bounds the sample
		// runs it makes, and a loaded CI machine must not fail this.
		if d := time.Since(start); d > 30*time.Second {
			t.Fatalf("Check took %v", d)
		}
	})
}
