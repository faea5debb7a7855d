package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// idleMemory opens n connections to s and returns the growth of its
// resident set per connection: VmRSS with the connections open (after a
// second to settle) minus VmRSS before, divided by n.
func idleMemory(ctx context.Context, s *server, n int, hello bool) (float64, error) {
	time.Sleep(300 * time.Millisecond)
	before, err := s.rss()
	if err != nil {
		return 0, err
	}
	conns, err := dialAll(ctx, s.addr, n, hello)
	if err != nil {
		return 0, err
	}
	defer closeAll(conns)
	time.Sleep(time.Second)
	after, err := s.rss()
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), nil
}

// delegationResult holds the medians of the direct and hand-off samples.
type delegationResult struct {
	direct, handoff time.Duration
	samples         int
}

// delegationOverhead measures, n times, a direct message to Finn (send →
// Finn's reply frame) and a hand-off through Matty ("tell finn to …" →
// Finn's reply frame), each sample as a new anonymous visitor (hand-offs
// have a per-user cooldown), alternating which goes first. The overhead is
// the difference of the medians.
func delegationOverhead(ctx context.Context, addr string, n int) (delegationResult, error) {
	var direct, handoff []time.Duration
	for i := range n {
		ws, _, err := dialOne(ctx, addr, true)
		if err != nil {
			return delegationResult{}, err
		}
		// measure sends text to bot and returns the time until Finn's
		// reply; then, when notice is set, it also waits for Matty's
		// "finished" notice, which may come before or after Finn's reply
		// (they are in different chats), so nothing stays pending.
		measure := func(bot, text string, notice bool) (time.Duration, error) {
			t0 := time.Now()
			if err := ws.WriteJSON(sendFrame{Type: "send", Bot: bot, Text: text, ClientID: text}); err != nil {
				return 0, err
			}
			var took time.Duration
			ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			defer ws.SetReadDeadline(time.Time{})
			for took == 0 || notice {
				var f inFrame
				if err := ws.ReadJSON(&f); err != nil {
					return 0, fmt.Errorf("%q: %w", text, err)
				}
				switch {
				case f.Type == "error":
					return 0, fmt.Errorf("%q: error frame %s: %s", text, f.Code, f.Message)
				case f.Type != "message" || f.From.Kind != "bot":
				case f.Bot == "finnshipley" && took == 0:
					took = time.Since(t0)
				case f.Bot == "mattyatlas" && strings.Contains(f.Text, "finished"):
					notice = false
				}
			}
			return took, nil
		}
		steps := []func() error{
			func() error {
				d, err := measure("finnshipley", fmt.Sprintf("direct question %d", i), false)
				direct = append(direct, d)
				return err
			},
			func() error {
				d, err := measure("mattyatlas", fmt.Sprintf("tell finn to build item %d", i), true)
				handoff = append(handoff, d)
				return err
			},
		}
		if i%2 == 1 {
			slices.Reverse(steps)
		}
		for _, step := range steps {
			if err := step(); err != nil {
				ws.Close()
				return delegationResult{}, fmt.Errorf("delegation sample %d: %w", i, err)
			}
		}
		ws.Close()
	}
	return delegationResult{direct: quantile(direct, 0.5), handoff: quantile(handoff, 0.5), samples: n}, nil
}

// startupTimes starts the gateway (each time on a new config directory
// and a new database, so migrations are included) and the echo server
// runs times each and returns the median time from exec to a 200 from
// /healthz.
func startupTimes(ctx context.Context, bin, parent string, runs int) (gateway, echo time.Duration, err error) {
	var gw, ec []time.Duration
	for range runs {
		s, err := startGateway(ctx, bin, parent, scriptBots)
		if err != nil {
			return 0, 0, err
		}
		gw = append(gw, s.ready)
		if err := s.stop(); err != nil {
			return 0, 0, err
		}
		e, err := startEcho(ctx, parent)
		if err != nil {
			return 0, 0, err
		}
		ec = append(ec, e.ready)
		e.stop()
	}
	return quantile(gw, 0.5), quantile(ec, 0.5), nil
}
