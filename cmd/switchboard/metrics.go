package main

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
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
	}
	reg.MustRegister(o.brain)
	// The start time makes uptime readable from the metrics alone (no
	// process collector is registered).
	start := prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchboard_start_time_seconds", Help: "When the gateway started, in seconds since the Unix epoch."})
	start.Set(float64(time.Now().UnixNano()) / 1e9)
	reg.MustRegister(start)
	// A vector with no series is left out of the exposition altogether, so
	// the label values known in advance start at zero: every counter is
	// listed from the first scrape, and rate() sees its first increase.
	for _, p := range []string{gateway.PlatformWeb, gateway.PlatformTelegram, gateway.PlatformDiscord} {
		o.in.WithLabelValues(p)
		o.out.WithLabelValues(p)
		o.retries.WithLabelValues(p)
	}
	for _, s := range []string{delegation.StatusQueued, delegation.StatusRunning, delegation.StatusDone, delegation.StatusFailed, delegation.StatusRefused} {
		o.delegations.WithLabelValues(s)
	}
	return o
}

func (o *observer) EventIn(p string)         { o.in.WithLabelValues(p).Inc() }
func (o *observer) EventOut(p string)        { o.out.WithLabelValues(p).Inc() }
func (o *observer) Delegation(status string) { o.delegations.WithLabelValues(status).Inc() }
func (o *observer) OutboxRetry(p string)     { o.retries.WithLabelValues(p).Inc() }
func (o *observer) BrainTurn(bot, kind string, d time.Duration) {
	o.brain.WithLabelValues(bot, kind).Observe(d.Seconds())
}

// storeGaugeWait bounds the store read behind a gauge read at each
// scrape.
const storeGaugeWait = 2 * time.Second

// gauges adds the gauges read from the store at each scrape (NaN when
// it cannot be read): the session queue depth (the turns not yet
// answered) and the outbox's pending replies. It is called once per
// observer: a second call panics on the duplicates.
func (o *observer) gauges(queueDepth, outboxPending func(context.Context) (int, error)) {
	o.storeGauge("switchboard_session_queue_depth", "Turns queued or running.", queueDepth)
	o.storeGauge("switchboard_outbox_pending", "Replies stored and not yet delivered or given up.", outboxPending)
}

func (o *observer) storeGauge(name, help string, read func(context.Context) (int, error)) {
	o.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), storeGaugeWait)
		defer cancel()
		n, err := read(ctx)
		if err != nil {
			return math.NaN()
		}
		return float64(n)
	}))
}

// Gatherer is the registry behind /metrics, which the admin API's health
// summary reads too.
func (o *observer) Gatherer() prometheus.Gatherer { return o.reg }

// ServeHTTP serves /metrics in the format the scraper asks for (the text
// format when it asks for none).
func (o *observer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.handler.ServeHTTP(w, r)
}
