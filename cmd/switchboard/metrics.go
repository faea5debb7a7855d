package main

import (
	"net/http"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/metrics"
	"github.com/switchboard-chat/switchboard/store"
)

// observer turns gateway events into the Prometheus metrics of SPEC §8.
type observer struct {
	reg         *metrics.Registry
	in, out     *metrics.Counter
	brain       *metrics.Histogram
	delegations *metrics.Counter
	retries     *metrics.Counter
	turns       *metrics.Counter
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
		turns:       r.NewCounter("switchboard_turns_total", "Turns whose outcome is stored, by path: instant (answered before the message was stored, stored with it) or queued (stored first, then run by the session's worker).", "path"),
	}
}

func (o *observer) EventIn(p string)         { o.in.Inc(p) }
func (o *observer) EventOut(p string)        { o.out.Inc(p) }
func (o *observer) Delegation(status string) { o.delegations.Inc(status) }
func (o *observer) OutboxRetry(p string)     { o.retries.Inc(p) }
func (o *observer) TurnDone(path string)     { o.turns.Inc(path) }
func (o *observer) BrainTurn(bot, kind string, d time.Duration) {
	o.brain.Observe(d.Seconds(), bot, kind)
}

// gauge adds the session queue depth, read from the gateway.
func (o *observer) gauge(gw *gateway.Gateway) {
	o.reg.NewGaugeFunc("switchboard_session_queue_depth", "Turns queued or running.", func() float64 { return float64(gw.QueueDepth()) })
}

// writer adds the store's writer counts (store.WriterStats): how busy its
// one writer is, which is the store's limit under load.
func (o *observer) writer(stats func() store.WriterStats) {
	o.reg.NewCounterFunc("switchboard_store_write_batches_total", "Transactions the store's writer has committed (each a batch of writes).",
		func() float64 { return float64(stats().Batches) })
	o.reg.NewCounterFunc("switchboard_store_writes_total", "Writes the store's writer has committed.",
		func() float64 { return float64(stats().Writes) })
	o.reg.NewCounterFunc("switchboard_store_writer_busy_seconds_total", "Time the store's writer has spent running batches; its rate is the writer's utilisation.",
		func() float64 { return stats().Busy.Seconds() })
}

// ServeHTTP serves /metrics.
func (o *observer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	o.reg.WriteText(w)
}
