package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/store"
)

// visitorInbound is message i of web visitor u to matty, now.
func visitorInbound[N int | int64](u, i N) gateway.Inbound {
	in := inbound(fmt.Sprint(i), "hello there")
	in.Event.ChatID = fmt.Sprintf("web-u%d:matty", u)
	in.Event.Sender.PlatformID = fmt.Sprintf("web-u%d", u)
	in.Event.Time = time.Now()
	in.Turns[0].Session.ScopeID = fmt.Sprintf("user-%d", u)
	return in
}

// BenchmarkLoadTurn measures loading a turn with 20 messages of history
// from a store holding 100 sessions of 100 messages: the read every brain
// turn starts with. The turns are in the store's recent cache, so after
// each session's window is loaded once (the first 100 loads) it measures
// the cache.
func BenchmarkLoadTurn(b *testing.B) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(b.TempDir(), "sb.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var last []gateway.TurnRef
	for u := range 100 {
		for i := range 100 {
			in := visitorInbound(u, i)
			res, err := s.AppendInbound(ctx, in)
			if err != nil {
				b.Fatal(err)
			}
			if i == 99 {
				last = append(last, res.Turns...)
			}
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.LoadTurn(ctx, last[i%len(last)].ID, 20); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTurnCycle measures the store's share of one message through the
// pipeline, from 64 goroutines over 200 sessions: the inbound append, the
// turn's load, its completion with a one-post reply and the reply's
// delivery mark.
func BenchmarkTurnCycle(b *testing.B) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(b.TempDir(), "sb.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			u := i % 200
			in := visitorInbound(u, i)
			res, err := s.AppendInbound(ctx, in)
			if err != nil {
				b.Fatal(err)
			}
			d, err := s.LoadTurn(ctx, res.Turns[0].ID, 20)
			if err != nil {
				b.Fatal(err)
			}
			reply := gateway.Message{
				Platform: "web", ChatID: in.Event.ChatID, ChatType: gateway.ChatPrivate, Kind: gateway.KindChat,
				From: gateway.Party{Kind: "bot", ID: "matty", Name: "Matty"}, Bot: "matty", Text: "hi", Time: time.Now(),
			}
			done, err := s.CompleteTurn(ctx, gateway.Completion{Turn: d.Ref, Session: d.Session.ID,
				Posts: []gateway.Post{{Message: reply, Session: d.Session.ID}}})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.MarkSent(ctx, done.Outbox[0].OutboxID, ""); err != nil { // as the web reports it
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
}
