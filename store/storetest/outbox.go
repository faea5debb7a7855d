package storetest

import (
	"context"
	"strconv"
	"testing"
)

// testOutboxMarks: each mark changes what is pending, and a platform's
// ID of a delivered part names its bot for replies.
func testOutboxMarks(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	in := group("lobby", "ann", "g1", "@matty write a lot", "matty")
	in.Message.Platform = "telegram"
	res := appendInbound(t, s, in)
	turn := nextTurn(t, s, res.Turns[0].SessionID)
	o := reply(turn, "part one\n\npart two")
	for _, text := range []string{"to fail", "to retry", "to deliver"} {
		o.Posts = append(o.Posts, reply(turn, text).Posts...)
	}
	done := complete(t, s, o)
	long, fail, retry, deliver := done.Outbox[0], done.Outbox[1], done.Outbox[2], done.Outbox[3]

	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("mark part", s.MarkPart(ctx, long.OutboxID, 1, "tg-1"))
	must("mark attempt", s.MarkAttempt(ctx, retry.OutboxID, "timeout"))
	must("mark attempt", s.MarkAttempt(ctx, retry.OutboxID, "timeout"))
	must("mark failed", s.MarkFailed(ctx, fail.OutboxID, "blocked"))
	must("mark sent", s.MarkSent(ctx, deliver.OutboxID, "tg-9"))

	pending, err := s.PendingOutbox(ctx)
	if err != nil || len(pending) != 2 {
		t.Fatalf("pending = %+v, %v", pending, err)
	}
	if n, err := s.OutboxPending(ctx); err != nil || n != 2 {
		t.Errorf("outbox pending = %d, %v; want 2", n, err)
	}
	if p := pending[0]; p.OutboxID != long.OutboxID || p.PartsSent != 1 || p.Attempt != 0 {
		t.Errorf("split entry = %+v, want 1 part sent", p)
	}
	if p := pending[1]; p.OutboxID != retry.OutboxID || p.Attempt != 2 {
		t.Errorf("retried entry = %+v, want 2 attempts", p)
	}
	for _, id := range []string{"tg-1", "tg-9"} {
		if bot, ok, err := s.BotOfMessage(ctx, "telegram", "lobby", id); err != nil || !ok || bot != "matty" {
			t.Errorf("bot of %s = %q, %v, %v", id, bot, ok, err)
		}
	}
	if _, ok, err := s.BotOfMessage(ctx, "telegram", "lobby", "tg-unknown"); ok || err != nil {
		t.Errorf("bot of an unknown message = %v, %v", ok, err)
	}
	must("mark sent", s.MarkSent(ctx, long.OutboxID, "tg-2"))
	must("mark sent", s.MarkSent(ctx, retry.OutboxID, ""))
	if pending, err := s.PendingOutbox(ctx); err != nil || len(pending) != 0 {
		t.Errorf("pending after every mark = %+v, %v", pending, err)
	}
	if n, err := s.OutboxPending(ctx); err != nil || n != 0 {
		t.Errorf("outbox pending after every mark = %d, %v; want 0", n, err)
	}

	// The web knows a message by its ID.
	web := appendInbound(t, s, group("room", "ann", "w1", "@finn hi", "finn"))
	wturn := nextTurn(t, s, web.Turns[0].SessionID)
	wdone := complete(t, s, reply(wturn, "hello"))
	id := wdone.Outbox[0].MessageID
	if bot, ok, err := s.BotOfMessage(ctx, "web", "room", itoa(id)); err != nil || !ok || bot != "finn" {
		t.Errorf("bot of web message %d = %q, %v, %v", id, bot, ok, err)
	}
	if _, ok, _ := s.BotOfMessage(ctx, "web", "room", itoa(web.Message.ID)); ok {
		t.Errorf("a person's message taken for a bot's")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
