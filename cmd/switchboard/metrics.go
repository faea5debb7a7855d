package main

import (
	"net/http"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/metrics"
)

// observer turns gateway events into the Prometheus metrics of SPEC §8.
type observer struct {
	reg         *metrics.Registry
	in, out     *metrics.Counter
	brain       *metrics.Histogram
	delegations *metrics.Counter
	retries     *metrics.Counter
}

var _ gateway.Observer = (*observer)(nil)

func newObserver() *observer {
	r := metrics.New()
	return &observer{
		reg:         r,
		in:          r.NewCounter("switchboard_events_in_total", "Inbound messages stored, by platform.", "platform"),
		out:         r.NewCounter("switchboard_events_out_total", "Messages delivered, by platform.", "platform"),
		brain:       r.NewHistogram("switchboard_brain_seconds", "Time brains take for a turn.", metrics.DefaultBuckets, "bot", "kind"),
		delegations: r.NewCounter("switchboard_delegations_total", "Delegation status changes, by status.", "status"),
		retries:     r.NewCounter("switchboard_outbox_retries_total", "Deliveries retried, by platform.", "platform"),
	}
}

func (o *observer) EventIn(p string)         { o.in.Inc(p) }
func (o *observer) EventOut(p string)        { o.out.Inc(p) }
func (o *observer) Delegation(status string) { o.delegations.Inc(status) }
func (o *observer) OutboxRetry(p string)     { o.retries.Inc(p) }
func (o *observer) BrainTurn(bot, kind string, d time.Duration) {
	o.brain.Observe(d.Seconds(), bot, kind)
}

// gauge adds the session queue depth, read from the gateway.
func (o *observer) gauge(gw *gateway.Gateway) {
	o.reg.NewGaugeFunc("switchboard_session_queue_depth", "Turns queued or running.", func() float64 { return float64(gw.QueueDepth()) })
}

// ServeHTTP serves /metrics.
func (o *observer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	o.reg.WriteText(w)
}
