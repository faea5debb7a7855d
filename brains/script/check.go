package script

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	tparse "text/template/parse"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
)

// This file holds Check, which finds a rule set's mistakes before a
// turn does: what New refuses, and what Reply would fail on because of
// the templates themselves (a misspelt field, a helper given the wrong
// type). It works on the real template data (data in data.go), so it
// cannot drift from what Reply gives the templates.

// Finding is one problem Check found in a rule set.
type Finding struct {
	// Field is the path of the field in the brain's config, as in
	// FieldError: "rules[2].reply", "default",
	// "rules[0].artifacts[1].name".
	Field string
	// Line is the 1-based line within the field's text that the problem
	// is on, or 0 when it concerns the field as a whole.
	Line int
	// Message says what is wrong, without the field.
	Message string
}

// Check reports every problem of cfg that New would refuse or that would
// fail Reply whatever the message: a pattern that does not compile, a
// template that does not parse, a field the template data does not have
// (with the closest one it does have, by edit distance), a method called
// with the wrong number of arguments, a {{template}} that is not defined,
// a constant artifact name that is not a plain file name, and a template
// that fails when run on sample turns (one ordinary, one delegated, each
// with a message of history, a finding, an insight, a memory and a
// shared context of one item a list; .Match as long as the rule's
// pattern has groups). Field names are checked on every branch of every template,
// including those the samples do not take. Reaching into .Delegation
// unguarded is not a problem here: a rule may be meant for delegated
// turns only. The templates of actions' arguments are checked as replies
// are; which actions exist and what arguments they take is the action
// registry's to check, which this package does not know.
//
// Check never runs a template whose run it cannot bound (one that calls
// {{template}}, or ranges over a number or deeply over lists): those get
// the field checks only.
func Check(cfg Config) []Finding {
	var out []Finding
	for i, r := range cfg.Rules {
		field := fmt.Sprintf("rules[%d]", i)
		matchLen := -1 // unknown: the pattern does not compile
		switch re, err := regexp.Compile(r.Match); {
		case r.Match == "":
			out = append(out, Finding{Field: field + ".match", Message: errEmptyMatch.Error()})
		case err != nil:
			out = append(out, Finding{Field: field + ".match", Message: "invalid regular expression: " +
				strings.TrimPrefix(err.Error(), "error parsing regexp: ")})
		default:
			matchLen = re.NumSubexp() + 1
		}
		out = append(out, checkTemplate(field+".reply", r.Reply, matchLen)...)
		for j, a := range r.Artifacts {
			af := fmt.Sprintf("%s.artifacts[%d]", field, j)
			out = append(out, checkTemplate(af+".name", a.Name, matchLen)...)
			out = append(out, checkArtifactName(af+".name", a.Name)...)
			out = append(out, checkTemplate(af+".media_type", a.MediaType, matchLen)...)
			out = append(out, checkTemplate(af+".content", a.Content, matchLen)...)
		}
		for j, a := range r.Actions {
			af := fmt.Sprintf("%s.actions[%d].%s", field, j, a.Name)
			names := make([]string, 0, len(a.Args))
			for name := range a.Args {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				out = append(out, checkTemplate(af+"."+name, a.Args[name], matchLen)...)
			}
		}
	}
	// The default reply runs with an empty .Match.
	return append(out, checkTemplate("default", cfg.Default, 0)...)
}

// checkTemplate checks one template of the config. matchLen is the
// length of .Match when the template runs (the rule's pattern's groups
// plus one; 0 for the default reply), or -1 when unknown, which skips
// the sample runs.
func checkTemplate(field, text string, matchLen int) []Finding {
	tmpl, err := parse(field, text)
	if err != nil {
		line, msg := parseErrorLine(err)
		return []Finding{{Field: field, Line: line, Message: "invalid template: " + msg}}
	}
	// Every list of the sample data has one element, but .Match.
	tc := newTypeChecker(tmpl, text, max(matchLen, 1))
	tc.walkTemplate(tmpl.Name(), rootScope())
	if len(tc.findings) > 0 || tc.unbounded || matchLen < 0 {
		for i := range tc.findings {
			tc.findings[i].Field = field
		}
		return tc.findings
	}
	var match []string // as pick gives it: nil for the default reply
	for range matchLen {
		match = append(match, "sample")
	}
	for _, t := range sampleTurns() {
		err := tmpl.Execute(&limitWriter{n: maxSampleOutput}, newData(t, match))
		switch {
		case err == nil, errors.Is(err, errSampleTooLong):
		case t.Delegation == nil && errors.Is(err, errNotDelegated):
			// A rule may be meant for delegated turns only.
		case t.Help == nil && errors.Is(err, errNotHelp):
			// Or for help requests and their answers.
		case t.Crossbot == nil && errors.Is(err, errNotCrossbot):
			// Or for bot-to-bot chain steps.
		default:
			line, msg := execErrorLine(err)
			if strings.Contains(msg, "out of range") && strings.Contains(text, ".Match") {
				msg += fmt.Sprintf(" (.Match holds %s here: the whole match, then one per group of the pattern)", plural(len(match), "string"))
			}
			return []Finding{{Field: field, Line: line, Message: "fails on a sample message: " + msg}}
		}
	}
	return nil
}

// checkArtifactName reports an artifact name with no template actions
// that is not a plain file name. A name computed by a template can only
// be judged when a turn produces it.
func checkArtifactName(field, text string) []Finding {
	name := strings.TrimSpace(text)
	if name == "" || strings.Contains(text, "{{") {
		return nil // empty is the config's "required"; actions: see above
	}
	if err := brains.CheckArtifactName(name); err != nil {
		return []Finding{{Field: field, Message: err.Error()}}
	}
	return nil
}

// sampleTurns are the turns every template is run on: an ordinary one in
// a private chat, a delegated one in a group, the follow-up of an
// answered help request and a bot-to-bot chain's closing step in a
// group, each with one message of history.
func sampleTurns() []brains.Turn {
	at := time.Date(2025, 1, 2, 15, 4, 5, 0, time.UTC)
	plain := brains.Turn{
		SessionID: "sample-session",
		Bot:       brains.Bot{ID: "sample-bot", Name: "Sample Bot"},
		User:      brains.User{ID: "user-sample", Name: "Sam"},
		Platform:  "web",
		Text:      "sample message",
		History:   []brains.Entry{{Kind: "human", From: "Sam", Text: "an earlier message", Time: at}},
		Findings:  []brains.Finding{{Bot: "Other Bot", BotID: "other-bot", Severity: "high", Text: "a finding", Stage: "sample"}},
		Insights:  []brains.Insight{{Bot: "Other Bot", BotID: "other-bot", Kind: "epiphany", Text: "an insight", Confidence: 0.9}},
		Memories:  []brains.Memory{{From: "Other Bot", Text: "Sam: a memory"}},
		Shared: &brains.SharedContext{
			Events:   []brains.ContextEvent{{Bot: "Other Bot", BotID: "other-bot", Text: "an event", Time: at}},
			Entities: []brains.ContextEntity{{Name: "sample-entity", Attributes: `{"key":"value"}`}},
			Facts:    []brains.ContextFact{{Subject: "Sample", Predicate: "is", Object: "a fact", Confidence: 0.9, Bot: "Other Bot", BotID: "other-bot"}},
			Chain: []brains.ChainStep{{
				Step: 1, Producer: "Other Bot", ProducerID: "other-bot", Task: "sample task", Status: "done",
				Inputs:  []brains.Artifact{{ID: "sample-input", Name: "notes.txt"}},
				Outputs: []brains.Artifact{{ID: "sample-output", Name: "result.json"}},
			}},
		},
	}
	delegated := plain
	delegated.Group = true
	delegated.Platform = "telegram"
	delegated.Delegation = &brains.Delegation{
		ID: "sample-delegation", From: "Other Bot", FromID: "other-bot", Task: "sample message", Depth: 1,
		Inputs: []brains.Artifact{{ID: "sample-artifact", Name: "notes.txt", MediaType: "text/plain", Content: []byte("notes")}},
	}
	answered := plain
	answered.Text = "sample answer"
	answered.Help = &brains.Help{ID: "sample-help", From: "Other Bot", FromID: "other-bot", Question: "sample question", Answer: "sample answer"}
	step := plain
	step.Group = true
	step.Platform = "discord"
	step.Crossbot = &brains.Crossbot{Length: 1, Closing: true, From: "Other Bot", FromID: "other-bot"}
	return []brains.Turn{plain, delegated, answered, step}
}

// maxSampleOutput bounds what a sample run may write; a template that
// writes more is not judged by its run.
const maxSampleOutput = 1 << 20

// errSampleTooLong stops a sample run that writes more than
// maxSampleOutput.
var errSampleTooLong = errors.New("sample output too long")

// limitWriter discards what it is given, failing once more than n bytes
// have come.
type limitWriter struct{ n int }

// Write counts p against the limit.
func (w *limitWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errSampleTooLong
	}
	return len(p), nil
}

// parseErrorRE and execErrorRE pick the line, and for an execution error
// the action, out of text/template's messages:
// "template: reply:3: function "x" not defined" and
// "template: reply:1:9: executing "reply" at <join .Text ",">: wrong type …".
var (
	parseErrorRE = regexp.MustCompile(`^template: [^:]*:(\d+): `)
	execErrorRE  = regexp.MustCompile(`(?s)^template: [^:]*:(\d+):\d+: executing "[^"]*" at <(.*?)>: (.*)$`)
)

// parseErrorLine splits a parse error into its line and message.
func parseErrorLine(err error) (int, string) {
	var fe *FieldError
	if errors.As(err, &fe) {
		err = fe.Err
	}
	msg := err.Error()
	if m := parseErrorRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, msg[len(m[0]):]
	}
	return 0, strings.TrimPrefix(msg, "template: ")
}

// execErrorLine splits an execution error into its line and a message
// naming the action that failed.
func execErrorLine(err error) (int, string) {
	msg := err.Error()
	if m := execErrorRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, fmt.Sprintf("at <%s>: %s", m[2], m[3])
	}
	return 0, strings.TrimPrefix(msg, "template: ")
}

// lineOf returns the 1-based line of byte offset pos in text.
func lineOf(text string, pos tparse.Pos) int {
	p := min(max(int(pos), 0), len(text))
	return 1 + strings.Count(text[:p], "\n")
}
