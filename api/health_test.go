package api

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// metricsFixture is a registry with the metrics the gateway registers
// (cmd/switchboard/metrics.go), which tests drive directly.
type metricsFixture struct {
	reg          *prometheus.Registry
	in, out      *prometheus.CounterVec
	brain        *prometheus.HistogramVec
	depth, start prometheus.Gauge
	pending      float64
}

func newMetricsFixture(start time.Time) *metricsFixture {
	m := &metricsFixture{reg: prometheus.NewRegistry()}
	m.in = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricEventsIn}, []string{"platform"})
	m.out = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricEventsOut}, []string{"platform"})
	m.brain = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: metricBrainSeconds, Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
	}, []string{"bot", "kind"})
	m.depth = prometheus.NewGauge(prometheus.GaugeOpts{Name: metricQueueDepth})
	m.start = prometheus.NewGauge(prometheus.GaugeOpts{Name: metricStartTime})
	m.start.Set(float64(start.Unix()))
	m.reg.MustRegister(m.in, m.out, m.brain, m.depth, m.start,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricOutboxPending}, func() float64 { return m.pending }))
	return m
}

// getHealth asks f's server for /api/v1/health with the bearer token.
func getHealth(t *testing.T, f *fixture) healthJSON {
	t.Helper()
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/api/v1/health", nil)
	r.Header.Set("Authorization", "Bearer "+testToken)
	f.h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("health: %d %s", w.Code, w.Body)
	}
	var h healthJSON
	if err := json.Unmarshal(w.Body.Bytes(), &h); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHealthSummary(t *testing.T) {
	f := newFixture(t)
	start := f.clock.Now()
	m := newMetricsFixture(start)
	f.s.Metrics = m.reg

	// Before any traffic: zeros, every field present.
	f.clock.advance(5 * time.Second)
	h := getHealth(t, f)
	if h.UptimeSeconds != 5 || h.StartedAt != rfc3339(start) || h.MessagesInPerMinute != 0 || len(h.Brains) != 0 {
		t.Errorf("idle health = %+v", h)
	}
	if h.SessionQueueDepth == nil || *h.SessionQueueDepth != 0 || h.OutboxPending == nil || *h.OutboxPending != 0 {
		t.Errorf("idle gauges = %v, %v", h.SessionQueueDepth, h.OutboxPending)
	}

	// Within the first minute every message counts.
	m.in.WithLabelValues("web").Add(3)
	m.in.WithLabelValues("telegram").Add(1)
	m.out.WithLabelValues("web").Add(2)
	m.depth.Set(2)
	m.pending = 5
	for range 9 {
		m.brain.WithLabelValues("finn", "script").Observe(0.003) // the first bucket
	}
	m.brain.WithLabelValues("finn", "script").Observe(0.3) // the 0.25–0.5 bucket
	m.brain.WithLabelValues("ada", "openai").Observe(7)    // beyond the last bucket
	f.clock.advance(10 * time.Second)
	h = getHealth(t, f)
	if h.MessagesInPerMinute != 4 || h.MessagesOutPerMinute != 2 || h.MessagesInTotal != 4 || h.MessagesOutTotal != 2 {
		t.Errorf("traffic = %+v", h)
	}
	if *h.SessionQueueDepth != 2 || *h.OutboxPending != 5 {
		t.Errorf("gauges = %d, %d", *h.SessionQueueDepth, *h.OutboxPending)
	}
	if len(h.Brains) != 2 || h.Brains[0].Bot != "ada" || h.Brains[1].Bot != "finn" {
		t.Fatalf("brains = %+v", h.Brains)
	}
	finn, ada := h.Brains[1], h.Brains[0]
	// p50: rank 5 of 10, all 9 in (0, 0.005]: 0.005 × 5/9. p95: rank 9.5,
	// in (0.25, 0.5] which holds the tenth: 0.25 + 0.25 × 0.5.
	if finn.Turns != 10 || finn.Kind != "script" || !near(finn.P50Seconds, 0.005*5/9) || !near(finn.P95Seconds, 0.375) || finn.FirstBucketSeconds != 0.005 {
		t.Errorf("finn = %+v", finn)
	}
	if ada.Turns != 1 || ada.P50Seconds != 5 || ada.P95Seconds != 5 {
		t.Errorf("ada = %+v; want the last finite bound", ada)
	}

	// Later, the rate is over the last minute: samples 10 s apart, 6
	// messages a minute in.
	for range 12 {
		f.clock.advance(10 * time.Second)
		m.in.WithLabelValues("web").Add(1)
		h = getHealth(t, f)
	}
	if h.MessagesInPerMinute != 6 || h.MessagesOutPerMinute != 0 || h.MessagesInTotal != 16 {
		t.Errorf("steady traffic = %+v, want 6 in and 0 out a minute", h)
	}
	if n := len(f.s.traffic.samples); n > int(rateWindow/sampleEvery)+2 {
		t.Errorf("%d samples kept", n)
	}

	// Left unread for five minutes, the rate is the average since the
	// last sample.
	f.clock.advance(5 * time.Minute)
	m.in.WithLabelValues("web").Add(10)
	if h = getHealth(t, f); h.MessagesInPerMinute != 2 {
		t.Errorf("after a gap: %v a minute, want 2 (10 in 5 minutes)", h.MessagesInPerMinute)
	}

	// A store that cannot be read shows as null.
	m.depth.Set(math.NaN())
	if h = getHealth(t, f); h.SessionQueueDepth != nil {
		t.Errorf("queue depth = %d, want null", *h.SessionQueueDepth)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestQuantile(t *testing.T) {
	hist := func(bounds []float64, cum []uint64, count uint64) *dto.Histogram {
		h := &dto.Histogram{SampleCount: &count}
		for i := range bounds {
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: &bounds[i], CumulativeCount: &cum[i]})
		}
		return h
	}
	inf := math.Inf(1)
	tests := []struct {
		name string
		q    float64
		h    *dto.Histogram
		want float64
	}{
		{"empty", 0.5, hist([]float64{1, 2}, []uint64{0, 0}, 0), 0},
		{"first bucket", 0.5, hist([]float64{1, 2}, []uint64{4, 4}, 4), 0.5},
		{"second bucket", 0.5, hist([]float64{1, 2}, []uint64{0, 2}, 2), 1.5},
		{"skips empty buckets", 0.5, hist([]float64{1, 2, 4}, []uint64{0, 0, 2}, 2), 3},
		{"beyond the last bucket", 0.95, hist([]float64{1, 2}, []uint64{1, 1}, 10), 2},
		{"explicit +Inf bucket", 0.95, hist([]float64{1, inf}, []uint64{1, 10}, 10), 1},
		{"upper edge", 1, hist([]float64{1, 2}, []uint64{1, 2}, 2), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := quantile(tt.q, tt.h); !near(got, tt.want) {
				t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestHealthWithoutMetrics(t *testing.T) {
	f := newFixture(t)
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/api/v1/health", nil)
	r.Header.Set("Authorization", "Bearer "+testToken)
	f.h.ServeHTTP(w, r)
	if w.Code != http.StatusServiceUnavailable || errorCode(t, w) != "unavailable" {
		t.Errorf("health without a registry: %d %s", w.Code, w.Body)
	}
}

// fakePlatforms is a fixed list of links.
type fakePlatforms []PlatformLink

func (p fakePlatforms) PlatformLinks() []PlatformLink { return p }

func TestPlatformsList(t *testing.T) {
	f := newFixture(t)
	since := f.clock.Now()
	f.s.Platforms = fakePlatforms{
		{Bot: "mattyatlas", Platform: "web", State: "connected", Since: since},
		{Bot: "mattyatlas", Platform: "telegram", State: "skipped", Reason: "MATTY_TELEGRAM_TOKEN is unset", Since: since},
		{Bot: "finnshipley", Platform: "discord", State: "failing", Reason: "the gateway refused the bot", Since: since},
	}
	for _, tt := range []struct {
		auth   string
		status int
	}{{"", 401}, {"Bearer nope", 401}, {"Bearer " + testToken, 200}} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/api/v1/platforms", nil)
		if tt.auth != "" {
			r.Header.Set("Authorization", tt.auth)
		}
		f.h.ServeHTTP(w, r)
		if w.Code != tt.status {
			t.Fatalf("%q: %d %s", tt.auth, w.Code, w.Body)
		}
		if tt.status != 200 {
			if errorCode(t, w) != "unauthorized" {
				t.Errorf("%q: body %s, want a JSON error", tt.auth, w.Body)
			}
			continue
		}
		var body struct{ Items []map[string]string }
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if len(body.Items) != 3 {
			t.Fatalf("items = %v", body.Items)
		}
		want := map[string]string{"bot": "mattyatlas", "platform": "telegram", "state": "skipped", "reason": "MATTY_TELEGRAM_TOKEN is unset", "since": rfc3339(since)}
		for k, v := range want {
			if body.Items[1][k] != v {
				t.Errorf("items[1].%s = %q, want %q", k, body.Items[1][k], v)
			}
		}
	}
}
