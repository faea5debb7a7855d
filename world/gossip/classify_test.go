package gossip

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/brains/script"
)

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		answer         string
		topic, summary string
		none           bool
		garbage        string // part of the error
	}{
		{answer: "none", none: true},
		{answer: "  None.\n", none: true},
		{answer: `"none"`, none: true},
		{answer: `{"topic": "career", "summary": "I got a new job at a tech company"}`, topic: "career", summary: "I got a new job at a tech company"},
		{answer: "```json\n{\"topic\": \"Pets\", \"summary\": \"We adopted\\na puppy!\", \"confidence\": 0.9}\n```", topic: "pets", summary: "We adopted a puppy!"},
		{answer: `{"topic": "none", "summary": ""}`, none: true},
		{answer: "Sure! Here it is: {\"topic\": \"career\"}", garbage: "does not start with '{'"},
		{answer: `{"topic": "career", "summary": "x"} trailing`, garbage: "more follows"},
		{answer: `{"topic": "career"}`, garbage: `no "summary"`},
		{answer: `{"topic": 3, "summary": "x"}`, garbage: `"topic" is not a string`},
		{answer: `{"topic": "", "summary": "x"}`, garbage: `"topic" is empty`},
		{answer: `{"topic": "career", "summary": "   "}`, garbage: `"summary" is empty`},
		{answer: `{"topic": "` + strings.Repeat("x", MaxTopic+1) + `", "summary": "x"}`, garbage: "topic: longer than"},
		{answer: `{"topic": "car\u0007eer", "summary": "x"}`, garbage: "control character"},
		{answer: `{"topic": "career", "summary": "x"`, garbage: "not one JSON object"},
		{answer: `[{"topic": "career"}]`, garbage: "does not start"},
		{answer: "", garbage: "does not start"},
		{answer: "nonesuch", garbage: "does not start"},
	} {
		got, err := ParseAnswer(tc.answer)
		switch {
		case tc.garbage != "":
			if !errors.Is(err, ErrGarbage) || !strings.Contains(err.Error(), tc.garbage) {
				t.Errorf("ParseAnswer(%q) = %+v, %v; want garbage (%s)", tc.answer, got, err, tc.garbage)
			}
		case err != nil || got.None != tc.none || got.Topic != tc.topic || got.Summary != tc.summary:
			t.Errorf("ParseAnswer(%q) = %+v, %v; want topic %q, summary %q, none %v", tc.answer, got, err, tc.topic, tc.summary, tc.none)
		}
	}
	long, err := ParseAnswer(`{"topic": "career", "summary": "` + strings.Repeat("é", 300) + `"}`)
	if err != nil || utf8.RuneCountInString(long.Summary) != MaxSummary {
		t.Errorf("a long summary: %d characters, %v", utf8.RuneCountInString(long.Summary), err)
	}
	if _, err := ParseAnswer(strings.Repeat(" ", maxAnswer+1)); !errors.Is(err, ErrGarbage) {
		t.Errorf("an answer over %d bytes: %v", maxAnswer, err)
	}
}

// The error never quotes the answer: it is logged, and the answer may
// repeat the person's message.
func TestParseAnswerQuotesNothing(t *testing.T) {
	secret := "my-private-words"
	for _, a := range []string{secret, `{"topic": "` + secret + strings.Repeat("x", 70) + `", "summary": "x"}`, `{"summary": "` + secret + `"}`} {
		if _, err := ParseAnswer(a); err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("ParseAnswer(%q) error %v quotes the answer", a, err)
		}
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{"none", `{"topic": "career", "summary": "I got a new job"}`, "```\n{}\n```", `{"topic": null}`, "{", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		c, err := ParseAnswer(answer)
		switch {
		case err != nil:
			if !errors.Is(err, ErrGarbage) {
				t.Errorf("error %v does not wrap ErrGarbage", err)
			}
		case c.None:
			if c.Topic != "" || c.Summary != "" {
				t.Errorf("none with %+v", c)
			}
		default:
			if CheckTopic(c.Topic) != nil || c.Summary == "" || utf8.RuneCountInString(c.Summary) > MaxSummary || !utf8.ValidString(c.Summary) {
				t.Errorf("accepted %+v", c)
			}
		}
	})
}

// The script classifier of docs/insights-and-gossip.md answers what
// ParseAnswer reads, whatever quotes the message holds.
func TestDocumentedScriptClassifier(t *testing.T) {
	b, err := script.New(script.Config{Rules: []script.Rule{{
		Match: `(?i)\b(adopted|new) (a )?(puppy|kitten|dog|cat)\b`,
		Reply: `{"topic": "pets", "summary": {{printf "%q" .Text}}}`,
	}}, Default: "none"})
	if err != nil {
		t.Fatal(err)
	}
	bot := brains.Bot{ID: "judge", Name: "Judge"}
	user := brains.User{ID: "bryan", Name: "Bryan"}
	c, err := Classify(context.Background(), b, bot, user, "Elena", "web", `We adopted a puppy — "Miso"!`)
	if err != nil || c.Topic != "pets" || c.Summary != `We adopted a puppy — "Miso"!` {
		t.Errorf("a pet = %+v, %v", c, err)
	}
	if c, err := Classify(context.Background(), b, bot, user, "Elena", "web", "nice weather"); err != nil || !c.None {
		t.Errorf("the weather = %+v, %v", c, err)
	}
}
