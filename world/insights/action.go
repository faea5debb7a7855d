package insights

import (
	"fmt"

	"github.com/switchboard-chat/switchboard/world/actions"
)

// Remember is the name of the action that stores an insight.
const Remember = "remember"

// Action is remember {kind, text, confidence} (SPEC §10.1): it stores an
// insight about the calling turn's person, as its bot. The other bots
// find it in their turns for that person when a message relates to it.
// p may be nil in a registry that only checks calls (switchboard
// check), whose handlers never run.
func Action(p *Pool) actions.Action {
	return actions.Action{
		Name: Remember,
		Description: "Remember something about the person you are talking with, for the other bots: when they talk " +
			"with this person about something related, they see it (never the person's words, only your insight). " +
			"You never see your own insights this way.",
		Schema: actions.Object([]string{"kind", "text", "confidence"},
			actions.OneOf("kind", "epiphany: a significant realisation about the person; diary: your reflective journal "+
				"entry; dream: dream content; observation: something noticed in passing.", "", Kinds...),
			actions.Text("text", "The insight, one self-contained statement about the person "+
				"(\"Bryan is excited about his new job\").", MaxText),
			actions.Number("confidence", "How sure you are, from 0 to 1. Other bots see only insights of at least "+
				"the gateway's threshold (0.7 unless configured).", 0, 1),
		),
		Handle: func(ctx actions.Context, call actions.Call) (string, error) {
			var args struct {
				Kind       string  `json:"kind"`
				Text       string  `json:"text"`
				Confidence float64 `json:"confidence"`
			}
			if err := call.Decode(&args); err != nil {
				return "", err
			}
			in, err := p.Remember(ctx, Note{
				User: call.Caller.User, Bot: call.Caller.Bot, Kind: args.Kind, Text: args.Text, Confidence: args.Confidence,
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Remembered insight %d (%s, confidence %g) about %s.", in.ID, in.Kind, in.Confidence, personName(call.Caller)), nil
		},
	}
}

// personName names the caller's person for a tool result.
func personName(c actions.Caller) string {
	if c.UserName != "" {
		return c.UserName
	}
	return c.User
}
