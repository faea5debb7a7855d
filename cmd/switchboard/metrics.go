package main

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/store"
)

// brainBuckets are the upper bounds of switchboard_brain_seconds, in
// seconds: brain turns take from a few milliseconds (a script) to minutes
// (a model working through a long task).
var brainBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// observer turns gateway events into the Prometheus metrics of SPEC §8. Its
// metrics live in a registry of their own, so /metrics serves exactly these
// and nothing a library registers globally (no Go runtime or process
// collectors).
type observer struct {
	reg         *prometheus.Registry
	handler     http.Handler
	in, out     *prometheus.CounterVec
	brain       *prometheus.HistogramVec
	delegations *prometheus.CounterVec
	retries     *prometheus.CounterVec
	turns       *prometheus.CounterVec
}

var _ gateway.Observer = (*observer)(nil)

func newObserver() *observer {
	reg := prometheus.NewRegistry()
	counter := func(name, help, label string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
		reg.MustRegister(c)
		return c
	}
	o := &observer{
		reg:     reg,
		handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		in:      counter("switchboard_events_in_total", "Inbound messages stored, by platform.", "platform"),
		out:     counter("switchboard_events_out_total", "Messages delivered, by platform.", "platform"),
		brain: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchboard_brain_seconds",
			Help:    "Time brains take for a turn.",
			Buckets: brainBuckets,
		}, []string{"bot", "kind"}),
		delegations: counter("switchboard_delegations_total", "Delegation status changes, by status.", "status"),
		retries:     counter("switchboard_outbox_retries_total", "Deliveries retried, by platform.", "platform"),
		turns:       counter("switchboard_turns_total", "Turns whose outcome is stored, by path: instant (answered before the message was stored, stored with it) or queued (stored first, then run by the session's worker).", "path"),
	}
	reg.MustRegister(o.brain)
	// A vector with no series is left out of the exposition altogether, so
	// the label values known in advance start at zero: every counter is
	// listed from the first scrape, and rate() sees its first increase.
	for _, p := range []string{gateway.PlatformWeb, gateway.PlatformTelegram, gateway.PlatformDiscord} {
		o.in.WithLabelValues(p)
		o.out.WithLabelValues(p)
		o.retries.WithLabelValues(p)
	}
	for _, s := range []string{gateway.StatusQueued, gateway.StatusRunning, gateway.StatusDone, gateway.StatusFailed, gateway.StatusRefused} {
		o.delegations.WithLabelValues(s)
	}
	for _, p := range []string{gateway.PathInstant, gateway.PathQueued} {
		o.turns.WithLabelValues(p)
	}
	return o
}

func (o *observer) EventIn(p string)         { o.in.WithLabelValues(p).Inc() }
func (o *observer) EventOut(p string)        { o.out.WithLabelValues(p).Inc() }
func (o *observer) Delegation(status string) { o.delegations.WithLabelValues(status).Inc() }
func (o *observer) OutboxRetry(p string)     { o.retries.WithLabelValues(p).Inc() }
func (o *observer) TurnDone(path string)     { o.turns.WithLabelValues(path).Inc() }
func (o *observer) BrainTurn(bot, kind string, d time.Duration) {
	o.brain.WithLabelValues(bot, kind).Observe(d.Seconds())
}

// gauge adds the session queue depth, read from the gateway at each scrape.
// It is called once per observer: a second call panics on the duplicate.
func (o *observer) gauge(gw *gateway.Gateway) {
	o.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "switchboard_session_queue_depth",
		Help: "Turns queued or running.",
	}, func() float64 { return float64(gw.QueueDepth()) }))
}

// writer adds the store's writer counts (store.WriterStats): how busy its
// one writer is, which is the store's limit under load. It is called once
// per observer, like gauge.
func (o *observer) writer(stats func() store.WriterStats) {
	o.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "switchboard_store_write_batches_total",
			Help: "Transactions the store's writer has committed (each a batch of writes).",
		}, func() float64 { return float64(stats().Batches) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "switchboard_store_writes_total",
			Help: "Writes the store's writer has committed.",
		}, func() float64 { return float64(stats().Writes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "switchboard_store_writer_busy_seconds_total",
			Help: "Time the store's writer has spent running batches; its rate is the writer's utilisation.",
		}, func() float64 { return stats().Busy.Seconds() }),
	)
}

// ServeHTTP serves /metrics in the format the scraper asks for (the text
// format when it asks for none).
func (o *observer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.handler.ServeHTTP(w, r)
}
