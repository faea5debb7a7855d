package gateway

import (
	"context"
	"fmt"
	"slices"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
)

// Shown is a stored chat message as a chat's history shows it to a
// person: with the hand-off it belongs to, in that hand-off's status
// now, as the live message of a hand-off carries it (outbox.Entry).
type Shown struct {
	chat.Message
	// Delegation is set on messages that belong to a hand-off.
	Delegation *delegation.Ref
}

// shown pairs msgs with their hand-offs, read in one query. A message
// whose hand-off record is gone (retention deletes records and their
// messages apart) is shown without it.
func (g *Gateway) shown(ctx context.Context, msgs []chat.Message) ([]Shown, error) {
	out := make([]Shown, len(msgs))
	var ids []string
	for i, m := range msgs {
		out[i].Message = m
		if m.DelegationID != "" && !slices.Contains(ids, m.DelegationID) {
			ids = append(ids, m.DelegationID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	recs, err := g.store.Delegations(ctx, delegation.Filter{IDs: ids, Limit: len(ids)})
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	refs := make(map[string]*delegation.Ref, len(recs))
	for _, d := range recs {
		refs[d.ID] = d.Ref()
	}
	for i := range out {
		out[i].Delegation = refs[out[i].DelegationID]
	}
	return out, nil
}
