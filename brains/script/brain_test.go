package script

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
)

// turn is an ordinary turn in a private chat with two messages of history.
func turn(text string) brains.Turn {
	return brains.Turn{
		SessionID: "s1",
		Bot:       brains.Bot{ID: "mattyatlas", Name: "Matty Atlas", Persona: "architect"},
		User:      brains.User{ID: "u42", Name: "Ada"},
		Platform:  "telegram",
		Text:      text,
		History: []brains.Entry{
			{Kind: "human", From: "Ada", Text: "hi", Time: time.Unix(1, 0)},
			{Kind: "bot", From: "Matty Atlas", Text: "hello Ada", Time: time.Unix(2, 0)},
		},
	}
}

// delegated is a turn handed over by another bot with one input artifact.
func delegated(task string) brains.Turn {
	t := turn(task)
	t.Delegation = &brains.Delegation{
		ID: "d7", From: "Finn Shipley", FromID: "finnshipley", Task: task, Depth: 2,
		Inputs: []brains.Artifact{{ID: "a1", Name: "notes.md", MediaType: "text/markdown", Content: []byte("# notes")}},
	}
	return t
}

// helped is the helper's turn on a help request, or with answer the
// asking bot's follow-up to it.
func helped(question, answer string) brains.Turn {
	t := turn(question)
	t.Help = &brains.Help{ID: "d9", From: "Finn Shipley", FromID: "finnshipley", Question: question, Answer: answer}
	if answer != "" {
		t.Text = answer
	}
	return t
}

// chained is a step of a bot-to-bot chain in a group: Finn's message
// answered by Matty.
func chained(text string, length int, closing bool) brains.Turn {
	t := turn(text)
	t.Group = true
	t.Crossbot = &brains.Crossbot{Length: length, Closing: closing, From: "Finn Shipley", FromID: "finnshipley"}
	return t
}

// mustNew builds a brain or fails the test.
func mustNew(t *testing.T, cfg Config) *Brain {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

func TestTemplateFields(t *testing.T) {
	group := turn("x")
	group.Group = true
	tests := []struct {
		name  string
		tmpl  string
		turn  brains.Turn
		want  string
		match string // the rule's pattern; "" uses the default reply
	}{
		{name: "text", tmpl: "{{.Text}}", turn: turn("what now"), want: "what now"},
		{name: "user id", tmpl: "{{.User.ID}}", turn: turn("x"), want: "u42"},
		{name: "user name", tmpl: "{{.User.Name}}", turn: turn("x"), want: "Ada"},
		{name: "bot id", tmpl: "{{.Bot.ID}}", turn: turn("x"), want: "mattyatlas"},
		{name: "bot name", tmpl: "{{.Bot.Name}}", turn: turn("x"), want: "Matty Atlas"},
		{name: "platform", tmpl: "{{.Platform}}", turn: turn("x"), want: "telegram"},
		{name: "group false", tmpl: "{{if .Group}}group{{else}}private{{end}}", turn: turn("x"), want: "private"},
		{name: "group true", tmpl: "{{if .Group}}group{{else}}private{{end}}", turn: group, want: "group"},
		{name: "history len", tmpl: "{{len .History}}", turn: turn("x"), want: "2"},
		{name: "history entry", tmpl: "{{with index .History 1}}{{.Kind}} {{.From}}: {{.Text}}{{end}}", turn: turn("x"), want: "bot Matty Atlas: hello Ada"},
		{name: "history time", tmpl: "{{(index .History 0).Time.Unix}}", turn: turn("x"), want: "1"},
		{name: "no delegation", tmpl: "{{if .Delegation}}yes{{else}}no{{end}}", turn: turn("x"), want: "no"},
		{name: "delegated text is task", tmpl: "{{.Text}}", turn: delegated("draft a plan"), want: "draft a plan"},
		{name: "delegation set", tmpl: "{{if .Delegation}}yes{{else}}no{{end}}", turn: delegated("t"), want: "yes"},
		{name: "delegation id", tmpl: "{{.Delegation.ID}}", turn: delegated("t"), want: "d7"},
		{name: "delegation from", tmpl: "{{.Delegation.From}}", turn: delegated("t"), want: "Finn Shipley"},
		{name: "delegation from id", tmpl: "{{.Delegation.FromID}}", turn: delegated("t"), want: "finnshipley"},
		{name: "delegation task", tmpl: "{{.Delegation.Task}}", turn: delegated("draft a plan"), want: "draft a plan"},
		{name: "delegation depth", tmpl: "{{.Delegation.Depth}}", turn: delegated("t"), want: "2"},
		{name: "delegation with", tmpl: "{{with .Delegation}}{{.From}} asks: {{.Task}}{{end}}", turn: delegated("t"), want: "Finn Shipley asks: t"},
		{name: "delegation inputs", tmpl: "{{range .Delegation.Inputs}}{{.ID}} {{.Name}} {{.MediaType}} {{.Content}}{{end}}", turn: delegated("t"), want: "a1 notes.md text/markdown # notes"},
		{name: "no help", tmpl: "{{if .Help}}yes{{else}}no{{end}}", turn: turn("x"), want: "no"},
		{name: "help question", tmpl: "{{.Help.From}} ({{.Help.FromID}}) asks: {{.Help.Question}}{{if not .Help.Answer}} (open){{end}}", turn: helped("auth?", ""), want: "Finn Shipley (finnshipley) asks: auth? (open)"},
		{name: "help answered", tmpl: "{{with .Help}}{{.From}} answered {{.Question}} with {{.Answer}}{{end}}; text {{.Text}}", turn: helped("auth?", "JWT"), want: "Finn Shipley answered auth? with JWT; text JWT"},
		{name: "no chain", tmpl: "{{if .Crossbot}}yes{{else}}no{{end}}", turn: turn("x"), want: "no"},
		{name: "chain step", tmpl: "{{with .Crossbot}}step {{.Length}}{{if .Closing}}, closing{{end}}{{end}}: {{.Text}}", turn: chained("ship it?", 2, false), want: "step 2: ship it?"},
		{name: "chain closing", tmpl: "{{if .Crossbot.Closing}}bye{{else}}more{{end}} after {{.Crossbot.Length}}", turn: chained("x", 3, true), want: "bye after 3"},
		{name: "match whole", tmpl: "[{{index .Match 0}}]", turn: turn("say hello there"), match: "hel+o", want: "[hello]"},
		{name: "match default empty", tmpl: "{{len .Match}}", turn: turn("x"), want: "0"},
		{name: "lower", tmpl: "{{lower .User.Name}}", turn: turn("x"), want: "ada"},
		{name: "upper", tmpl: "{{.Bot.Name | upper}}", turn: turn("x"), want: "MATTY ATLAS"},
		{name: "trim", tmpl: "<{{trim .Text}}>", turn: turn("  padded  "), want: "<padded>"},
		{name: "join", tmpl: `{{join .Match ","}}`, turn: turn("ab"), match: "(a)(b)", want: "ab,a,b"},
		{name: "reply trimmed", tmpl: "\n  {{.Text}}\n\n", turn: turn("hi"), want: "hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Default: tt.tmpl}
			if tt.match != "" {
				cfg = Config{Rules: []Rule{{Match: tt.match, Reply: tt.tmpl}}}
			}
			got, err := mustNew(t, cfg).Reply(context.Background(), tt.turn)
			if err != nil {
				t.Fatalf("Reply: %v", err)
			}
			if got.Text != tt.want {
				t.Errorf("Text = %q, want %q", got.Text, tt.want)
			}
		})
	}
}

func TestRuleOrder(t *testing.T) {
	b := mustNew(t, Config{
		Rules: []Rule{
			{Match: `(?i)^hello`, Reply: "greeting"},
			{Match: `hello`, Reply: "later hello"},
			{Match: `\?$`, Reply: "question"},
		},
		Default: "{{.Bot.Name}} heard: {{.Text}}",
	})
	tests := []struct{ text, want string }{
		{"Hello there", "greeting"},    // first rule wins though the second matches too
		{"hello?", "greeting"},         // and though the third does
		{"well, hello", "later hello"}, // unanchored search
		{"why?", "question"},
		{"nothing matches", "Matty Atlas heard: nothing matches"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, err := b.Reply(context.Background(), turn(tt.text))
			if err != nil {
				t.Fatalf("Reply: %v", err)
			}
			if got.Text != tt.want {
				t.Errorf("Text = %q, want %q", got.Text, tt.want)
			}
		})
	}
}

func TestSubmatches(t *testing.T) {
	b := mustNew(t, Config{Rules: []Rule{
		{Match: `^tell (\w+) to (.+)$`, Reply: "@{{index .Match 1}}: please {{index .Match 2}} ({{len .Match}})"},
		{Match: `^(a)|(b)$`, Reply: "[{{index .Match 1}}][{{index .Match 2}}]"},
	}})
	tests := []struct{ name, text, want string }{
		{"groups", "tell finn to ship it", "@finn: please ship it (3)"},
		{"unmatched group is empty", "b", "[][b]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := b.Reply(context.Background(), turn(tt.text))
			if err != nil {
				t.Fatalf("Reply: %v", err)
			}
			if got.Text != tt.want {
				t.Errorf("Text = %q, want %q", got.Text, tt.want)
			}
		})
	}
}

func TestHistory(t *testing.T) {
	b := mustNew(t, Config{Default: "{{range $i, $e := .History}}{{$i}}. {{$e.From}}: {{$e.Text}}\n{{else}}no history{{end}}"})
	tests := []struct {
		name    string
		history []brains.Entry
		want    string
	}{
		{"two", turn("x").History, "0. Ada: hi\n1. Matty Atlas: hello Ada"},
		{"none", nil, "no history"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tn := turn("x")
			tn.History = tt.history
			got, err := b.Reply(context.Background(), tn)
			if err != nil {
				t.Fatalf("Reply: %v", err)
			}
			if got.Text != tt.want {
				t.Errorf("Text = %q, want %q", got.Text, tt.want)
			}
		})
	}
}

func TestDelegation(t *testing.T) {
	tests := []struct {
		name    string
		tmpl    string
		turn    brains.Turn
		want    string
		wantErr error
	}{
		{name: "guarded ordinary turn", tmpl: "{{with .Delegation}}task {{.Task}}{{else}}chat {{.Text}}{{end}}", turn: turn("hi"), want: "chat hi"},
		{name: "guarded delegated turn", tmpl: "{{with .Delegation}}task {{.Task}} depth {{.Depth}}{{else}}chat{{end}}", turn: delegated("plan"), want: "task plan depth 2"},
		{name: "task from delegation when text empty", tmpl: "{{.Text}}", turn: func() brains.Turn { t := delegated("plan"); t.Text = ""; return t }(), want: "plan"},
		{name: "unguarded task", tmpl: "{{.Delegation.Task}}", turn: turn("hi"), wantErr: errNotDelegated},
		{name: "unguarded inputs", tmpl: "{{range .Delegation.Inputs}}{{.Name}}{{end}}", turn: turn("hi"), wantErr: errNotDelegated},
		{name: "unguarded depth", tmpl: "{{.Delegation.Depth}}", turn: turn("hi"), wantErr: errNotDelegated},
		{name: "unguarded help", tmpl: "{{.Help.Answer}}", turn: turn("hi"), wantErr: errNotHelp},
		{name: "unguarded chain", tmpl: "{{.Crossbot.Closing}}", turn: turn("hi"), wantErr: errNotCrossbot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustNew(t, Config{Default: tt.tmpl}).Reply(context.Background(), tt.turn)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Reply error = %v, want %v", err, tt.wantErr)
			}
			if got.Text != tt.want {
				t.Errorf("Text = %q, want %q", got.Text, tt.want)
			}
		})
	}
}

func TestArtifacts(t *testing.T) {
	b := mustNew(t, Config{Rules: []Rule{
		{
			Match: `^research (\w+)`,
			Reply: "Found competitors of {{index .Match 1}}.",
			Artifacts: []ArtifactTemplate{
				{Name: "{{index .Match 1}}.json", MediaType: "application/json", Content: `{"for":"{{.User.Name}}","topic":"{{index .Match 1}}"}`},
				{Name: " notes-{{.Bot.ID}}.txt\n", Content: "  kept as is\n"},
			},
		},
		{Match: `^silent`, Artifacts: []ArtifactTemplate{{Name: "only.txt", MediaType: "{{if .Group}}x/y{{else}}text/csv{{end}}", Content: "a,b"}}},
	}})
	tests := []struct {
		name     string
		text     string
		wantText string
		want     []brains.Artifact
	}{
		{
			name:     "templated fields",
			text:     "research acme",
			wantText: "Found competitors of acme.",
			want: []brains.Artifact{
				{Name: "acme.json", MediaType: "application/json", Content: []byte(`{"for":"Ada","topic":"acme"}`)},
				{Name: "notes-mattyatlas.txt", MediaType: DefaultMediaType, Content: []byte("  kept as is\n")},
			},
		},
		{
			name: "artifacts without text",
			text: "silent",
			want: []brains.Artifact{{Name: "only.txt", MediaType: "text/csv", Content: []byte("a,b")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := b.Reply(context.Background(), turn(tt.text))
			if err != nil {
				t.Fatalf("Reply: %v", err)
			}
			if got.Text != tt.wantText {
				t.Errorf("Text = %q, want %q", got.Text, tt.wantText)
			}
			if len(got.Artifacts) != len(tt.want) {
				t.Fatalf("got %d artifacts, want %d", len(got.Artifacts), len(tt.want))
			}
			for i, a := range got.Artifacts {
				w := tt.want[i]
				if a.Name != w.Name || a.MediaType != w.MediaType || string(a.Content) != string(w.Content) || a.ID != "" {
					t.Errorf("artifact %d = %+v (content %q), want %+v (content %q)", i, a, a.Content, w, w.Content)
				}
			}
		})
	}
}

func TestReplyErrors(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		cfg       Config
		ctx       context.Context
		text      string
		wantErr   error
		wantField string // when set, the error is a *FieldError for this field
	}{
		{name: "empty default", cfg: Config{}, text: "x", wantErr: brains.ErrEmptyReply},
		{name: "blank reply", cfg: Config{Rules: []Rule{{Match: "x", Reply: " {{/* nothing */}}\n\t"}}}, text: "x", wantErr: brains.ErrEmptyReply},
		{name: "blank default", cfg: Config{Default: "{{if .Group}}group{{end}}"}, text: "x", wantErr: brains.ErrEmptyReply},
		{name: "canceled", cfg: Config{Default: "hi"}, ctx: canceled, text: "x", wantErr: context.Canceled},
		{name: "unknown field in rule", cfg: Config{Rules: []Rule{{Match: "a", Reply: "ok"}, {Match: "x", Reply: "{{.Usr.Name}}"}}}, text: "x", wantField: "rules[1].reply"},
		{name: "unknown field in default", cfg: Config{Default: "{{.Nope}}"}, text: "x", wantField: "default"},
		{name: "index out of range", cfg: Config{Rules: []Rule{{Match: "x", Reply: "{{index .Match 3}}"}}}, text: "x", wantField: "rules[0].reply"},
		{name: "nil delegation", cfg: Config{Rules: []Rule{{Match: "x", Reply: "{{.Delegation.From}}"}}}, text: "x", wantErr: errNotDelegated, wantField: "rules[0].reply"},
		{name: "artifact name empty", cfg: Config{Rules: []Rule{{Match: "x", Reply: "r", Artifacts: []ArtifactTemplate{{Name: " ", Content: "c"}}}}}, text: "x", wantErr: errEmptyName, wantField: "rules[0].artifacts[0].name"},
		{name: "artifact content fails", cfg: Config{Rules: []Rule{{Match: "x", Artifacts: []ArtifactTemplate{{Name: "a"}, {Name: "b", Content: "{{join .Text}}"}}}}}, text: "x", wantField: "rules[0].artifacts[1].content"},
		{name: "artifact media type fails", cfg: Config{Rules: []Rule{{Match: "x", Artifacts: []ArtifactTemplate{{Name: "a", MediaType: "{{.X}}"}}}}}, text: "x", wantField: "rules[0].artifacts[0].media_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			got, err := mustNew(t, tt.cfg).Reply(ctx, turn(tt.text))
			if err == nil {
				t.Fatalf("Reply = %+v, want an error", got)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
			var fe *FieldError
			if tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField) {
				t.Errorf("error = %v, want a FieldError for %s", err, tt.wantField)
			}
		})
	}
}

// endingCtx is a context that ends after its Err has been asked a given
// number of times, to end a turn in the middle of a template.
type endingCtx struct {
	context.Context
	mu   sync.Mutex
	left int
}

func (c *endingCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left <= 0 {
		return context.DeadlineExceeded
	}
	c.left--
	return nil
}

func TestReplyStopsMidTemplate(t *testing.T) {
	// Recursion writes on every level, so the template notices the end of
	// ctx long before text/template's depth limit.
	b := mustNew(t, Config{Default: `{{define "a"}}x{{template "a" .}}{{end}}{{template "a" .}}`})
	ctx := &endingCtx{Context: context.Background(), left: 5}
	_, err := b.Reply(ctx, turn("x"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Reply error = %v, want context.DeadlineExceeded", err)
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		t.Errorf("Reply error = %v, want the bare context error", err)
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantField string
	}{
		{"bad regexp", Config{Rules: []Rule{{Match: "ok", Reply: "r"}, {Match: "(unclosed", Reply: "r"}}}, "rules[1].match"},
		{"empty match", Config{Rules: []Rule{{Reply: "r"}}}, "rules[0].match"},
		{"bad reply", Config{Rules: []Rule{{Match: "a", Reply: "r"}, {Match: "b", Reply: "r"}, {Match: "c", Reply: "{{.Text"}}}, "rules[2].reply"},
		{"unknown func", Config{Rules: []Rule{{Match: "a", Reply: "{{shout .Text}}"}}}, "rules[0].reply"},
		{"bad artifact name", Config{Rules: []Rule{{Match: "a", Artifacts: []ArtifactTemplate{{Name: "{{end}}"}}}}}, "rules[0].artifacts[0].name"},
		{"bad artifact media type", Config{Rules: []Rule{{Match: "a", Artifacts: []ArtifactTemplate{{Name: "n"}, {Name: "n", MediaType: "{{if}}"}}}}}, "rules[0].artifacts[1].media_type"},
		{"bad artifact content", Config{Rules: []Rule{{Match: "a", Artifacts: []ArtifactTemplate{{Name: "n", Content: "{{range}}"}}}}}, "rules[0].artifacts[0].content"},
		{"bad default", Config{Default: "{{"}, "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(tt.cfg)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("New = %v, %v; want a *FieldError", b, err)
			}
			if fe.Field != tt.wantField {
				t.Errorf("Field = %q, want %q (error %v)", fe.Field, tt.wantField, err)
			}
			if want := "script: " + tt.wantField + ": "; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
				t.Errorf("error %q does not start with %q", err, want)
			}
		})
	}
}

func TestConcurrentReplies(t *testing.T) {
	b := mustNew(t, Config{
		Rules: []Rule{{
			Match:     `^n(\d+)$`,
			Reply:     "{{index .Match 1}} for {{.User.Name}}",
			Artifacts: []ArtifactTemplate{{Name: "{{index .Match 1}}.txt", Content: "{{.Text}}"}},
		}},
		Default: "{{.Text}}",
	})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			text := fmt.Sprintf("n%d", i)
			if i%2 == 1 {
				text = fmt.Sprintf("other %d", i)
			}
			want := fmt.Sprintf("%d for Ada", i)
			if i%2 == 1 {
				want = text
			}
			got, err := b.Reply(context.Background(), delegatedIf(i%3 == 0, text))
			switch {
			case err != nil:
				errs <- err
			case got.Text != want:
				errs <- fmt.Errorf("turn %d: Text = %q, want %q", i, got.Text, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// delegatedIf returns a delegated turn or an ordinary one for text.
func delegatedIf(d bool, text string) brains.Turn {
	if d {
		return delegated(text)
	}
	return turn(text)
}

func FuzzReply(f *testing.F) {
	f.Add(`(?i)^hello`, `Hi {{.User.Name}}, {{.Bot.Name}} here.`, "hello there", "{{.Text}}")
	f.Add(`(\w+) (\w+)`, `{{index .Match 2}} {{join .Match "|"}}`, "a b", "")
	f.Add(`.*`, `{{.Delegation.Task}}`, "x", "{{with .Delegation}}{{.From}}{{end}}")
	f.Add(`x`, `{{range .History}}{{.From}}{{end}}{{index .Match 9}}`, "x", "{{upper (lower .Text)}}")
	f.Fuzz(func(t *testing.T, match, reply, text, def string) {
		b, err := New(Config{
			Rules:   []Rule{{Match: match, Reply: reply, Artifacts: []ArtifactTemplate{{Name: "f.txt", Content: reply}}}},
			Default: def,
		})
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("New error %v is not a *FieldError", err)
			}
			return // an invalid rule is New's to refuse, checked above
		}
		for _, tn := range []brains.Turn{turn(text), delegated(text), {Text: text}} {
			got, err := b.Reply(context.Background(), tn)
			if err == nil && got.Text == "" && len(got.Artifacts) == 0 {
				t.Fatalf("empty reply without ErrEmptyReply")
			}
		}
	})
}
