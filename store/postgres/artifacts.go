package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
)

// Which messages show which artifacts is message_artifacts: a turn's
// artifacts are shown with its first post and with every post that asks
// for them (a hand-off's result notice).

// showArtifacts shows arts, in their order, with message msgID.
func (t *txn) showArtifacts(msgID int64, arts []chat.Artifact) error {
	for i, a := range arts {
		if _, err := t.exec(`INSERT INTO message_artifacts (message_id, artifact_id, position) VALUES ($1, $2, $3)`,
			msgID, a.ID, i); err != nil {
			return err
		}
	}
	return nil
}

// described is arts without their content, as messages carry them.
func described(arts []chat.Artifact) []chat.Artifact {
	if len(arts) == 0 {
		return nil
	}
	out := make([]chat.Artifact, len(arts))
	for i, a := range arts {
		a.Content = nil
		out[i] = a
	}
	return out
}

// artifactsShown returns the artifacts shown with each of the messages
// ids, described (no content), in their order.
func (t *txn) artifactsShown(ids []int64) (map[int64][]chat.Artifact, error) {
	out := map[int64][]chat.Artifact{}
	if len(ids) == 0 {
		return out, nil
	}
	err := t.each(`SELECT ma.message_id, a.id, a.name, a.media_type, a.size, a.sha256, a.producer,
		COALESCE(a.delegation_id, '')
		FROM message_artifacts ma JOIN artifacts a ON a.id = ma.artifact_id
		WHERE ma.message_id = ANY($1)
		ORDER BY ma.message_id, ma.position`, []any{ids}, func(rows pgx.Rows) error {
		var msg int64
		var a chat.Artifact
		if err := rows.Scan(&msg, &a.ID, &a.Name, &a.MediaType, &a.Size, &a.SHA256, &a.Producer, &a.DelegationID); err != nil {
			return err
		}
		out[msg] = append(out[msg], a)
		return nil
	})
	return out, err
}

// withArtifacts fills the Artifacts of msgs.
func (t *txn) withArtifacts(msgs []chat.Message) error {
	ids := make([]int64, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	shown, err := t.artifactsShown(ids)
	if err != nil {
		return fmt.Errorf("artifacts shown: %w", err)
	}
	for i := range msgs {
		msgs[i].Artifacts = shown[msgs[i].ID]
	}
	return nil
}

// ArtifactHolders implements gateway.Store.
func (s *Store) ArtifactHolders(ctx context.Context, id string) (gateway.ArtifactHolders, error) {
	var h gateway.ArtifactHolders
	err := s.read(ctx, func(t *txn) error {
		h = gateway.ArtifactHolders{}
		var owner string
		err := t.scanOne(`SELECT COALESCE(d.user_id, '') FROM artifacts a
			LEFT JOIN delegations d ON d.id = a.delegation_id WHERE a.id = $1`, []any{id}, &owner)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("artifact %s: %w", id, delegation.ErrNotFound)
		}
		if err != nil {
			return err
		}
		h.People = appendNew(h.People, owner)
		return t.each(`SELECT m.user_id, COALESCE(c.platform, ''), COALESCE(c.chat_id, ''), COALESCE(c.kind, '')
			FROM message_artifacts ma JOIN messages m ON m.id = ma.message_id
			LEFT JOIN conversations c ON c.id = m.conversation_id
			WHERE ma.artifact_id = $1 ORDER BY ma.message_id`, []any{id}, func(rows pgx.Rows) error {
			var user, platform, chatID, kind string
			if err := rows.Scan(&user, &platform, &chatID, &kind); err != nil {
				return err
			}
			h.People = appendNew(h.People, user)
			if chat.Type(kind) == chat.Group {
				ref := chat.Ref{Platform: platform, ID: chatID, Type: chat.Group}
				if !slices.Contains(h.Chats, ref) {
					h.Chats = append(h.Chats, ref)
				}
			}
			return nil
		})
	})
	if err != nil {
		return gateway.ArtifactHolders{}, fmt.Errorf("store: artifact holders: %w", err)
	}
	return h, nil
}

// appendNew appends id to ids unless it is empty or there already.
func appendNew(ids []string, id string) []string {
	if id == "" || slices.Contains(ids, id) {
		return ids
	}
	return append(ids, id)
}
