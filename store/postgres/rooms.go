package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/gateway"
)

// Rooms: a room is a group conversation with a row in rooms, which says
// whether it is open; room_members holds its members, one row per
// person; its bots are its participants of kind 'bot'.

// roomRow is a group conversation that may be a room.
type roomRow struct {
	conv int64
	// isRoom is false for a platform's own group (no row in rooms).
	isRoom bool
	open   bool
}

// room finds the group conversation chatID of platform; ok is false when
// there is none. lock holds the conversation's row until the
// transaction ends, so that the joins and invitations of one room run one
// after another.
func (t *txn) room(platform, chatID string, lock bool) (r roomRow, ok bool, err error) {
	q := `SELECT c.id, r.open FROM conversations c LEFT JOIN rooms r ON r.conversation_id = c.id
		WHERE c.platform = $1 AND c.chat_id = $2 AND c.bot = '' AND c.kind = 'group'`
	if lock {
		q += ` FOR NO KEY UPDATE OF c`
	}
	var open *bool
	err = t.scanOne(q, []any{platform, chatID}, &r.conv, &open)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
	}
	r.isRoom, r.open = open != nil, open != nil && *open
	return r, true, nil
}

// enterable returns the room chatID, or the refusal of a chat that is
// none: no such chat (ErrUnknownChat), a platform's own group
// (errNotRoom).
func (t *txn) enterable(platform, chatID string, lock bool) (roomRow, error) {
	r, ok, err := t.room(platform, chatID, lock)
	switch {
	case err != nil:
		return r, err
	case !ok:
		return r, fmt.Errorf("room %q: %w", chatID, gateway.ErrUnknownChat)
	case !r.isRoom:
		return r, errNotRoom
	}
	return r, nil
}

// errNotRoom refuses a platform's own group, whose membership is the
// platform's, where a room is asked for.
var errNotRoom = fmt.Errorf("a group of its platform, not a room: %w", gateway.ErrNotAllowed)

// isMember reports whether a membership of conv is recorded under any of
// p's IDs.
func (t *txn) isMember(conv int64, p gateway.Person) (bool, error) {
	var in bool
	err := t.scanOne(`SELECT EXISTS (SELECT 1 FROM room_members WHERE conversation_id = $1 AND member_id = ANY($2))`,
		[]any{conv, p.IDs()}, &in)
	return in, err
}

// addMember records a membership.
func (t *txn) addMember(conv int64, member, invitedBy string, at int64) error {
	_, err := t.exec(`INSERT INTO room_members (conversation_id, member_id, invited_by, joined_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, conv, member, invitedBy, at)
	return err
}

// roomBots lists a room's bots in the order they were added.
func (t *txn) roomBots(conv int64) ([]string, error) {
	out := []string{}
	err := t.each(`SELECT participant_id FROM participants
		WHERE conversation_id = $1 AND kind = 'bot' ORDER BY joined_at, seq`, []any{conv}, func(rows pgx.Rows) error {
		var id string
		err := rows.Scan(&id)
		out = append(out, id)
		return err
	})
	return out, err
}

// Room returns a room as p sees it (gateway.Store).
func (s *Store) Room(ctx context.Context, platform, chatID string, p gateway.Person) (gateway.Room, error) {
	var out gateway.Room
	err := s.read(ctx, func(tx *txn) error {
		r, err := tx.enterable(platform, chatID, false)
		if err != nil {
			return err
		}
		out = gateway.Room{Open: r.open}
		if out.Member, err = tx.isMember(r.conv, p); err != nil {
			return err
		}
		out.Bots, err = tx.roomBots(r.conv)
		return err
	})
	if err != nil {
		return gateway.Room{}, fmt.Errorf("store: room: %w", err)
	}
	return out, nil
}

// JoinRoom makes p a member of a room, creating it as nr says when there
// is no such chat; a closed room p is not a member of is refused
// (gateway.Store).
func (s *Store) JoinRoom(ctx context.Context, platform, chatID string, p gateway.Person, nr gateway.NewRoom) (gateway.Room, error) {
	var out gateway.Room
	err := s.write(ctx, func(tx *txn) error {
		at := micros(timeNow())
		r, ok, err := tx.room(platform, chatID, true)
		if err != nil {
			return err
		}
		switch {
		case !ok:
			out, err = tx.createRoom(platform, chatID, p, nr, at)
			return err
		case !r.isRoom:
			return errNotRoom
		}
		member, err := tx.isMember(r.conv, p)
		switch {
		case err != nil:
			return err
		case !member && !r.open:
			return fmt.Errorf("room %q is closed: %w", chatID, gateway.ErrNotAllowed)
		case !member:
			if err := tx.addMember(r.conv, p.ID, "", at); err != nil {
				return err
			}
		}
		out = gateway.Room{Open: r.open, Member: true}
		out.Bots, err = tx.roomBots(r.conv)
		return err
	})
	if err != nil {
		return gateway.Room{}, fmt.Errorf("store: join room: %w", err)
	}
	return out, nil
}

// createRoom makes a room with its bots and p as its first member. Two
// processes creating one room at once: the second's insert waits for the
// first and then finds the room there, and its transaction runs again.
func (t *txn) createRoom(platform, chatID string, p gateway.Person, nr gateway.NewRoom, at int64) (gateway.Room, error) {
	var conv int64
	err := t.scanOne(`INSERT INTO conversations (platform, chat_id, bot, kind, name, created_at)
		VALUES ($1, $2, '', 'group', $2, $3) ON CONFLICT (platform, chat_id, bot) DO NOTHING RETURNING id`,
		[]any{platform, chatID, at}, &conv)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, ok, err := t.room(platform, chatID, false); err != nil || ok {
			return gateway.Room{}, cmp.Or(err, errRetry)
		}
		// A chat of that name that is no group (a private chat).
		return gateway.Room{}, errNotRoom
	}
	if err != nil {
		return gateway.Room{}, err
	}
	if _, err := t.exec(`INSERT INTO rooms (conversation_id, open, created_at) VALUES ($1, $2, $3)`, conv, nr.Open, at); err != nil {
		return gateway.Room{}, err
	}
	for _, b := range nr.Bots {
		if err := t.addParticipant(conv, "bot", b, at); err != nil {
			return gateway.Room{}, err
		}
	}
	if err := t.addMember(conv, p.ID, "", at); err != nil {
		return gateway.Room{}, err
	}
	return gateway.Room{Bots: append([]string{}, nr.Bots...), Open: nr.Open, Member: true}, nil
}

// AddRoomMember makes member a member of a room on behalf of inviter, a
// member (gateway.Store).
func (s *Store) AddRoomMember(ctx context.Context, platform, chatID string, inviter, member gateway.Person) error {
	err := s.write(ctx, func(tx *txn) error {
		r, err := tx.enterable(platform, chatID, true)
		if err != nil {
			return err
		}
		in, err := tx.isMember(r.conv, inviter)
		switch {
		case err != nil:
			return err
		case !in:
			return fmt.Errorf("%q is not a member of room %q: %w", inviter.ID, chatID, gateway.ErrNotAllowed)
		}
		already, err := tx.isMember(r.conv, member)
		if err != nil || already {
			return err
		}
		return tx.addMember(r.conv, member.ID, inviter.ID, micros(timeNow()))
	})
	if err != nil {
		return fmt.Errorf("store: add room member: %w", err)
	}
	return nil
}
