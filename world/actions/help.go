package actions

import (
	"context"
	"errors"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// RequestHelp is the name of the action that asks another bot a
// question without waiting for the answer.
const RequestHelp = "request_help"

// MaxQuestion bounds a help request's question, in characters.
const MaxQuestion = 4000

// Helper carries out help requests (SPEC §10.3); the gateway is one.
type Helper interface {
	// RequestHelp asks bot (an ID, a name or an alias) question for c's
	// bot, on behalf of c's person. It stores the request and returns
	// what to tell the asking bot, without waiting for the answer, which
	// comes back as a turn of c's session. A refusal (an unknown bot, a
	// limit, a public bot) wraps brains.ErrActionRefused; bad arguments
	// are *ArgumentErrors.
	RequestHelp(ctx context.Context, c Caller, bot, question string) (string, error)
}

// helpSchema is request_help's arguments: bot, question (SPEC §10.1).
func helpSchema() *jsonschema.Schema {
	return Object([]string{"bot", "question"},
		Text("bot", "The ID of the bot to ask.", 200),
		Text("question", "The question, complete enough to answer without this conversation.", MaxQuestion),
	)
}

// Help is request_help {bot, question}, carried out by h. Like delegate
// it is offered only to a bot that has a team (someone in its allow
// list), whose members its schema lists. h may be nil in a registry
// that only checks calls (switchboard check), whose handlers never run.
func Help(h Helper) Action {
	return Action{
		Name: RequestHelp,
		Description: "Ask another bot of your team a question without stopping your work. The user does not see " +
			"the question or the answer; the answer comes back to you in a new turn, and what you reply then goes " +
			"to the chat you are in now. Use it when another bot knows something you need.",
		Schema: helpSchema(),
		Offer:  offerToTeam(helpSchema),
		Handle: func(ctx Context, call Call) (string, error) {
			var args struct {
				Bot      string `json:"bot"`
				Question string `json:"question"`
			}
			if err := call.Decode(&args); err != nil {
				return "", err
			}
			switch {
			case strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(args.Bot), "@")) == "":
				return "", &ArgumentError{Action: RequestHelp, Arg: "bot", Problem: "must name a bot"}
			case strings.TrimSpace(args.Question) == "":
				return "", &ArgumentError{Action: RequestHelp, Arg: "question", Problem: "must not be blank"}
			case h == nil:
				return "", errors.New("request_help: help requests are not carried out here")
			}
			// The helper's errors name the bot or the argument at fault.
			return h.RequestHelp(ctx, call.Caller, teamID(args.Bot, call.Caller.Team), args.Question)
		},
	}
}
