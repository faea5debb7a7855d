package findings

import (
	"fmt"

	"github.com/switchboard-chat/switchboard/world/actions"
)

// PostFinding is the name of the action that posts a finding.
const PostFinding = "post_finding"

// Action is post_finding {text, severity?} (SPEC §10.1): it posts a
// finding to the board of the calling turn's space, as its bot.
func Action(b *Board) actions.Action {
	return actions.Action{
		Name: PostFinding,
		Description: "Post a finding to the shared findings board of this conversation: something you discovered " +
			"that the other bots working here should know. Every bot sees the board's newest findings in its next turns.",
		Schema: actions.Object([]string{"text"},
			actions.Text("text", "The finding, one self-contained statement.", MaxText),
			actions.OneOf("severity", "How much it matters; medium when left out.", Medium, Severities...),
		),
		Handle: func(ctx actions.Context, call actions.Call) (string, error) {
			var args struct {
				Text     string `json:"text"`
				Severity string `json:"severity"`
			}
			if err := call.Decode(&args); err != nil {
				return "", err
			}
			f, err := b.Post(ctx, Post{Space: call.Caller.Space, Bot: call.Caller.Bot, Text: args.Text, Severity: args.Severity})
			if err != nil {
				return "", err
			}
			if !f.Visible {
				return fmt.Sprintf("Posted finding %d (%s). Stage %s is isolated: only you see it until the stage is released.", f.ID, f.Severity, f.Stage), nil
			}
			return fmt.Sprintf("Posted finding %d (%s) to the shared board.", f.ID, f.Severity), nil
		},
	}
}
