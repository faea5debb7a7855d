package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
)

// Who reads an artifact (SPEC §8, §12): the person whose session or
// space holds it. An artifact is held by the messages that show it (the
// reply that made it, a hand-off's result notice) and by the hand-off
// that made it. A message in a private chat belongs to the person it
// answers; one in a room also to the room's members (anyone, when the
// room is open: whoever may read the room may open what it shows); a
// hand-off to the person it works for. Nobody else may read it, and to
// them it does not exist.

// ErrUnknownArtifact: there is no artifact with that ID that the person
// may read. The two are one error, so that a refusal says nothing of
// whether the artifact exists.
var ErrUnknownArtifact = errors.New("unknown artifact")

// ArtifactHolders is where an artifact is held: what decides who may
// read it.
type ArtifactHolders struct {
	// People are the user IDs (master or platform IDs) of the persons
	// the messages showing it answer, and of the person its hand-off
	// worked for.
	People []string
	// Chats are the group chats whose messages show it.
	Chats []chat.Ref
}

// Artifact implements Host.
func (g *Gateway) Artifact(ctx context.Context, id, platformID string) (chat.Artifact, error) {
	h, err := g.store.ArtifactHolders(ctx, id)
	if errors.Is(err, delegation.ErrNotFound) {
		return chat.Artifact{}, fmt.Errorf("artifact %q: %w", id, ErrUnknownArtifact)
	}
	if err != nil {
		return chat.Artifact{}, err
	}
	ok, err := g.mayRead(ctx, h, g.person(platformID))
	if err != nil {
		return chat.Artifact{}, err
	}
	if !ok {
		g.log.Info("artifact refused", "artifact", id, "platform_id", platformID)
		return chat.Artifact{}, fmt.Errorf("artifact %q: %w", id, ErrUnknownArtifact)
	}
	// The content is read only for someone who may have it.
	arts, err := g.store.Artifacts(ctx, []string{id})
	if errors.Is(err, delegation.ErrNotFound) {
		return chat.Artifact{}, fmt.Errorf("artifact %q: %w", id, ErrUnknownArtifact) // deleted meanwhile
	}
	if err != nil {
		return chat.Artifact{}, err
	}
	return arts[0], nil
}

// mayRead says whether p may read what h holds: one of p's IDs is among
// its people, or p may read one of its rooms.
func (g *Gateway) mayRead(ctx context.Context, h ArtifactHolders, p Person) (bool, error) {
	for _, id := range p.IDs() {
		if slices.Contains(h.People, id) {
			return true, nil
		}
	}
	for _, c := range h.Chats {
		r, err := g.store.Room(ctx, c.Platform, c.ID, p)
		switch {
		case err == nil:
			if r.Member || r.Open {
				return true, nil
			}
		case errors.Is(err, ErrNotAllowed), errors.Is(err, ErrUnknownChat):
			// A platform's own group, whose members Switchboard does
			// not know; a room deleted meanwhile.
		default:
			return false, err
		}
	}
	return false, nil
}

// attachedNote is the text of a reply that is only files: their names,
// so that the message showing them says something on every platform.
func attachedNote(arts []chat.Artifact) string {
	names := make([]string, len(arts))
	for i, a := range arts {
		names[i] = a.Name
	}
	return "Attached: " + strings.Join(names, ", ")
}
