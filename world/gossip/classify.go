package gossip

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-chat/switchboard/brains"
)

// The classifier bot (shared.gossip.classifier) judges the messages no
// pattern matched. Its brain gets a turn nobody sees: the person's
// message as its text, the instructions below as a context block, no
// history, no actions and no session; its answer is parsed and never
// stored or shown.

// Classification is what a classifier answered: news of Topic, or None.
type Classification struct {
	None    bool
	Topic   string
	Summary string
}

// ErrGarbage is wrapped by ParseAnswer's errors: the answer is neither
// a JSON object with a topic and a summary nor "none".
var ErrGarbage = errors.New("the classifier's answer is neither {\"topic\": …, \"summary\": …} nor none")

// maxAnswer bounds the answer ParseAnswer reads, in bytes.
const maxAnswer = 64 << 10

// ParseAnswer reads a classifier's answer: "none" (any case, quoted or
// with a full stop), or one JSON object {"topic": …, "summary": …} with
// non-empty strings, perhaps in a Markdown code fence; other keys are
// ignored. The topic is lower-cased; a topic of "none" is none; a summary
// is cut to MaxSummary characters. Anything else is an error wrapping
// ErrGarbage that says what is wrong, never quoting the answer.
func ParseAnswer(answer string) (Classification, error) {
	if len(answer) > maxAnswer {
		return Classification{}, fmt.Errorf("%w: %d bytes, over %d", ErrGarbage, len(answer), maxAnswer)
	}
	s := unfence(strings.TrimSpace(answer))
	if strings.EqualFold(strings.Trim(s, " \t\r\n.\"'`"), "none") {
		return Classification{None: true}, nil
	}
	if !strings.HasPrefix(s, "{") {
		return Classification{}, fmt.Errorf("%w: it does not start with '{'", ErrGarbage)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&raw); err != nil {
		return Classification{}, fmt.Errorf("%w: not one JSON object", ErrGarbage)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Classification{}, fmt.Errorf("%w: more follows the JSON object", ErrGarbage)
	}
	topic, err := stringField(raw, "topic")
	if err != nil {
		return Classification{}, err
	}
	topic = strings.ToLower(topic)
	if topic == "none" {
		return Classification{None: true}, nil
	}
	if err := CheckTopic(topic); err != nil {
		return Classification{}, fmt.Errorf("%w: topic: %v", ErrGarbage, err)
	}
	summary, err := stringField(raw, "summary")
	if err != nil {
		return Classification{}, err
	}
	return Classification{Topic: topic, Summary: clip(oneLine(summary))}, nil
}

// stringField is raw's key as a trimmed, non-empty string.
func stringField(raw map[string]json.RawMessage, key string) (string, error) {
	v, ok := raw[key]
	if !ok {
		return "", fmt.Errorf("%w: no %q", ErrGarbage, key)
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fmt.Errorf("%w: %q is not a string", ErrGarbage, key)
	}
	if s = strings.TrimSpace(s); s == "" {
		return "", fmt.Errorf("%w: %q is empty", ErrGarbage, key)
	}
	return s, nil
}

// unfence returns the inside of a Markdown code fence (```json … ```),
// or s as it is.
func unfence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	inner := s[3 : len(s)-3]
	if nl := strings.IndexByte(inner, '\n'); nl >= 0 && !strings.ContainsAny(inner[:nl], "{}") {
		inner = inner[nl+1:] // the fence's language tag
	}
	return strings.TrimSpace(inner)
}

// oneLine writes s's line breaks and tabs as spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// CheckTopic refuses a topic that is empty, longer than MaxTopic
// characters, not valid UTF-8 or holds a control character.
func CheckTopic(topic string) error {
	switch n := utf8.RuneCountInString(topic); {
	case strings.TrimSpace(topic) == "":
		return errors.New("empty")
	case n > MaxTopic:
		return fmt.Errorf("longer than %d characters", MaxTopic)
	case !utf8.ValidString(topic):
		return errors.New("not valid UTF-8")
	case strings.IndexFunc(topic, unicode.IsControl) >= 0:
		return errors.New("holds a control character")
	}
	return nil
}

// classifierInstructions tell the classifier's brain what to answer.
const classifierInstructions = `You decide whether one message a person sent to %s is news about their own life that the other characters who know them would naturally hear about: a new job or a promotion, a move, a graduation, a new pet, a trip, a big achievement.
Nothing you write is shown to anyone; your answer is read by a program.
If it is such news, answer with one JSON object and nothing else:
{"topic": "<one lower-case word, such as career>", "summary": "<the news in one sentence of the person's own words, at most 200 characters>"}
Otherwise answer exactly: none
Never pass on anything about health, money, relationships, the law or secrets.`

// ClassifierTitle is the title of the context block that carries the
// instructions.
const ClassifierTitle = "GOSSIP CLASSIFIER"

// Classify asks brain, the classifier bot's, about text, a message user
// sent to bot source (its display name). The turn is nobody's: no
// session, history or actions. An answer that is neither news nor none
// is an error wrapping ErrGarbage.
func Classify(ctx context.Context, brain brains.Brain, classifier brains.Bot, user brains.User, source, platform, text string) (Classification, error) {
	reply, err := brain.Reply(ctx, brains.Turn{
		SessionID: "gossip-classifier",
		Bot:       classifier,
		User:      user,
		Platform:  platform,
		Text:      text,
		Context:   []brains.Block{{Title: ClassifierTitle, Body: fmt.Sprintf(classifierInstructions, source)}},
	})
	if err != nil {
		return Classification{}, fmt.Errorf("classifier brain: %w", err)
	}
	return ParseAnswer(reply.Text)
}
