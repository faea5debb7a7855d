package api

import (
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The metrics the health summary reads, the same that /metrics serves
// (SPEC §8 fixes the first four names).
const (
	metricEventsIn      = "switchboard_events_in_total"
	metricEventsOut     = "switchboard_events_out_total"
	metricBrainSeconds  = "switchboard_brain_seconds"
	metricQueueDepth    = "switchboard_session_queue_depth"
	metricOutboxPending = "switchboard_outbox_pending"
	metricStartTime     = "switchboard_start_time_seconds"
)

// Rates are over the last rateWindow, from samples of the counters taken
// at most every sampleEvery.
const (
	rateWindow  = time.Minute
	sampleEvery = 5 * time.Second
)

// healthJSON is GET /api/v1/health: a summary computed from the metrics
// registry at the time of the request.
type healthJSON struct {
	StartedAt     string `json:"started_at,omitempty"`
	UptimeSeconds int64  `json:"uptime_seconds"`
	// Messages per minute, over the last minute (since start when the
	// gateway has run for less).
	MessagesInPerMinute  float64 `json:"messages_in_per_minute"`
	MessagesOutPerMinute float64 `json:"messages_out_per_minute"`
	MessagesInTotal      int64   `json:"messages_in_total"`
	MessagesOutTotal     int64   `json:"messages_out_total"`
	// The gauges read from the store; null when it could not be read.
	SessionQueueDepth *int64            `json:"session_queue_depth"`
	OutboxPending     *int64            `json:"outbox_pending"`
	Brains            []brainHealthJSON `json:"brains"`
}

// brainHealthJSON is one bot's brain latency since start, estimated from
// the histogram's buckets as Prometheus's histogram_quantile does.
type brainHealthJSON struct {
	Bot        string  `json:"bot"`
	Kind       string  `json:"kind"`
	Turns      uint64  `json:"turns"`
	P50Seconds float64 `json:"p50_seconds"`
	P95Seconds float64 `json:"p95_seconds"`
	// FirstBucketSeconds is the histogram's finest bound: an estimate
	// at or below it only says "faster than this".
	FirstBucketSeconds float64 `json:"first_bucket_seconds"`
}

// health answers the summary the dashboard's health strip shows.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if s.Metrics == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "no metrics registry")
		return
	}
	families, err := s.Metrics.Gather()
	if err != nil && len(families) == 0 {
		s.internal(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.traffic.summarize(families, s.clock()))
}

// traffic keeps recent samples of the message counters, so that a rate
// over the last minute can be read from counters that only grow.
type traffic struct {
	mu      sync.Mutex
	samples []trafficSample // oldest first
}

type trafficSample struct {
	at      time.Time
	in, out float64
}

// summarize computes the health summary from gathered metrics at now.
func (t *traffic) summarize(families []*dto.MetricFamily, now time.Time) healthJSON {
	var h healthJSON
	var cur trafficSample
	cur.at = now
	var start time.Time
	for _, f := range families {
		switch f.GetName() {
		case metricEventsIn:
			cur.in = sumCounters(f)
		case metricEventsOut:
			cur.out = sumCounters(f)
		case metricQueueDepth:
			h.SessionQueueDepth = gaugeCount(f)
		case metricOutboxPending:
			h.OutboxPending = gaugeCount(f)
		case metricStartTime:
			if sec, ok := gaugeValue(f); ok && sec > 0 {
				start = time.Unix(0, int64(sec*1e9))
			}
		case metricBrainSeconds:
			h.Brains = brainLatencies(f)
		}
	}
	if h.Brains == nil {
		h.Brains = []brainHealthJSON{}
	}
	if !start.IsZero() {
		h.StartedAt = rfc3339(start)
		h.UptimeSeconds = int64(max(now.Sub(start), 0) / time.Second)
	}
	h.MessagesInTotal, h.MessagesOutTotal = int64(cur.in), int64(cur.out)
	h.MessagesInPerMinute, h.MessagesOutPerMinute = t.perMinute(cur, start)
	return h
}

// perMinute records cur and returns the messages in and out per minute
// over the last minute. The baseline is the newest sample at least a
// minute old; while there is none the gateway's start, when the counters
// were zero (every message since then is within the last minute), or
// else the oldest sample.
func (t *traffic) perMinute(cur trafficSample, start time.Time) (in, out float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cutoff := cur.at.Add(-rateWindow)
	var base trafficSample
	found := false
	for _, s := range t.samples {
		if !s.at.After(cutoff) {
			base, found = s, true
		}
	}
	switch {
	case found:
	case !start.IsZero():
		base = trafficSample{at: start}
	case len(t.samples) > 0:
		base = t.samples[0]
	default:
		base = cur
	}
	if n := len(t.samples); n == 0 || cur.at.Sub(t.samples[n-1].at) >= sampleEvery {
		t.samples = append(t.samples, cur)
	}
	// Keep one sample at or before the window's start, and those after.
	for len(t.samples) >= 2 && !t.samples[1].at.After(cutoff) {
		t.samples = t.samples[1:]
	}
	elapsed := cur.at.Sub(base.at)
	in, out = cur.in-base.in, cur.out-base.out
	if elapsed > rateWindow {
		scale := float64(rateWindow) / float64(elapsed)
		in, out = in*scale, out*scale
	}
	return round1(max(in, 0)), round1(max(out, 0))
}

// sumCounters adds the values of every series of a counter family.
func sumCounters(f *dto.MetricFamily) float64 {
	var sum float64
	for _, m := range f.GetMetric() {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

// gaugeValue is a one-series gauge's value; false when it has no single
// series or its value is not a number (NaN: a store read that failed).
func gaugeValue(f *dto.MetricFamily) (float64, bool) {
	ms := f.GetMetric()
	if len(ms) != 1 {
		return 0, false
	}
	v := ms[0].GetGauge().GetValue()
	return v, !math.IsNaN(v) && !math.IsInf(v, 0)
}

// gaugeCount is a gauge that counts things, nil when gaugeValue is not.
func gaugeCount(f *dto.MetricFamily) *int64 {
	v, ok := gaugeValue(f)
	if !ok {
		return nil
	}
	n := int64(math.Round(v))
	return &n
}

// brainLatencies are the p50 and p95 of each (bot, kind) series that has
// turns, sorted by bot and kind.
func brainLatencies(f *dto.MetricFamily) []brainHealthJSON {
	out := []brainHealthJSON{}
	for _, m := range f.GetMetric() {
		hist := m.GetHistogram()
		if hist.GetSampleCount() == 0 {
			continue
		}
		b := brainHealthJSON{Turns: hist.GetSampleCount()}
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "bot":
				b.Bot = l.GetValue()
			case "kind":
				b.Kind = l.GetValue()
			}
		}
		b.P50Seconds = quantile(0.5, hist)
		b.P95Seconds = quantile(0.95, hist)
		if bs := hist.GetBucket(); len(bs) > 0 {
			b.FirstBucketSeconds = bs[0].GetUpperBound()
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b brainHealthJSON) int {
		if c := strings.Compare(a.Bot, b.Bot); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return out
}

// quantile estimates the q-quantile of a histogram as Prometheus's
// histogram_quantile does: it finds the bucket that holds the rank and
// interpolates linearly within it (from 0 for the first bucket). A rank
// beyond the last finite bucket gives that bucket's upper bound.
func quantile(q float64, h *dto.Histogram) float64 {
	count := float64(h.GetSampleCount())
	if count == 0 {
		return 0
	}
	rank := q * count
	lower, below := 0.0, 0.0
	var last float64
	for _, b := range h.GetBucket() {
		upper, cum := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if math.IsInf(upper, +1) {
			break
		}
		last = upper
		if cum >= rank && cum > below {
			return lower + (upper-lower)*(rank-below)/(cum-below)
		}
		lower, below = upper, cum
	}
	return last
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
