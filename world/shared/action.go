package shared

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/switchboard-chat/switchboard/world/actions"
)

// The names of the actions that add to a space's shared context.
const (
	AddEventAction  = "add_event"
	AddEntityAction = "add_entity"
	AddFactAction   = "add_fact"
)

// Actions are add_event {text}, add_entity {name, attributes} and
// add_fact {subject, predicate, object, confidence} (SPEC §10.1): each
// adds to the shared context of the calling turn's space, as its bot.
// k may be nil in a registry that only checks calls (switchboard
// check), whose handlers never run.
func Actions(k *Keeper) []actions.Action {
	return []actions.Action{
		{
			Name: AddEventAction,
			Description: "Add an event to the timeline every bot working in this conversation sees: something that " +
				"happened or was done (\"Finished the competitor survey: 3 competitors found\").",
			Schema: actions.Object([]string{"text"},
				actions.Text("text", "The event, one self-contained sentence.", MaxEventText)),
			Handle: func(ctx actions.Context, call actions.Call) (string, error) {
				var args struct {
					Text string `json:"text"`
				}
				if err := call.Decode(&args); err != nil {
					return "", err
				}
				e, err := k.AddEvent(ctx, call.Caller.Space, call.Caller.Bot, args.Text)
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("Added event %d to the shared timeline.", e.ID), nil
			},
		},
		{
			Name: AddEntityAction,
			Description: "Record what you know about a named thing (a company, a product, a file, a person's project) " +
				"in the shared context every bot working here sees. Its attributes are merged into what is known: " +
				"a key you give replaces that key, the others stay.",
			Schema: actions.Object([]string{"name", "attributes"},
				actions.Text("name", "The thing's name, such as competitor-x.", MaxName),
				actions.Property{Name: "attributes", Schema: &jsonschema.Schema{
					Type:        "object",
					Description: "What is known of it, as a JSON object: {\"pricing\": \"$99/month\", \"api\": \"REST\"}.",
				}},
			),
			Handle: func(ctx actions.Context, call actions.Call) (string, error) {
				var args struct {
					Name       string          `json:"name"`
					Attributes json.RawMessage `json:"attributes"`
				}
				if err := call.Decode(&args); err != nil {
					return "", err
				}
				e, err := k.AddEntity(ctx, call.Caller.Space, call.Caller.Bot, args.Name, args.Attributes)
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("Entity %s is now %s.", e.Name, e.Attributes), nil
			},
		},
		{
			Name: AddFactAction,
			Description: "State a fact in the shared context every bot working here sees, as subject, predicate and " +
				"object (CompetitorX pricing_valid true), with how sure you are. A newer fact with the same subject " +
				"and predicate replaces the older one; facts below the gateway's confidence threshold are not shown.",
			Schema: actions.Object([]string{"subject", "predicate", "object", "confidence"},
				actions.Text("subject", "What the fact is about: CompetitorX.", MaxFactPart),
				actions.Text("predicate", "The property or relation: pricing_valid.", MaxFactPart),
				actions.Text("object", "Its value: true.", MaxFactPart),
				actions.Number("confidence", "How sure you are, from 0 to 1.", 0, 1),
			),
			Handle: func(ctx actions.Context, call actions.Call) (string, error) {
				var args struct {
					Subject    string  `json:"subject"`
					Predicate  string  `json:"predicate"`
					Object     string  `json:"object"`
					Confidence float64 `json:"confidence"`
				}
				if err := call.Decode(&args); err != nil {
					return "", err
				}
				f, err := k.AddFact(ctx, Fact{
					Space: call.Caller.Space, Subject: args.Subject, Predicate: args.Predicate, Object: args.Object,
					Confidence: args.Confidence, Bot: call.Caller.Bot,
				})
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("Fact stated: %s %s %s (%g).", f.Subject, f.Predicate, f.Object, f.Confidence), nil
			},
		},
	}
}
