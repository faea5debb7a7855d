package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/store"
)

// BenchmarkLoadTurn measures loading a turn with 20 messages of history
// from a store holding 100 sessions of 100 messages: the read every brain
// turn starts with.
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
			in := inbound(fmt.Sprint(i), "hello there")
			in.Event.ChatID = fmt.Sprintf("web-u%d:matty", u)
			in.Event.Sender.PlatformID = fmt.Sprintf("web-u%d", u)
			in.Event.Time = time.Now()
			in.Turns[0].Session.ScopeID = fmt.Sprintf("user-%d", u)
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
