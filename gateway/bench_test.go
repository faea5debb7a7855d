package gateway_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
)

// BenchmarkPipeline measures messages through the whole core — store,
// dedupe, identity, gating, session queue, brain, outbox — with a trivial
// brain and a platform that accepts everything, over 100 sessions: with a
// brain that may not answer at once (stored: two commits per exchange),
// and with one that does (instant: one, once a session is cached).
func BenchmarkPipeline(b *testing.B) {
	b.Run("stored", func(b *testing.B) { pipeline(b, echo) })
	b.Run("instant", func(b *testing.B) { pipeline(b, instantFunc(echo)) })
}

func pipeline(b *testing.B, brain brains.Brain) {
	h := newHarness(b, bot("matty", brain))
	const sessions = 100
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N/sessions + 1
	for s := range sessions {
		wg.Go(func() {
			for i := range per {
				ev := private(fmt.Sprint("web-u", s), "matty", fmt.Sprint(i), "hello")
				if _, err := h.gw.Deliver(b.Context(), ev); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for range per * sessions {
		<-h.plat.ch
	}
	b.ReportMetric(float64(per*sessions)/b.Elapsed().Seconds(), "msg/s")
}
