package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/switchboard-chat/switchboard/identity"
)

// Rooms (SPEC §12). A room is a group chat that Switchboard keeps itself
// (on the web; Telegram and Discord groups are the platforms' own): it
// belongs to its members. The join that creates a room makes its sender
// the first member; a closed room (the default) lets in only its
// members, whom a member invites; an open room lets anyone join. A
// room's bots are the ones it was created with: no later join changes
// them, so nobody can squat them. Membership is per person: every
// identity of one person (users.yaml) is the same member. Nothing takes
// a membership away.

// JoinRoom implements Host.
func (g *Gateway) JoinRoom(ctx context.Context, j RoomJoin) ([]BotInfo, error) {
	if err := g.checkRoom(j.Room, j.PlatformID); err != nil {
		return nil, g.refused("join", j.Platform, j.Room, j.PlatformID, err)
	}
	roster := g.roster.Load()
	p := g.person(j.PlatformID)
	bots := j.Bots
	if bots == nil {
		bots = botIDs(roster, j.Platform)
	}
	for _, id := range bots {
		if b, ok := roster.Bot(id); !ok || !b.On(j.Platform) {
			// The bots matter only to the join that creates the room: a
			// page that joins again naming a bot since removed still
			// gets into the room as it is.
			if _, err := g.store.Room(ctx, j.Platform, j.Room, p); !errors.Is(err, ErrUnknownChat) {
				bots = botIDs(roster, j.Platform)
				break
			}
			return nil, fmt.Errorf("join: %w: %q", ErrUnknownBot, id)
		}
	}
	r, err := g.store.JoinRoom(ctx, j.Platform, j.Room, p, NewRoom{Bots: dedupe(bots), Open: j.Open})
	if err != nil {
		return nil, g.refused("join", j.Platform, j.Room, j.PlatformID, fmt.Errorf("join: %w", err))
	}
	out := make([]BotInfo, 0, len(r.Bots))
	for _, id := range r.Bots {
		if b, ok := roster.Bot(id); ok {
			out = append(out, BotInfo{ID: b.ID, Name: b.Name})
		}
	}
	return out, nil
}

// RoomHistory implements Host.
func (g *Gateway) RoomHistory(ctx context.Context, platform, room, platformID string, limit int) ([]Shown, error) {
	if _, err := g.enterRoom(ctx, platform, room, platformID); err != nil {
		return nil, g.refused("history", platform, room, platformID, err)
	}
	msgs, err := g.store.ChatMessages(ctx, platform, room, limit)
	if err != nil {
		return nil, err
	}
	return g.shown(ctx, msgs)
}

// InviteToRoom implements Host.
func (g *Gateway) InviteToRoom(ctx context.Context, platform, room, platformID, user string) error {
	if err := g.checkRoom(room, platformID); err != nil {
		return g.refused("invite", platform, room, platformID, err)
	}
	member, err := g.invitee(user)
	if err != nil {
		return err
	}
	inviter := g.person(platformID)
	if err := g.store.AddRoomMember(ctx, platform, room, inviter, member); err != nil {
		return g.refused("invite", platform, room, platformID, fmt.Errorf("invite: %w", err))
	}
	g.log.Info("room member added", "platform", platform, "room", room, "by", inviter.ID, "member", member.ID)
	return nil
}

// enterRoom returns the room if platformID's person may read and write
// in it: a member, or anyone in an open room.
func (g *Gateway) enterRoom(ctx context.Context, platform, room, platformID string) (Room, error) {
	if err := g.checkRoom(room, platformID); err != nil {
		return Room{}, err
	}
	r, err := g.store.Room(ctx, platform, room, g.person(platformID))
	if err != nil {
		return Room{}, err
	}
	if !r.Member && !r.Open {
		return Room{}, fmt.Errorf("room: %w", ErrNotAllowed)
	}
	return r, nil
}

// checkRoom refuses a room name that breaks the rules (CheckRoomName),
// and one that names a private chat: the person's own is not a room,
// another person's is not theirs to see.
func (g *Gateway) checkRoom(room, platformID string) error {
	if err := CheckRoomName(room); err != nil {
		return err
	}
	owner, ok := PrivateChatOwner(room)
	switch {
	case !ok:
		return nil
	case g.Resolve(owner).ID == g.Resolve(platformID).ID:
		return refuse(ErrInvalidRequest, "%q is your private chat, not a room: ask for it by its bot", room)
	default:
		return refuse(ErrNotAllowed, "%q is another person's private chat", room)
	}
}

// refused turns a refusal of what platformID asked of a room into the
// error the asker sees (a *Refusal with a message for them); other
// errors pass unchanged. Refusals that may be someone probing rooms
// they do not belong in are logged.
func (g *Gateway) refused(what, platform, room, platformID string, err error) error {
	var r *Refusal
	switch {
	case errors.As(err, &r):
	case errors.Is(err, ErrUnknownChat):
		r = &Refusal{Reason: ErrUnknownChat, Message: fmt.Sprintf("no room %q", room)}
	case errors.Is(err, ErrNotAllowed):
		r = &Refusal{Reason: ErrNotAllowed, Message: fmt.Sprintf("room %q is closed to you: a member can invite you", room)}
	default:
		return err
	}
	if r.Reason == ErrNotAllowed {
		g.log.Info("room refused", "what", what, "platform", platform, "room", room, "platform_id", platformID)
	}
	return r
}

// person is who platformID belongs to, for room membership: the listed
// user with every identity, or the platform ID alone.
func (g *Gateway) person(platformID string) Person {
	u, listed := g.users.Load().Resolve(platformID)
	if !listed {
		return Person{ID: platformID}
	}
	return Person{ID: u.ID, Identities: u.Identities}
}

// invitee is the person an invite's user names: a master user ID of
// users.yaml, or a platform ID (of a listed user or not).
func (g *Gateway) invitee(user string) (Person, error) {
	if !userIDLike(user) {
		return Person{}, refuse(ErrInvalidRequest, "user must be a master user ID or a platform ID such as web-ann")
	}
	if u, listed := g.users.Load().User(user); listed {
		return Person{ID: u.ID, Identities: u.Identities}, nil
	}
	if identity.Platform(user) == "" {
		return Person{}, refuse(ErrInvalidRequest, "%q is neither a user of users.yaml nor a platform ID such as web-ann", user)
	}
	return Person{ID: user}, nil
}

// dedupe drops repeated IDs, keeping the first of each (of a few: the
// bots of a roster).
func dedupe(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
