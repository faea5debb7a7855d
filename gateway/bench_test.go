package gateway_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
)

// BenchmarkPipeline measures messages through the whole core (store,
// dedupe, identity, gating, sessions, brain, outbox) with a trivial
// brain and a platform that accepts everything, over 100 sessions.
func BenchmarkPipeline(b *testing.B) {
	h := newHarness(b, bot("matty", echo))
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

// BenchmarkPipelineSessions is the load of `make bench`'s closed loop
// without the widget's sockets: 3,000 visitors, each waiting for the
// reply to its message and then 50 ms before the next. cpu-µs/msg is the
// process's CPU (the callers' small share included) per message, which
// is steadier than wall time on a shared machine.
func BenchmarkPipelineSessions(b *testing.B) {
	const sessions = 3000
	replies := make(map[string]chan struct{}, sessions)
	for s := range sessions {
		replies[gateway.PrivateChatID(fmt.Sprint("web-u", s), "matty")] = make(chan struct{}, 1)
	}
	h := &harness{t: b, path: filepath.Join(b.TempDir(), "sb.db"), plat: newRecorder("web"), platform: asyncPlatform(replies)}
	h.open(bot("matty", echo))
	before := cpuTime()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N/sessions + 1
	for s := range sessions {
		wg.Go(func() {
			user := fmt.Sprint("web-u", s)
			replied := replies[gateway.PrivateChatID(user, "matty")]
			for i := range per {
				ev := private(user, "matty", fmt.Sprint(i), "please have a look at the deploy notes, item "+fmt.Sprint(i))
				if _, err := h.gw.Deliver(b.Context(), ev); err != nil {
					b.Error(err)
					return
				}
				<-replied
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	n := float64(per * sessions)
	b.ReportMetric(n/b.Elapsed().Seconds(), "msg/s")
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/n, "cpu-µs/msg")
}

// cpuTime is the CPU the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// asyncPlatform is a web-like platform: it sends at once, with no
// platform message IDs, and tells the chat's channel.
type asyncPlatform map[string]chan struct{}

func (asyncPlatform) Name() string                                  { return "web" }
func (asyncPlatform) Run(ctx context.Context, _ gateway.Host) error { <-ctx.Done(); return nil }
func (p asyncPlatform) Send(ctx context.Context, m outbox.Entry) (string, error) {
	p[m.ChatID] <- struct{}{}
	return "", nil
}
