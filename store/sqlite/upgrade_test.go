package sqlite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/sessions"
)

// manifest is testdata/v10-manifest.json: what the store of schema 10
// (commit 08d4942) read from testdata/v10.db after its own Open, which
// finished what the crash that made the file left undone.
type manifest struct {
	Secrets  map[string]string `json:"secrets"`
	Sessions []struct {
		ID, Bot, Scope string
		ScopeID        string `json:"scope_id"`
		ResumeID       string `json:"resume_id"`
		CreatedAt      int64  `json:"created_at"`
		UpdatedAt      int64  `json:"updated_at"`
	} `json:"sessions"`
	Messages []struct {
		ID            int64
		Platform      string
		ChatID        string `json:"chat_id"`
		ChatType      string `json:"chat_type"`
		PlatformMsgID string `json:"platform_msg_id"`
		Kind          string
		From          chat.Party
		UserID        string `json:"user_id"`
		Bot, Text     string
		Mentions      []string
		ReplyTo       string `json:"reply_to"`
		Time          int64
		DelegationID  string   `json:"delegation_id"`
		Sessions      []string `json:"sessions"`
	} `json:"messages"`
	SessionHistory map[string][]int64 `json:"session_history"`
	ChatHistory    map[string][]int64 `json:"chat_history"`
	Rooms          map[string]struct {
		Bots, Users []string
	} `json:"rooms"`
	PendingTurns []struct {
		ID           int64
		SessionID    string `json:"session_id"`
		After        int64
		MessageID    int64 `json:"message_id"`
		Text         string
		DelegationID string `json:"delegation_id"`
	} `json:"pending_turns"`
	PendingOutbox []struct {
		MessageID    int64 `json:"message_id"`
		Platform     string
		Bot          string
		ChatID       string `json:"chat_id"`
		ChatType     string `json:"chat_type"`
		Text         string
		Attempt      int
		PartsSent    int    `json:"parts_sent"`
		DelegationID string `json:"delegation_id"`
	} `json:"pending_outbox"`
	Delegations []struct {
		ID, From, To string
		UserID       string `json:"user_id"`
		UserName     string `json:"user_name"`
		Task         string
		Depth        int
		ParentID     string `json:"parent_id"`
		Status       string
		Result       string
		Error        string
		Origin       struct {
			Platform string
			ChatID   string `json:"chat_id"`
			Type     string
		}
		OriginSender string                `json:"origin_sender"`
		FromSession  string                `json:"from_session"`
		Expected     []delegation.Expected `json:"expected"`
		Retries      int
		Inputs       []string
		Artifacts    []struct {
			ID           string
			Name         string
			MediaType    string `json:"media_type"`
			Size         int64
			SHA256       string
			Producer     string
			DelegationID string `json:"delegation_id"`
		}
		CreatedAt int64 `json:"created_at"`
		UpdatedAt int64 `json:"updated_at"`
	} `json:"delegations"`
	Artifacts []struct {
		ID            string
		ContentSHA256 string `json:"content_sha256"`
		Size          int64
	} `json:"artifacts"`
	DedupeKeys []struct {
		Platform, Bot string
		ChatID        string `json:"chat_id"`
		PlatformMsgID string `json:"platform_msg_id"`
		MessageID     int64  `json:"message_id"`
	} `json:"dedupe_keys"`
}

// openFixture opens a copy of testdata/v10.db, which upgrades it.
func openFixture(t *testing.T) (*Store, manifest) {
	t.Helper()
	var m manifest
	raw, err := os.ReadFile("testdata/v10-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v10.db")
	src, err := os.Open("testdata/v10.db")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open the schema 10 fixture: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m
}

// TestUpgradeKeepsEverything opens a database written by the store of
// schema 10, left as a crash left it, and checks that everything that
// store read from it is read the same now: every message (an exchange
// row as its two messages), session, history, room, pending turn and
// outbox entry, delegation, artifact, dedupe key and secret.
func TestUpgradeKeepsEverything(t *testing.T) {
	ctx := context.Background()
	s, m := openFixture(t)

	var version int
	names, _ := fs.Glob(migrations, "migrations/*.sql")
	if err := s.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil || version != len(names) {
		t.Fatalf("user_version = %d, %v; want %d", version, err, len(names))
	}

	for name, hexValue := range m.Secrets {
		got, err := s.Secret(ctx, name, 32)
		if err != nil || hex.EncodeToString(got) != hexValue {
			t.Errorf("secret %s = %x, %v; want %s", name, got, err, hexValue)
		}
	}

	for _, want := range m.Sessions {
		got, err := s.GetSession(ctx, want.ID)
		if err != nil {
			t.Errorf("session %s: %v", want.ID, err)
			continue
		}
		if got.Key != (sessions.Key{Bot: want.Bot, Scope: want.Scope, ScopeID: want.ScopeID}) || got.ResumeID != want.ResumeID ||
			micros(got.CreatedAt) != want.CreatedAt || micros(got.UpdatedAt) != want.UpdatedAt {
			t.Errorf("session %s = %+v, want %+v", want.ID, got, want)
		}
	}

	// Every message, with the sessions it belongs to.
	all, err := scanMessages(s.query(ctx, `SELECT `+messageColumns+messageFrom+` ORDER BY m.id`))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(m.Messages) {
		t.Errorf("%d messages, want %d", len(all), len(m.Messages))
	}
	for i, want := range m.Messages {
		if i >= len(all) {
			break
		}
		got := all[i]
		wantMsg := chat.Message{
			ID: want.ID, Platform: want.Platform, ChatID: want.ChatID, ChatType: chat.Type(want.ChatType),
			PlatformMsgID: want.PlatformMsgID, Kind: want.Kind, From: want.From, UserID: want.UserID, Bot: want.Bot,
			Text: want.Text, Mentions: want.Mentions, ReplyTo: want.ReplyTo, Time: fromMicros(want.Time), DelegationID: want.DelegationID,
		}
		if len(wantMsg.Mentions) == 0 {
			wantMsg.Mentions = nil
		}
		if diff := cmp.Diff(wantMsg, got); diff != "" {
			t.Errorf("message %d (-want +got):\n%s", want.ID, diff)
		}
		var linked []string
		rows, err := s.query(ctx, `SELECT session_id FROM session_messages WHERE message_id = ? ORDER BY session_id`, got.ID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			rows.Scan(&id)
			linked = append(linked, id)
		}
		rows.Close()
		wantLinked := slices.Sorted(slices.Values(want.Sessions))
		if !slices.Equal(linked, wantLinked) {
			t.Errorf("message %d is in sessions %v, want %v", want.ID, linked, wantLinked)
		}
	}

	for id, want := range m.SessionHistory {
		msgs, err := s.SessionMessages(ctx, id, chat.KindChat, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if got := msgIDs(msgs); !slices.Equal(got, want) {
			t.Errorf("session %s history = %v, want %v", id, got, want)
		}
	}
	for key, want := range m.ChatHistory {
		platform, room := splitKey(key)
		msgs, err := s.ChatMessages(ctx, platform, room, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if got := msgIDs(msgs); !slices.Equal(got, want) {
			t.Errorf("room %s history = %v, want %v", key, got, want)
		}
	}
	// Each room is closed now, its people its members (migration 0012).
	for key, want := range m.Rooms {
		platform, room := splitKey(key)
		for _, u := range want.Users {
			r, err := s.JoinRoom(ctx, platform, room, gateway.Person{ID: u}, gateway.NewRoom{})
			if err != nil || !slices.Equal(r.Bots, want.Bots) || r.Open {
				t.Errorf("room %s as %s = %+v, %v; want closed with bots %v", key, u, r, err, want.Bots)
			}
		}
		if _, err := s.JoinRoom(ctx, platform, room, gateway.Person{ID: "web-stranger"}, gateway.NewRoom{}); !errors.Is(err, gateway.ErrNotAllowed) {
			t.Errorf("room %s let a stranger in: %v", key, err)
		}
	}

	pending, err := s.PendingSessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != len(m.PendingTurns) {
		t.Errorf("%d sessions with pending turns, want %d", len(pending), len(m.PendingTurns))
	}
	for _, want := range m.PendingTurns {
		turn, ok, err := s.NextTurn(ctx, want.SessionID, 20)
		if err != nil || !ok {
			t.Errorf("next turn of %s: %v, %v", want.SessionID, ok, err)
			continue
		}
		got := [5]any{turn.Ref.ID, turn.After, turn.Message.ID, turn.Text, delegationOf(turn.Delegation)}
		if got != [5]any{want.ID, want.After, want.MessageID, want.Text, want.DelegationID} {
			t.Errorf("pending turn = %v, want %+v", got, want)
		}
	}

	entries, err := s.PendingOutbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(m.PendingOutbox) {
		t.Errorf("%d pending outbox entries, want %d", len(entries), len(m.PendingOutbox))
	}
	for i, want := range m.PendingOutbox {
		if i >= len(entries) {
			break
		}
		e := entries[i]
		did := ""
		if e.Delegation != nil {
			did = e.Delegation.ID
		}
		got := [9]any{e.MessageID, e.Platform, e.Bot, e.ChatID, string(e.ChatType), e.Text, e.Attempt, e.PartsSent, did}
		if got != [9]any{want.MessageID, want.Platform, want.Bot, want.ChatID, want.ChatType, want.Text, want.Attempt, want.PartsSent, want.DelegationID} {
			t.Errorf("pending outbox entry %d = %v, want %+v", i, got, want)
		}
	}

	for _, want := range m.Delegations {
		got, err := s.Delegation(ctx, want.ID)
		if err != nil {
			t.Errorf("delegation %s: %v", want.ID, err)
			continue
		}
		wantRec := delegation.Record{
			ID: want.ID, Kind: delegation.KindHandoff, From: want.From, To: want.To, UserID: want.UserID, UserName: want.UserName,
			Task: want.Task, Depth: want.Depth, ParentID: want.ParentID, Status: want.Status, Result: want.Result, Error: want.Error,
			Origin:       chat.Ref{Platform: want.Origin.Platform, ID: want.Origin.ChatID, Type: chat.Type(want.Origin.Type)},
			OriginSender: want.OriginSender, FromSession: want.FromSession, Expected: want.Expected, Retries: want.Retries,
			Inputs: want.Inputs, Artifacts: []chat.Artifact{},
			CreatedAt: fromMicros(want.CreatedAt), UpdatedAt: fromMicros(want.UpdatedAt),
		}
		if len(wantRec.Expected) == 0 {
			wantRec.Expected = nil
		}
		if wantRec.Finished() {
			// Migration 0020: a record already final ended when last
			// updated.
			wantRec.EndedAt = wantRec.UpdatedAt
		}
		for _, a := range want.Artifacts {
			wantRec.Artifacts = append(wantRec.Artifacts, chat.Artifact{ID: a.ID, Name: a.Name, MediaType: a.MediaType,
				Size: a.Size, SHA256: a.SHA256, Producer: a.Producer, DelegationID: a.DelegationID})
		}
		if diff := cmp.Diff(wantRec, got); diff != "" {
			t.Errorf("delegation %s (-want +got):\n%s", want.ID, diff)
		}
	}

	for _, want := range m.Artifacts {
		arts, err := s.Artifacts(ctx, []string{want.ID})
		if err != nil {
			t.Errorf("artifact %s: %v", want.ID, err)
			continue
		}
		sum := sha256.Sum256(arts[0].Content)
		if hex.EncodeToString(sum[:]) != want.ContentSHA256 || arts[0].Size != want.Size {
			t.Errorf("artifact %s content changed", want.ID)
		}
		// The message it was made with shows it (migration 0013).
		var msg int64
		if err := s.r.QueryRowContext(ctx, `SELECT message_id FROM artifacts WHERE id = ?`, want.ID).Scan(&msg); err != nil {
			t.Fatal(err)
		}
		shown, err := s.artifactsShown(ctx, []int64{msg})
		if err != nil || len(shown[msg]) != 1 || shown[msg][0].ID != want.ID || shown[msg][0].Content != nil {
			t.Errorf("message %d shows %+v, %v; want artifact %s", msg, shown[msg], err, want.ID)
		}
	}

	// Each dedupe key still names its message: a platform's redelivery
	// is recognised.
	for _, k := range m.DedupeKeys {
		res, err := s.AppendInbound(ctx, gateway.Inbound{Message: chat.Message{
			Platform: k.Platform, Bot: k.Bot, ChatID: k.ChatID, PlatformMsgID: k.PlatformMsgID,
			ChatType: chat.Private, Kind: chat.KindChat, From: chat.Party{Kind: chat.Human, ID: "someone"}, Text: "again",
		}})
		if err != nil || !res.Duplicate || res.Message.ID != k.MessageID {
			t.Errorf("redelivery of %+v = %v, duplicate %v, message %d; want the original %d", k, err, res.Duplicate, res.Message.ID, k.MessageID)
		}
	}
}

func msgIDs(msgs []chat.Message) []int64 {
	out := []int64{}
	for _, m := range msgs {
		out = append(out, m.ID)
	}
	return out
}

// splitKey splits a manifest's "platform|chat" key.
func splitKey(key string) (platform, id string) {
	for i := range key {
		if key[i] == '|' {
			return key[:i], key[i+1:]
		}
	}
	return key, ""
}

func delegationOf(d *delegation.Record) string {
	if d == nil {
		return ""
	}
	return d.ID
}
