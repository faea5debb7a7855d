package gateway

import (
	"context"
	"sync"
	"time"
)

// A running turn shows the typing indicator once it has taken typingAfter
// (a brain that answers at once shows none: no flicker, no wasted frame)
// and refreshes it every typingEvery.
const (
	typingAfter = 250 * time.Millisecond
	typingEvery = 4 * time.Second
)

// startTyping shows bot typing in a chat of platform until the returned
// function is called.
func (g *Gateway) startTyping(platform, bot, chatID string) (stop func()) {
	p, ok := g.platform(platform)
	typer, can := p.(Typer)
	if !ok || !can {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		wait := time.NewTimer(typingAfter)
		defer wait.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-wait.C:
			}
			if err := typer.Typing(ctx, bot, chatID); err != nil && ctx.Err() == nil {
				g.log.Debug("typing indicator", "platform", platform, "err", err)
			}
			wait.Reset(typingEvery)
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
